"""Transport and performance areas: certifying a vendor's Ray Direct Transport (RDT).

Modules, one job each (docs/transport.md explains the method):

* `config`       – what the manifest says about the transport, and the size knob.
* `tracing`      – the instrumenting wrapper registered in place of the vendor's manager.
* `registration` – registers the (wrapped) transport once per process, before any endpoint exists.
* `payloads`     – deterministic test payloads (dtypes, shapes, views, containers) and byte digests.
* `endpoint`     – the actor the checks move tensors between (importable by workers).
* `pool`         – starting, health-checking and stopping endpoints (+ collective groups).
* `context`      – what a check module works with: the transport, its endpoints, bounded transfers.
* `fixtures`     – the pytest fixtures of the transport/performance check modules.
* `lifecycle`    – reading the wrapper's records across processes; waiting for frees.
* `memory`       – memory probes for the leak check (process RSS, host shared memory, device).
* `tables`       – markdown tables for report.md and `ray-conformance bench-transport`.
* `stalls`       – where a stalled transfer stopped (the evidence a hang's reason carries).
* `usage`        – the usage checks' context (TR-015..020): refs passed the ways users pass them.
* `usage_actors` – the actors those checks run (importable by workers).
* `area`         – the transport area's declaration (conformance.areas.AREAS).

The performance area's sweeps live in conformance/areas/performance/.
"""
