"""Ray 2.60 builds a process's RDT manager on first use, without a lock: the suite's actors build it
in their constructor, before two threads can race to.

`Worker.rdt_manager` (ray/_private/worker.py:517-525) is a property that does
`if self._rdt_manager is None: self._rdt_manager = RDTManager()`; only the RDT store inside one
manager is guarded (`RDTManager._init_lock`, rdt_manager.py:208-215 and 252-261). In a receiver the
first two users of the manager run on two threads at once: `__ray_recv__` on the `_ray_system`
concurrency group (rdt_store.py:82, `global_worker.rdt_manager.rdt_store`) and the deserialization
of the first task's RDT argument on the task's thread (worker.py:952, `self.rdt_manager.get_rdt_objects`;
for an asyncio actor, its event loop). When both find no manager, each builds its own: the
receive adds the tensors to one RDT store, the argument waits in the other
(`RDTStore.wait_and_pop_object`, rdt_store.py:293-323) until Ray's RDT fetch timeout (60 s), and
an asyncio actor runs none of its other tasks meanwhile. TR-019 failed so on a correct transport,
once in about three runs of a loaded host: one receiver's 50 transfers all received by the
transport, none of its tasks finished. Reproduced with TR-019's wave alone (4 asyncio actors, 100
transfers, a 1 us GIL switch interval in the actors): 2 rounds of 10 stalled so, the receiver's
default loop in `_wait_object`, its process holding two RDT managers (the current store holding
all 50 objects) or one (the receive's store already dropped, 49 held); settled, none of 4 rounds.

Nothing a transport does makes or avoids this, and it is not what any check is about, so the
suite's actors take the racy step out of the race: `settle` builds the manager and its store once,
in the actor's constructor, which runs alone before any concurrency group starts. A user's actor
can meet the race; the suite's checks judge the transport, not it.
"""
from __future__ import annotations

from typing import Any


def settle(worker: Any = None) -> Any:
    """The process's RDT store, the manager and store built now if they were not (`worker`: Ray's
    Worker; default this process's `global_worker`). Call it from an RDT actor's constructor."""
    if worker is None:
        from ray._private.worker import global_worker as worker
    return worker.rdt_manager.rdt_store
