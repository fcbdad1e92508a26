"""Deliberately broken collective backends: the teeth of the collective checks (CC-*).

Each class is the reference SIMCOLL backend with one or more real-world defects. Where defects
do not disturb each other's checks, one class carries several, each caught by a different
check for its own named reason (tests/teeth.yaml says which phrase).
"""
from __future__ import annotations

import time
from typing import Any, List

from ray.util.collective.backend_registry import register_collective_backend

from conformance.simulated.collective import SimCollGroup, _from_bytes, _reduce, _timeout_s, _to_bytes, _torch
from conformance.simulated.collective_rdt import SimCollTensorTransport


class ExtraInitArg(SimCollGroup):
    """Wants a timeout in its constructor: Ray passes only (world_size, rank, group_name). CC-001."""

    def __init__(self, world_size: int, rank: int, group_name: str, timeout_ms: int) -> None:
        super().__init__(world_size, rank, group_name)


class AlwaysAvailableKeepsBuffersRecvCopy(SimCollGroup):
    """Three defects:

    * says it is available on a host without the vendor library or device (CC-002);
    * keeps a staging copy of every allreduce's input in a process-wide pool that destroy_group
      never empties, as a backend caching its communicators' buffers would (CC-008: "still holds");
    * recv fills a tensor of its own instead of the caller's, so what RDT hands the receiver
      (the buffer it passed to recv) never gets the bytes (CC-011: "arrived wrong").
    """

    _staging: list = []

    @classmethod
    def check_backend_availability(cls) -> bool:
        return True

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        type(self)._staging.append(_torch(tensors[0]).clone())
        super().allreduce(tensors, allreduce_options)

    def recv(self, tensors: List[Any], recv_options: Any) -> None:
        super().recv([_torch(tensors[0]).clone()], recv_options)


class AlwaysHasTransport(SimCollTensorTransport):
    """An RDT transport over the backend that tells Ray every actor has it, group or not: a
    transfer between actors in no group is accepted, and the receiver waits for a send that
    never comes (CC-012: "got no error within")."""

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        return True


def register_not_idempotent() -> None:
    """A vendor helper that registers unconditionally: the second call raises ValueError. CC-003."""
    register_collective_backend("SIMCOLL", AlwaysAvailableKeepsBuffersRecvCopy)


class RootZeroSharedSeqCachedSlow(SimCollGroup):
    """Four defects:

    * reduce and broadcast always use rank 0 as the root (CC-004: "root");
    * point-to-point messages take their numbers from the collective op counter, on the two
      ranks of the message only, so the other ranks' next collective no longer matches
      (CC-005: "TimeoutError");
    * one group object per name, cached at class level and never evicted by destroy_group, so
      a group re-created under the same name keeps the old rank (CC-008: "reports rank");
    * every collective also pays CPU for its bytes at 4 MB/s, as a backend that encodes each op
      for a control channel in Python would (CC-010: "object store"). The row times small sizes
      only. CPU, not a sleep: CC-010's bar is the same op by a star over the object store in the
      same run, which slows with a loaded host (FixedDelayKeepsRendezvous says what a sleep did
      against the bar before it).
    """

    SLOW_BYTES_PER_S = 4e6

    def _exchange(self, data: bytes, what: str, options: Any) -> List[bytes]:
        done = time.process_time() + len(data) / self.SLOW_BYTES_PER_S
        while time.process_time() < done:   # busy: the CPU a per-byte step in Python costs
            pass
        return super()._exchange(data, what, options)

    _cache: dict = {}

    def __new__(cls, world_size: int, rank: int, group_name: str) -> "RootZeroSharedSeqCachedSlow":
        if group_name in cls._cache:
            return cls._cache[group_name]
        obj = super().__new__(cls)
        return obj

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        if group_name in type(self)._cache:
            return
        super().__init__(world_size, rank, group_name)
        type(self)._cache[group_name] = self

    def reduce(self, tensors: List[Any], reduce_options: Any = None) -> None:
        t = _torch(tensors[0])
        parts = self._exchange(_to_bytes(t), "reduce", reduce_options)
        if self.rank == 0:
            t.copy_(_reduce(reduce_options.reduceOp, [_from_bytes(p, t) for p in parts]))

    def broadcast(self, tensors: List[Any], broadcast_options: Any = None) -> None:
        t = _torch(tensors[0])
        parts = self._exchange(_to_bytes(t) if self.rank == 0 else b"", "broadcast", broadcast_options)
        if self.rank != 0:
            t.copy_(_from_bytes(parts[0], t))

    def send(self, tensors: List[Any], send_options: Any) -> None:
        self._seq += 1
        super().send(tensors, send_options)

    def recv(self, tensors: List[Any], recv_options: Any) -> None:
        self._seq += 1
        super().recv(tensors, recv_options)

    def destroy_group(self) -> None:
        pass


