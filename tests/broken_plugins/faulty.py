"""Fault-injected variants of the simulated accelerator and of the reference transport, for the
recovery checks (FR-*). Each breaks recovery the way real plugins do, and only recovery:
before any failure they behave exactly like the reference, so the failing check is the one
whose failure scenario triggers the fault. tests/teeth.yaml runs the recovery
checks against each and asserts the intended check fails and the others still pass.

Faults are driven by the environment (the variant's manifest `accelerator.env`, or the test
that runs it): FAULTY_STATE_DIR is where host-level state lives (default: a folder under the
temp dir), and the node shape's RAY_CONFORMANCE_NODE_NAME names a simulated host.

Accelerator variants (manifest `accelerator.manager: faulty:<Class>`):

* LeakOnCrash         – "doesn't return devices": claims devices with lock files that only a
                         clean exit removes; a device whose holder was killed or crashed stays
                         claimed, and the next process given it sees nothing (FR-001..005).
* CollideAfterRestart – "ids that collide after restart": a restarted actor is shown the
                         neighbouring device, which another actor holds (FR-003, FR-004, and the
                         node checks that restart actors: FR-008..010).
* LosesDeviceAfterShutdown – a device handle stays open after ray.shutdown(), so a fresh start
                         in the same process detects one device fewer (FR-006).
* HangAfterRestart    – a restarted actor hangs while opening its device (a device that waits
                         for a reset nobody does): the hang test.
* PeerDeathCrashes    – a device process exits when any node it saw at start dies (a runtime
                         that fate-shares with its peers) (FR-007).
* StaleHostClaims     – node detection leaves per-host claims behind; a host that comes back
                         after a hard death detects no devices (FR-011).
* DefaultDomainAfterRestart – a host that comes back after a hard death is labelled before its
                         fabric is up, with a default interconnect domain instead of its own: a
                         group packed into its domain can never get its lost bundle back (FR-019).

Transport variants (manifest `transport.manager: faulty:<Class>`), subclasses of SimXferTransport:

* DieWhenSourceGone   – "dies mid-transfer": reading a dead source's memory kills the receiver
                         (like SIGBUS on an unmapped segment) (FR-012, FR-013).
* HangWhenSourceGone  – "hangs in a receive": waits forever for a dead source and ignores
                         abort_transport (FR-012, FR-013).
* AbortPoisons        – abort_transport breaks every later receive in the process (FR-014).
* ConsumeOnRead       – frees the source's segment on the first read, so a failed receive loses
                         the data (FR-015).
* FailNthReceive      – every receive from the 3rd on, in a process, raises (FR-015).
* NoAbortSimXfer      – not broken: cannot abort (Ray kills both actors on a failed transfer);
                         must pass, through the other branch of FR-012/FR-014.

Folded twins (the end of this module): several of the defects above in one class, for one teeth
row each (LeakOnCrashLosesDevice, CollidePeerDeath, HangStaleHost, DieAbortConsume).
"""
from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from worker_process import in_ray_worker

from conformance.simulated.manager import SimAccManager

STATE_ENV = "FAULTY_STATE_DIR"
NODE_NAME_ENV = "RAY_CONFORMANCE_NODE_NAME"


