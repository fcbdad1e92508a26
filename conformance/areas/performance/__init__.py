"""Performance area (PF-*): transport bandwidth, latency and the pairwise matrix (docs/transport.md).

* `bench` – nccl-tests-style sweeps, baselines and the round-robin pairwise matrix.
"""
