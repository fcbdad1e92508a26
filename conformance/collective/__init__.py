"""The collective harness: how every check that runs the vendor's `ray.util.collective` backend runs it.

The collective area (CC-*) and the workload area (WL-002's data-parallel steps, WL-001's broadcast
rounds) both go through it, and it imports neither (it is core: it may import run/, timing/ and the
base). Modules, one job each (docs/collective.md explains the method):

* `config`   – the manifest's `collective:` block.
* `programs` – op programs and the results each rank must hold (pure).
* `members`  – the member actor and the backend registration it runs (importable by workers, and
               by a worker_process_setup_hook).
* `context`  – the run's CollectiveContext (member pool, Ray's three group-creation paths, bounded
               waits) and CollectiveCtx, the check context holding it.
* `harness`  – how a check's context gets the block and the run's CollectiveContext (n/a without a
               block; built once; closed when the module and the session end): the collective and
               workload areas' `opens` both call it, neither reaches the other.
* `report`   – the report's Collective section (its data and markdown; the area draws its html).
"""