def state_dir(*parts: str) -> Path:
    base = Path(os.environ.get(STATE_ENV) or Path(tempfile.gettempdir()) / f"ray-conformance-faulty-{os.getuid()}")
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def pid_alive(pid: int) -> bool:
    """Running (a killed process its parent has not reaped yet counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _runtime_context() -> Any:
    import ray
    return ray.get_runtime_context()


def _restarted_actor() -> bool:
    """True in an actor process Ray restarted (max_restarts), False elsewhere."""
    if not in_ray_worker():
        return False
    try:
        return bool(_runtime_context().was_current_actor_reconstructed)
    except Exception:  # noqa: BLE001 - a task, not an actor
        return False


# ------------------------------------------------------------------------------ accelerator
class LeakOnCrash(SimAccManager):
    """Device claims survive a holder that dies without a clean exit."""

    _held: set[Path] = set()
    _atexit = False

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if not in_ray_worker() or not ids:
            SimAccManager.set_current_process_visible_accelerator_ids(ids)
            return
        folder = state_dir("claims", _runtime_context().get_node_id())
        me = os.getpid()
        for lock in list(LeakOnCrash._held):          # devices this process held for an earlier task
            if lock.name not in ids:
                lock.unlink(missing_ok=True)
                LeakOnCrash._held.discard(lock)
        usable = []
        for i in ids:
            lock = folder / str(i)
            try:
                owner = int(lock.read_text() or 0)
            except (FileNotFoundError, ValueError):
                owner = 0
            if owner and owner != me and not pid_alive(owner):
                continue                              # its holder died uncleanly: "still in use"
            lock.write_text(str(me))
            LeakOnCrash._held.add(lock)
            usable.append(i)
        if not LeakOnCrash._atexit:
            LeakOnCrash._atexit = True
            atexit.register(lambda: [p.unlink(missing_ok=True) for p in list(LeakOnCrash._held)])
        SimAccManager.set_current_process_visible_accelerator_ids(usable)


class CollideAfterRestart(SimAccManager):
    """A restarted actor is shown the next device (held by someone else) instead of its own."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        SimAccManager.set_current_process_visible_accelerator_ids(CollideAfterRestart.collided(ids))

    @staticmethod
    def collided(ids: List[str]) -> List[str]:
        """The ids a restarted actor is shown: each one's neighbour (elsewhere: the ids as given)."""
        if ids and _restarted_actor():
            n = SimAccManager.get_current_node_num_accelerators() or 1
            ids = [str((int(i) + 1) % n) if str(i).isdigit() else i for i in ids]
        return ids


