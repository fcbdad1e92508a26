"""Performance area (PF-*): transport bandwidth, latency and the pairwise matrix (docs/transport.md).

* `bench`    – nccl-tests-style sweeps, baselines and the round-robin pairwise matrix.
* `context`  – the area's check context, PerformanceCtx (the run's TransportContext per check).
* `fixtures` – the area's one fixture module: `performance_ctx`.
"""
