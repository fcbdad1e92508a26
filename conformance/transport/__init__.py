"""Transport and performance areas: certifying a vendor's Ray Direct Transport (RDT).

Modules, one job each:

* `config`      – what the manifest says about the transport, and the size parameter.
* `tracing`     – the instrumenting wrapper registered in place of the vendor's manager.
* `registration`– registers the (wrapped) transport once per process, before any actor exists.
* `payloads`    – deterministic test payloads (dtypes, shapes, views, containers) and digests.
* `endpoint`    – the actor the checks run transfers between (importable by workers).
* `pool`        – creating, health-checking and tearing down endpoint actors (+ collective groups).
* `memory`      – memory probes for the leak check (process RSS, host shared memory, device).
* `bench`       – nccl-tests-style sweeps, baselines and the round-robin pairwise matrix.
* `tables`      – markdown tables for report.md and the bench-transport command.
"""
