"""Performance checks (PF-*): transport bandwidth, latency and the pairwise matrix."""
