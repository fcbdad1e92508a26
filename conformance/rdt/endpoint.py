"""The one actor every check that moves tensors moves them between (transport, performance, recovery).

It lives in an importable module so workers import it by reference. It reports what it sees
(digests, timings, memory, the tracing wrapper's records); the checks on the driver judge. The
fault hooks (`arm`, `disarm`, `crash`) act only where the fault-injecting twin
(conformance.rdt.faults) is the transport in use; the transport-usage checks subclass it with
what users do with refs (conformance/areas/transport/usage_actors.py).

Producer methods (`make`, `buffer`) are called with `.options(tensor_transport=NAME)`; the
consumer methods take the resulting refs as arguments, which makes Ray move the tensors with
the transport before the method runs.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from conformance.rdt import device as devices
from conformance.rdt import faults, manager_race, memory, payloads, tracing

if TYPE_CHECKING:
    import torch

CLONE_MAX_BATCH = 4096  # knob: caps a clone baseline trial of tiny tensors (a few ms at most)


class Endpoint:
    """One transfer endpoint (wrapped with ray.remote(enable_tensor_transport=True) by `pool`)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self.sent: dict[str | int, Any] = {}
        self.buffers: dict[int, Any] = {}
        devices.warm_up(device)   # the device's first use, under the start's bound
        manager_race.settle()     # Ray's RDT manager, built before two threads race to (manager_race)

    # ------------------------------------------------------------------ identity & health
    def info(self) -> dict[str, Any]:
        import ray

        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "node_id": ctx.get_node_id(), "actor_id": ctx.get_actor_id(),
                "device": self.device, "accelerator_ids": {k: list(v) for k, v in ctx.get_accelerator_ids().items()}}

    def supported_dtypes(self, names: list[str]) -> dict[str, str | None]:
        """dtype -> None if the device can hold and byte-view it, else why not."""
        import torch

        out: dict[str, str | None] = {}
        for name in names:
            try:
                t = torch.zeros(4, dtype=getattr(torch, name), device=self.device)
                t.view(torch.uint8).cpu()
                out[name] = None
            except Exception as exc:  # noqa: BLE001 - reported as unsupported
                out[name] = f"{type(exc).__name__}: {exc}"[:160]
        return out

    # ------------------------------------------------------------------ producing
    def make(self, case: dict[str, Any]) -> Any:
        """Build a case's payload, remember its digest, return it (through the transport). On a
        device the payload's copies may still be queued when it returns, as a producer's kernels
        are: the digest is the host copy's (payloads.build_with_digest)."""
        obj, digest = payloads.build_with_digest(case, self.device)
        self.sent[case["id"]] = digest
        return obj

    def use_device(self, index: int) -> dict[str, Any]:
        """Make device `index` of this process current (an actor given several devices picks one),
        through the torch device module (torch.<type>.set_device). Returns current_device()."""
        mod = devices.module(self.device)
        mod.set_device(index)
        return {"current_device": int(mod.current_device()), "device_count": int(mod.device_count())}

    def current_device(self) -> int | None:
        """The index of this process's current device (None on the host)."""
        mod = None if devices.is_host(self.device) else devices.module(self.device)
        return int(mod.current_device()) if mod is not None else None

    def sent_digest(self, case_id: str | int) -> Any:
        """The digest of what `make` produced for a case id (a seeded case's id is its seed)."""
        return self.sent.get(case_id)

    def buffer(self, nbytes: int) -> Any:
        """A cached uint8 buffer of nbytes: producing it again costs nothing (benchmarks)."""
        buf = self.buffers.get(nbytes)
        if buf is None:
            buf = self.buffers[nbytes] = payloads.build(payloads.buffer_case(nbytes), self.device)
            self.sent[f"buffer/{nbytes}"] = payloads.describe(buf)
        return buf

    def prepare_buffer(self, nbytes: int) -> int:
        """Allocate the cached buffer now (outside any timed interval)."""
        return int(self.buffer(nbytes).numel())

    def drop_buffers(self) -> None:
        self.buffers.clear()

    # ------------------------------------------------------------------ consuming
    def receive(self, obj: object) -> Any:
        """The digest of what arrived."""
        return payloads.describe(obj)

    def receive_many(self, *objs: Any) -> list[Any]:
        return [payloads.describe(o) for o in objs]

    def sink(self, obj: torch.Tensor) -> int:
        """Touch nothing: the cheapest consumer (benchmarks). Returns the bytes received."""
        return int(obj.numel() * obj.element_size())

    # ------------------------------------------------------------------ local baselines
    def clone_times(self, nbytes: int, trials: int, warmup: int, batch_s: float = 0.0) -> tuple[list[float], int]:
        """(seconds per torch clone of an nbytes tensor on this endpoint's device, one figure per
        trial, clones per trial): a trial batches clones until it lasts about batch_s, since a
        clone of a few KiB takes microseconds, below the clock's and the scheduler's noise."""
        import math

        buf = self.buffer(nbytes)
        sync = devices.synchronizer(self.device)
        t0 = time.perf_counter()
        for _ in range(max(1, warmup)):
            buf.clone()
        sync()
        one = (time.perf_counter() - t0) / max(1, warmup)
        batch = max(1, min(CLONE_MAX_BATCH, math.ceil(batch_s / one))) if one > 0 else CLONE_MAX_BATCH
        times = []
        for _ in range(trials):
            t0 = time.perf_counter()
            for _ in range(batch):
                c = buf.clone()
                del c
            sync()
            times.append((time.perf_counter() - t0) / batch)
        return times, batch

    # ------------------------------------------------------------------ observation
    def transport_calls(self, transport: str, obj_ids: list[str] | None = None, clear: bool = False) -> list[dict[str, Any]]:
        return tracing.calls(transport, obj_ids, clear)

    def memory(self, shm: bool = False) -> dict[str, Any]:
        return memory.snapshot(self.device, shm=shm)

    def leftovers_here(self) -> dict[str, Any]:
        """What runs below this endpoint and the files it holds, in /dev/shm or anywhere else
        (conformance.leftovers.here)."""
        from conformance import leftovers

        return leftovers.here()

    def leftovers_orphans(self, names: list[str], since: float) -> list[str]:
        """Which of these files are still on this host, made since `since`, and held by nobody
        (conformance.leftovers.orphans: what a killed or finished peer left)."""
        from conformance import leftovers

        return leftovers.orphans(names, since)

    def rdt_objects(self) -> int:
        """Objects in Ray's per-actor RDT store (primary copies this actor still holds)."""
        import ray

        mgr = ray._private.worker.global_worker.rdt_manager
        store = mgr._rdt_store
        return 0 if store is None else int(store.get_num_objects())

    # ------------------------------------------------------------------ between borrowers (conformance.rdt.warm)
    def reset(self) -> int:
        """Forget what the last borrower made here (digests, cached buffers, armed faults): the
        harness's own state, so the RDT objects only the transport still holds are what remains.
        Returns how many entries were dropped."""
        n = len(self.sent) + len(self.buffers) + faults.disarm()
        self.sent.clear()
        self.buffers.clear()
        return n

    def handover(self, watch: list[str]) -> dict[str, Any]:
        """What this process holds between two borrowers (conformance.rdt.warm.handover_leaks
        judges it): the RDT objects in its store, the variables named in `watch` (the manager's
        visible-devices variable), the processes below it and the files it holds open."""
        from conformance import leftovers

        here = leftovers.here()
        return {"rdt_objects": self.rdt_objects(), "env": {name: os.environ.get(name) for name in watch},
                "processes": here["processes"], "files": here["files"]}

    # ------------------------------------------------------------------ faults (conformance.rdt.faults)
    def arm(self, kind: str, params: dict[str, Any]) -> None:
        """Arm one fault for the next receive in this process (the twin's receive path)."""
        faults.arm(kind, **params)

    def disarm(self) -> int:
        return faults.disarm()

    def crash(self) -> None:
        """End this process at once, without clean-up (a crash Ray may restart)."""
        os._exit(1)
