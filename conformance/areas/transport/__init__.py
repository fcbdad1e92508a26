"""Transport area (TR-*): certifying a vendor's Ray Direct Transport (RDT).

The moving itself (registration, endpoints, payloads, bounded transfers) is the RDT harness's,
in conformance/rdt/, which the performance and recovery areas share. What is the area's own:

* `context`      – the area's check context, TransportCtx (the run's TransportContext per check).
* `fixtures`     – the area's one fixture module: `transport_ctx`.
* `lifecycle`    – reading the wrapper's records across processes; waiting for frees.
* `usage`        – the usage checks' context, UsageCtx (TR-015..020): refs passed the ways users pass them.
* `usage_actors` – the actors those checks run (subclasses of the harness's endpoint; importable by workers).
* `area`         – the transport area's declaration (conformance.areas.AREAS).

The performance area's sweeps live in conformance/areas/performance/.
"""