class _StarRendezvous:
    """RendezvousStar's one actor per group: an async actor where every member's op k meets the
    others' (each call waits inside it until the group's last part of op k has come)."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.rounds: dict[int, dict[str, Any]] = {}

    async def meet(self, k: int, rank: int, op: str, root: int, reduce_op: str, part: List[Any]) -> List[Any]:
        import asyncio

        r = self.rounds.setdefault(k, {"parts": {}, "done": asyncio.Event(), "out": [], "left": 0})
        r["parts"][rank] = part
        if len(r["parts"]) == self.world_size:
            r["out"] = await self._result(op, root, reduce_op, r["parts"])
            r["done"].set()
        else:
            await r["done"].wait()
        r["left"] += 1
        if r["left"] == self.world_size:
            del self.rounds[k]
        return r["out"]

    async def _result(self, op: str, root: int, reduce_op: str, parts: dict[int, List[Any]]) -> List[Any]:
        import asyncio

        import numpy as np
        import ray

        if op == "broadcast":
            return parts[root]
        arrays = await asyncio.gather(*[parts[rank][0] for rank in sorted(parts)])
        combine = {"SUM": np.add, "PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum}[reduce_op]
        acc = arrays[0].copy()
        for a in arrays[1:]:
            combine(acc, a, out=acc)
        return [ray.put(acc)]


class RendezvousStar(SimCollGroup):
    """A correct backend (no defect) of the star design: every allreduce and broadcast of a host
    tensor goes through one rendezvous actor per group (the simplest correct design, and a
    plausible CPU fallback): each member puts its part in Ray's object store, the actor gets the
    parts, reduces them and puts the result once (or passes the root's part on), and each member
    gets the result zero-copy (ray.get of a numpy array maps the store's pages) and copies it into
    its tensor, in place. Every wait is bounded; rank 0's destroy_group kills the actor and waits
    until its name is free, so a group re-created under the same name starts a new one. Other ops,
    and dtypes numpy has no type for, go SIMCOLL's way.

    CC-010 must pass (its reference is the same op by a star over the object store, not one
    put/get of the same bytes, which an allreduce through a star cannot reach), and CC-008 too:
    the store's pages a zero-copy ray.get touched stay in a member's resident total after the
    object is gone, and they are Ray's (good/collective-rendezvous-star)."""

    HUB_RANK = 0   # the rank that starts the rendezvous actor, on its own node
    HUB_START_S = 900.0   # how long the backend waits for its rendezvous actor to start (Ray's machinery)

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        import ray

        super().__init__(world_size, rank, group_name)
        self._name, self._k, self._hub_ready = f"star-{group_name}", 0, False
        if rank == self.HUB_RANK:    # on its own node; the others look it up by name, bounded
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = ray.get_runtime_context().get_node_id()
            self._hub = ray.remote(num_cpus=0)(_StarRendezvous).options(
                name=self._name, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True)).remote(world_size)
            return
        deadline = time.monotonic() + _timeout_s(None)
        while True:
            try:
                self._hub = ray.get_actor(self._name)
                return
            except ValueError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"RendezvousStar: no rendezvous actor {self._name!r} from rank "
                                       f"{self.HUB_RANK} within {_timeout_s(None):.1f}s") from None
                time.sleep(0.01)

    def _star(self, t: Any, op: str, root: int, reduce_op: str, options: Any) -> bool:
        """The op through the rendezvous; False when the tensor is not a host tensor numpy holds."""
        import numpy as np
        import ray
        import torch

        if t.device.type != "cpu" or t.dtype == torch.bfloat16:
            return False
        if not self._hub_ready:
            # the rendezvous actor's start is Ray's (a worker start, this module's imports): waited
            # for apart from the op's own timeout, as long as Ray may take on a loaded host (the
            # suite grants Ray's births up to ACTOR_START_S stretched x6 and a fresh sample); a
            # backend that held its rendezvous' start to its op timeout failed its first op on a
            # loaded host (make test s26b: 10 s, declarative path)
            ray.get(self._hub.__ray_ready__.remote(), timeout=self.HUB_START_S)
            self._hub_ready = True
        k, self._k = self._k, self._k + 1
        mine = t.numpy()
        part = [ray.put(mine)] if op == "allreduce" or self.rank == root else []
        out = ray.get(self._hub.meet.remote(k, self.rank, op, root, reduce_op, part), timeout=_timeout_s(options))
        if op == "allreduce" or self.rank != root:
            got = ray.get(out[0], timeout=_timeout_s(options))
            assert isinstance(got, np.ndarray)
            np.copyto(mine, got.reshape(mine.shape))
            del got
        return True

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        op = getattr(allreduce_options.reduceOp, "name", str(allreduce_options.reduceOp))
        if not self._star(_torch(tensors[0]), "allreduce", 0, op, allreduce_options):
            super().allreduce(tensors, allreduce_options)

    def broadcast(self, tensors: List[Any], broadcast_options: Any = None) -> None:
        if not self._star(_torch(tensors[0]), "broadcast", broadcast_options.root_rank, "", broadcast_options):
            super().broadcast(tensors, broadcast_options)

    def destroy_group(self) -> None:
        super().destroy_group()
        if self.rank != self.HUB_RANK:
            return
        import ray

        ray.kill(self._hub)
        deadline = time.monotonic() + _timeout_s(None)
        while time.monotonic() < deadline:
            try:
                ray.get_actor(self._name)
            except ValueError:
                return
            time.sleep(0.05)