class LosesDeviceAfterShutdown(SimAccManager):
    """A vendor library that keeps a device handle open in the process after ray.shutdown(): a
    fresh start in the same process detects one device fewer (FR-006)."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        n = SimAccManager.get_current_node_num_accelerators()
        _watch_shutdown()
        return max(0, n - 1) if _SHUTDOWN_SEEN else n


_SHUTDOWN_SEEN: list[bool] = []
_WATCHING: list[bool] = []


def _watch_shutdown() -> None:
    """Note, once per process, when this process ends a Ray session (the driver's ray.shutdown)."""
    ray = sys.modules.get("ray")
    if ray is None or _WATCHING or in_ray_worker():
        return
    _WATCHING.append(True)
    original = ray.shutdown

    def shutdown(*args: Any, **kwargs: Any) -> Any:
        _SHUTDOWN_SEEN[:] = [True]
        return original(*args, **kwargs)

    ray.shutdown = shutdown


class HangAfterRestart(SimAccManager):
    """A restarted actor never finishes opening its device."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if ids and _restarted_actor():
            time.sleep(3600)
        SimAccManager.set_current_process_visible_accelerator_ids(ids)


class PeerDeathCrashes(SimAccManager):
    """Device processes exit when a node that was alive when they got their devices dies."""

    _watching = False

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        SimAccManager.set_current_process_visible_accelerator_ids(ids)
        if ids and in_ray_worker() and not PeerDeathCrashes._watching:
            PeerDeathCrashes._watching = True
            threading.Thread(target=PeerDeathCrashes._watch, name="faulty-peer-watch", daemon=True).start()

    @staticmethod
    def _watch() -> None:
        import ray

        peers = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        while True:
            time.sleep(0.3)
            try:
                alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
            except Exception:  # noqa: BLE001 - GCS hiccup: look again
                continue
            if peers - alive:
                os._exit(17)


class StaleHostClaims(SimAccManager):
    """Detection claims a simulated host's devices and never releases them: a host that comes
    back after a hard death finds its own stale claim and reports no devices."""

    SAME_START_S = 3.0   # calls within one node start come within this; a rejoin comes later

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        n = SimAccManager.get_current_node_num_accelerators()
        host = os.environ.get(NODE_NAME_ENV)
        if not host or in_ray_worker():
            return n
        claim = state_dir("hosts") / f"{host}-{os.getpid()}"
        if claim.exists() and time.time() - claim.stat().st_mtime > StaleHostClaims.SAME_START_S:
            return 0                       # claimed by an earlier start of this host: "busy"
        if not claim.exists():
            claim.write_text(str(n))
        return n


class DefaultDomainAfterRestart(SimAccManager):
    """The labels of a simulated host started again (its node name seen before, in the process
    that starts the nodes) carry a default interconnect domain: what a plugin that asks the fabric
    manager before it is up, and falls back instead of waiting, publishes after a host restart."""

    SAME_START_S = 3.0   # calls within one node start come within this; a rejoin comes later
    DEFAULT = "simlink-default"
    DOMAIN_KEY = "ray.io/accelerator-domain"
    _first: Dict[str, float] = {}

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        labels = SimAccManager.get_current_node_accelerator_labels()
        host = os.environ.get(NODE_NAME_ENV)
        cls = DefaultDomainAfterRestart
        if not host or in_ray_worker() or cls.DOMAIN_KEY not in labels:
            return labels
        first = cls._first.setdefault(host, time.monotonic())
        if time.monotonic() - first > cls.SAME_START_S:
            return {**labels, cls.DOMAIN_KEY: cls.DEFAULT}
        return labels


# ------------------------------------------------------------------------------ transport
# Defined on first use (PEP 562 module __getattr__): the accelerator variants are imported in
# every Ray worker, and should not make each of them import torch.
TRANSPORT_VARIANTS = ("DieWhenSourceGone", "HangWhenSourceGone", "AbortPoisons", "ConsumeOnRead",
                      "FailNthReceive", "FailNthReceiveKeepsStaging", "NoAbortSimXfer", "PidMetadata")


def __getattr__(name: str) -> Any:
    if name in TRANSPORT_VARIANTS + FOLDED_TRANSPORT_VARIANTS:
        _define_transport_variants()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# FailNthReceiveKeepsStaging stages below here, one folder per Ray session: tests/support/teeth.py removes a
# session's folder once no process of that session lives (never a running row's, whose check must still see it)
KILLED_STAGING_DIR = os.path.join("/tmp", "rc-teeth-killedstaging")


def _session_folder() -> str:
    """KILLED_STAGING_DIR/<this process's Ray session name>."""
    import ray

    session = ray._private.worker.global_worker.node.get_session_dir_path()
    return os.path.join(KILLED_STAGING_DIR, os.path.basename(os.path.realpath(session)))


def _define_transport_variants() -> None:
    from conformance.simulated.transport import SimXferMetadata, SimXferTransport

    @dataclasses.dataclass
    class PidMetadata(SimXferMetadata):
        """SIMXFER metadata plus the source's pid (what these variants consult)."""

        src_pid: int = 0

    class _SourceAware(SimXferTransport):
        def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[Any]) -> Any:
            meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
            fields = {f.name: getattr(meta, f.name) for f in dataclasses.fields(SimXferMetadata)}
            return PidMetadata(**fields, src_pid=os.getpid())

        @staticmethod
        def source_gone(meta: Any) -> bool:
            pid = getattr(meta, "src_pid", 0)
            return bool(pid) and not pid_alive(pid)

    class DieWhenSourceGone(_SourceAware):
        def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                                  target_buffers: Optional[List[Any]] = None) -> List[Any]:
            if self.source_gone(tensor_transport_metadata):
                os._exit(7)                # the read of a vanished peer's memory faults the reader
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)

    class HangWhenSourceGone(_SourceAware):
        def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                                  target_buffers: Optional[List[Any]] = None) -> List[Any]:
            if self.source_gone(tensor_transport_metadata):
                while True:                # waits for the source's "ready" flag; ignores aborts
                    time.sleep(1)
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)

    class AbortPoisons(SimXferTransport):
        poisoned = False

        def abort_transport(self, obj_id: str, communicator_metadata: Any) -> None:
            type(self).poisoned = True     # "aborts the channel", not the transfer
            super().abort_transport(obj_id, communicator_metadata)

        def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                                  target_buffers: Optional[List[Any]] = None) -> List[Any]:
            if type(self).poisoned:
                raise RuntimeError("SIMXFER(AbortPoisons): channel aborted earlier; receive refused")
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)

    class ConsumeOnRead(SimXferTransport):
        def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                                  target_buffers: Optional[List[Any]] = None) -> List[Any]:
            out = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                target_buffers)
            from multiprocessing import shared_memory
            try:                           # "one reader per object": free the source's copy now
                seg = shared_memory.SharedMemory(name=tensor_transport_metadata.segment)
                seg.close()
                seg.unlink()
            except FileNotFoundError:
                pass
            return out

    class FailNthReceive(SimXferTransport):
        n = 3
        count = 0

        def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                                  target_buffers: Optional[List[Any]] = None) -> List[Any]:
            type(self).count += 1
            if type(self).count >= type(self).n:
                raise RuntimeError(f"SIMXFER(FailNthReceive): receive #{type(self).count} failed")
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)

    class FailNthReceiveKeepsStaging(FailNthReceive):
        """FailNthReceive, and a second bug for a second check (FR-012): the source also stages
        every object in a file under /tmp (KILLED_STAGING_DIR), open while the object lives, which it closes and
        removes only in garbage_collect, the normal free. Ray calls no garbage_collect for a
        killed source, so every killed producer leaves its staging file, held by nobody."""

        staging: Dict[str, Any] = {}

        def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[Any]) -> Any:
            meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
            if obj_id not in self.staging:
                folder = _session_folder()
                os.makedirs(folder, exist_ok=True)
                f = open(os.path.join(folder, f"stage-{os.getpid()}-{obj_id}"), "wb")
                f.write(b"staged " * 128)
                f.flush()
                self.staging[obj_id] = f
            return meta

        def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: List[Any]) -> None:
            f = self.staging.pop(obj_id, None)
            if f is not None:
                f.close()
                os.unlink(f.name)
            super().garbage_collect(obj_id, tensor_transport_meta, tensors)

    class NoAbortSimXfer(SimXferTransport):
        @staticmethod
        def can_abort_transport() -> bool:
            return False

    for cls in (PidMetadata, _SourceAware, DieWhenSourceGone, HangWhenSourceGone, AbortPoisons, ConsumeOnRead,
                FailNthReceive, FailNthReceiveKeepsStaging, NoAbortSimXfer):
        cls.__qualname__ = cls.__name__     # importable by reference (faulty:<Name>) in workers
        cls.__module__ = __name__
        globals()[cls.__name__] = cls
    _define_folded_transport_variants()


