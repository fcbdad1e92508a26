"""The collective area: a vendor's `ray.util.collective` backend (a BaseGroup subclass registered
with register_collective_backend), checked against Ray's documented semantics.

* `area`      – the area's declaration (conformance.areas.AREAS lists it).
* `config`    – the manifest's `collective:` block.
* `contract`  – the BaseGroup contract Ray calls, read off the class (CC-001).
* `programs`  – op programs and the results each rank must hold (pure).
* `members`   – the member actor and the backend registration it runs.
* `context`   – the member pool, the three group-creation paths, bounded waits.
* `fixtures`  – the area's pytest fixtures (one module, one stash key).
* `hook_driver` – a second job whose worker_process_setup_hook registers the backend (CC-003).
* `report`    – the report's Collective section (markdown and the report.html block).
"""