class _Rendezvous:
    """The detached actor FixedDelayKeepsRendezvous's rank 0 starts per group (a store ranks meet at)."""

    def ping(self) -> bool:
        return True


class FixedDelayKeepsRendezvous(SimCollGroup):
    """Two defects:

    * rank 0 starts a detached rendezvous actor per group (named rendezvous-<group>) and
      destroy_group never kills it, as a backend whose store outlives its groups (CC-008: "left
      behind after destroy_collective_group");
    * every allreduce and broadcast spends DELAY_S_PER_MIB of CPU per MiB of its tensor, as a
      backend that checksums or re-stages every chunk in Python would (CC-010: "object store").
      CPU, not a sleep: CC-010 holds the backend to the same op by a star over Ray's object store
      in the same run, and on a loaded host the store's copies slow down with the host while a
      sleep does not, so a sleeping twin came within the bar before it, one put/get of the same
      bytes (make test at load 6.5: the store measured 0.076 GB/s, the 40 ms/MiB sleep 32 % of it,
      CC-010 passed). A cost in CPU slows with them (3.6 % of the star at load 12).
    """

    DELAY_S_PER_MIB = 0.04

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        super().__init__(world_size, rank, group_name)
        if rank == 0:
            import ray

            actor = ray.remote(num_cpus=0)(_Rendezvous).options(
                name=f"rendezvous-{group_name}", lifetime="detached", get_if_exists=True).remote()
            ray.get(actor.ping.remote(), timeout=60)

    def _delay(self, tensors: List[Any]) -> None:
        t = _torch(tensors[0])
        done = time.process_time() + self.DELAY_S_PER_MIB * t.numel() * t.element_size() / 2**20
        while time.process_time() < done:   # busy: the CPU a per-chunk step in Python costs
            pass

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        self._delay(tensors)
        super().allreduce(tensors, allreduce_options)

    def broadcast(self, tensors: List[Any], broadcast_options: Any = None) -> None:
        self._delay(tensors)
        super().broadcast(tensors, broadcast_options)