# ---- folded twins
# Several defects in one class, for one teeth row each (tests/teeth.yaml): every defect acts in its
# own method or situation, so each check of the row fails for its own defect's reason. The
# single-defect classes above stay (tests import them); these only combine them.
class LeakOnCrashLosesDevice(LeakOnCrash, LosesDeviceAfterShutdown):
    """LeakOnCrash in workers given devices (set_current_process_visible_accelerator_ids: FR-001,
    FR-002, FR-005) and LosesDeviceAfterShutdown in the driver after ray.shutdown()
    (get_current_node_num_accelerators: FR-006). Neither class defines the other's method."""


class CollidePeerDeath(SimAccManager):
    """CollideAfterRestart (a restarted actor is shown its neighbour's device: FR-003, FR-004) and
    PeerDeathCrashes (a device process exits when a node it saw dies: FR-007). Both act in
    set_current_process_visible_accelerator_ids, so this calls one inside the other: the restart
    shift first, then PeerDeathCrashes' set and its watch."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        PeerDeathCrashes.set_current_process_visible_accelerator_ids(CollideAfterRestart.collided(ids))


class HangStaleHost(HangAfterRestart, StaleHostClaims):
    """HangAfterRestart in restarted actors (set_current_process_visible_accelerator_ids: FR-003 as
    a hang) and StaleHostClaims in the process that detects a named simulated host's devices
    (get_current_node_num_accelerators: FR-011). Neither class defines the other's method."""


FOLDED_TRANSPORT_VARIANTS = ("DieAbortConsume",)


def _define_folded_transport_variants() -> None:
    """The folded transport twins (on first use, like the single ones: they subclass SIMXFER)."""
    g = globals()

    class DieAbortConsume(g["DieWhenSourceGone"], g["AbortPoisons"], g["ConsumeOnRead"]):  # type: ignore[misc]
        """DieWhenSourceGone (a receive from a dead source kills the receiver: FR-012, FR-013),
        AbortPoisons (abort_transport refuses every later receive: FR-014) and ConsumeOnRead (a
        read frees the source's copy: FR-015), chained through super() in that order
        (recv_multiple_tensors: the dead-source exit, then the poison, then the read and its free).
        Each acts only in its own situation: a dead source, an abort, a second read of an object."""

    DieAbortConsume.__qualname__ = DieAbortConsume.__name__
    DieAbortConsume.__module__ = __name__
    g[DieAbortConsume.__name__] = DieAbortConsume
