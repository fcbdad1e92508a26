"""The collective area: a vendor's `ray.util.collective` backend (a BaseGroup subclass registered
with register_collective_backend), checked against Ray's documented semantics.

The harness the checks run through (the block's config, op programs, the member actor, the run's
CollectiveContext) is core, shared with the workload area: conformance/collective/.

* `area`      – the area's declaration (conformance.areas.AREAS lists it).
* `contract`  – the BaseGroup contract Ray calls, read off the class (CC-001).
* `fixtures`  – the area's pytest fixtures (one module, one stash key).
* `hook_driver` – a second job whose worker_process_setup_hook registers the backend (CC-003).
* `report`    – the report's Collective section (markdown and the report.html block).
* `busbw`     – bus bandwidth by nccl-tests' definitions (CC-010).
* `star`      – CC-010's reference: the same op by a star over Ray's object store, run by the suite.
"""