class WrongSizeSharedCommNoTimeout(SimCollGroup):
    """Three defects:

    * its world_size property (what get_collective_group_size reports) counts one rank too
      many (CC-006: "size");
    * one communicator per world size: groups of the same size share their files, so two
      groups driven at once read each other's data (CC-007: "groups over the same actors, driven at once");
    * it waits for a missing peer forever: survivors of a death hang (CC-009: "still waits").
    """

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        # shared by every group of this size in one Ray session (not across sessions: a run's
        # leftovers must not reach the next run on the same machine)
        super().__init__(world_size, rank, f"size-{world_size}-{_session()}")
        self._true_size = world_size

    @property
    def world_size(self) -> int:
        return self._true_size + 1

    def _exchange(self, data: bytes, what: str, options: Any) -> List[bytes]:
        size = self._true_size
        k = self._seq
        self._seq += 1
        self._write(f"c{k}.r{self.rank}", data)
        parts = self._wait([f"c{k}.r{r}" for r in range(size)], what, options)
        if k > 0:
            (self._dir / f"c{k - 1}.r{self.rank}").unlink(missing_ok=True)
        return parts

    def _wait(self, names: List[str], what: str, options: Any) -> List[bytes]:
        paths = [self._dir / n for n in names]
        while not all(p.exists() for p in paths):
            time.sleep(0.01)
        return [p.read_bytes() for p in paths]


def _session() -> str:
    """The Ray session this worker belongs to (its session folder's name)."""
    import os

    import ray

    node = ray._private.worker.global_worker.node
    return os.path.basename(node.get_session_dir_path()) if node is not None else "none"


class ReducesOnHostCopy(SimCollGroup):
    """CC-004 on a device: allreduce reduces into a host copy of the caller's tensor and never
    writes the device tensor back (a backend that stages through the host and forgets the copy
    home). On host tensors `.to("cpu")` is the tensor itself, so only a device shows it."""

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        super().allreduce([_torch(tensors[0]).to("cpu")], allreduce_options)


class ScattersOnRayDeviceId(SimCollGroup):
    """CC-004 on a device (each rank's result in place, on the member's current device):
    reducescatter writes the right chunk into the caller's tensor, then rebinds the tensor onto
    the device index Ray's accelerator id names (`get_accelerator_ids()`), as a backend that
    stages results on "its" device by the id Ray gave the actor would. That id is the node's; the
    process's index is not: Ray's visible-devices remap makes the member's one device index 0.

    Only a device shows it, and only on a member given a device other than its node's first:
    host tensors have no index, and id 0 is index 0 (on simcoll-device, rank 2 of CC-004's world
    size 3: Ray ids 0, 0, 1). Staging on index 0 instead would show nowhere there (every member's
    current device is index 0). On real hardware index 1 of a one-device process raises (invalid
    device ordinal); simacc makes the tensor there, so the check's placement judge names it."""

    def reducescatter(self, tensors: List[Any], tensor_lists: List[List[Any]],
                      reducescatter_options: Any = None) -> None:
        super().reducescatter(tensors, tensor_lists, reducescatter_options)
        out = _torch(tensors[0])
        if out.device.type != "cpu":
            out.data = out.to(_ray_device(out.device.type))


def _ray_device(device_type: str) -> Any:
    """The device of `device_type` indexed by the first accelerator id Ray gave this actor."""
    import ray
    import torch

    ids = [i for got in ray.get_runtime_context().get_accelerator_ids().values() for i in got]
    return torch.device(device_type, int(ids[0])) if ids else torch.device(device_type)


class ReducesOnHostCopyScattersOnRayDeviceId(ReducesOnHostCopy, ScattersOnRayDeviceId):
    """ReducesOnHostCopy's allreduce (CC-004: "not written in place") and ScattersOnRayDeviceId's
    reducescatter (CC-004: "not on the member's current") in one row: each defect lives in its own
    op's steps, so CC-004 meets both, each on its own (its reason names each broken op first).
    CC-005 interleaves allreduce, broadcast and send/recv only: it meets the first alone."""


class ReducesInOwnOrder(SimCollGroup):
    """WL-002: every rank folds the allreduce's parts starting from its own (rank r sums
    r, r+1, ..., r-1), as a backend whose ranks each reduce the chunks in arrival order would.
    Every op of the collective checks still gives the right result (their small integers add
    exactly in any order); with real gradients each rank holds a slightly different sum, float
    addition being non-associative, and data-parallel replicas drift apart."""

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        t = _torch(tensors[0])
        parts = self._exchange(_to_bytes(t), "allreduce", allreduce_options)
        mine_first = parts[self.rank:] + parts[:self.rank]
        t.copy_(_reduce(allreduce_options.reduceOp, [_from_bytes(p, t) for p in mine_first]))


