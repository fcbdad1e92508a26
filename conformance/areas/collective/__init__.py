"""The collective area: a vendor's `ray.util.collective` backend (a BaseGroup subclass registered
with register_collective_backend), checked against Ray's documented semantics.

* `config`    – the manifest's `collective:` block.
* `programs`  – op programs and the results each rank must hold (pure).
* `members`   – the member actor and the backend registration it runs.
* `context`   – the member pool, the three group-creation paths, bounded waits.
* `fixtures`  – the area's pytest fixtures (one module, one stash key).
* `report`    – the report's Collective section.
* `bench`     – allreduce/broadcast bus bandwidth (nccl-tests definitions).
"""
