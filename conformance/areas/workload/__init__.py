"""The workload area: what users run on the accelerator, the vendor's plug-ins working together
under a real workload's shape (many tensors of mixed dtypes per object, several receivers across
nodes, many rounds), checked from what the workload must guarantee.

* `area`     – the area's declaration (conformance.areas.AREAS lists it).
* `model`    – a model-shaped state: its layout, built on a device, rewritten in place per round (pure).
* `actors`   – the trainer / inference actor (an RDT endpoint that keeps what it received).
* `sync`     – the RL weight-sync scenario: rounds, digests, memory, the object-store baseline.
* `pipeline`, `stages` – the pipeline scenario (WL-003): the stages' exact computation and figures
  (pure), the stage actors and waves on a live cluster.
* `lost_worker` – the weight sync with an inference actor killed mid-round (WL-004).
* `report_pipeline` – report.html's Workload block: WL-001's charts, then WL-003's and WL-004's.
* `context`  – the check's context (`WorkloadCtx`).
* `fixtures` – the area's one fixture module (`workload_ctx`).
"""