class BarrierOnce(SimCollGroup):
    """CC-004: a barrier whose arrivals never reset. Each rank marks its arrival with a file of the
    same name every time and waits until every rank's mark exists: the group's first barrier holds
    every rank until all have entered, and from the second on every mark is already there, so each
    rank returns at once (as a barrier counting arrivals in a counter it never resets would).
    CC-004: "left the barrier before rank"."""

    def barrier(self, barrier_options: Any = None) -> None:
        self._write(f"barrier.r{self.rank}", b"")
        self._wait([f"barrier.r{r}" for r in range(self.world_size)], "barrier", barrier_options)


class FixedDelayKeepsRendezvousOwnOrderBarrierOnce(FixedDelayKeepsRendezvous, ReducesInOwnOrder, BarrierOnce):
    """FixedDelayKeepsRendezvous's two defects (CC-008, CC-010), ReducesInOwnOrder's (WL-002) and
    BarrierOnce's (CC-004) in one row: the reduction order changes no CC result (their integers
    add exactly), the delay and the leftover actor change no sum, the tensors of CC-004 are 16
    bytes (the delay is nothing there), and a barrier that holds only once changes no value (CC-010
    times batches of ops between two barriers, each op synchronising the group; WL-002 calls none),
    so each check sees its own defect alone."""


class StaleRegisteredBroadcast(SimCollGroup):
    """WL-001's broadcast rounds: a receive buffer is registered the first time a broadcast lands
    in it (as a backend pins and maps a caller's buffer once), and every later broadcast into the
    same buffer is served from the registration's staging copy before that copy is refreshed: the
    first broadcast into a buffer is right, each later one hands over the previous one's bytes.

    Every collective check judges a broadcast on a tensor it broadcasts into once, so each sees a
    correct op; an inference worker that keeps its weight buffers from round to round (as a
    serving engine does) holds round k-1's weights in round k."""

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        super().__init__(world_size, rank, group_name)
        self._registered: dict[int, tuple[Any, bytes]] = {}   # id(buffer) -> (weakref to it, staging copy)

    def broadcast(self, tensors: List[Any], broadcast_options: Any = None) -> None:
        import weakref

        buffer, root = tensors[0], broadcast_options.root_rank
        super().broadcast(tensors, broadcast_options)
        if self.rank == root:
            return
        t = _torch(buffer)
        fresh = _to_bytes(t)
        ref, staged = self._registered.get(id(buffer), (None, b""))
        if ref is not None and ref() is buffer:
            t.copy_(_from_bytes(staged, t))
        self._registered[id(buffer)] = (weakref.ref(buffer), fresh)


class SlowerCollective(SimCollGroup):
    """diff (issue 44): the reference backend made 30 % slower, correct in every other way, as a
    release whose copy path got slower would be: every allreduce and broadcast does, after its own
    work, 0.3 x the CPU time that work took, more CPU work (a busy loop), never a sleep. A sleep
    was no slower on the real path: on a 2-core host running three ranks, a sleeping rank hands
    its core to the others, and the twin's busbw read within 5 % of the reference's (CC-010 alone on
    the SIMCOLL manifest, load 6-11, 2026-12-05). Every check passes; `diff` against the reference
    backend names CC-010 (its busbw as a fraction of the same run's host copy, docs/ci.md)."""

    SLOWER = 0.3

    def _slower(self, op: Any, tensors: List[Any], options: Any) -> None:
        t0 = time.thread_time()
        op(tensors, options)
        until = time.thread_time() + self.SLOWER * (time.thread_time() - t0)
        while time.thread_time() < until:
            pass

    def allreduce(self, tensors: List[Any], allreduce_options: Any = None) -> None:
        self._slower(super().allreduce, tensors, allreduce_options)

    def broadcast(self, tensors: List[Any], broadcast_options: Any = None) -> None:
        self._slower(super().broadcast, tensors, broadcast_options)
