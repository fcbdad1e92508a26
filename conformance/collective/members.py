"""The actor a collective check makes a group member of, and the registration it runs first.

Ray ships no collective backend to a worker: every process that builds a group must register the
vendor's class itself (Ray 2.60, `ray.util.collective.backend_registry`). A member registers in its
constructor, the way a vendor's own actors would; `register_from_env` is the same registration as
a `worker_process_setup_hook` (CC-003 starts members both ways).

Members call the public `ray.util.collective` functions (never the group object), so the backend
sees exactly what Ray gives it: tensors wrapped in lists, options passed as classes.
"""
from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from conformance.collective import programs
from conformance.handles import Actor
from conformance.imports import import_ref as _import
from conformance.rdt.device import HOST, current, is_host, to_current, to_host

if TYPE_CHECKING:
    import torch

SPEC_ENV = "RAY_CONFORMANCE_COLLECTIVE_SPEC"   # "NAME|pkg.mod:Class|pkg.mod:register|path1:path2"


def register_backend(name: str, group_class: str | None, register: str | None, python_path: list[str]) -> str:
    """Register the backend in this process (nothing for a built-in); returns how it was done."""
    for p in reversed(python_path):
        if p not in sys.path:
            sys.path.insert(0, p)
    if group_class is None:
        return "built in"
    from ray.util.collective.backend_registry import _global_registry, register_collective_backend

    if register:
        _import(register)()
        got, want = _global_registry.get(name), _import(group_class)
        if got is not want:
            raise RuntimeError(f"the vendor's {register} registered {got.__module__}.{got.__qualname__} as {name}, "
                               f"but the manifest's collective.group_class is {group_class}")
        return f"the vendor's {register}"
    if not _global_registry.is_registered(name):
        register_collective_backend(name, _import(group_class))
    return "register_collective_backend"


def register_rdt_transport(name: str, transport: str | None, devices: list[str], python_path: list[str]) -> None:
    """register_tensor_transport(name, devices, the manifest's class, torch.Tensor) in this process
    (the driver); a second registration of the same class is no error."""
    import torch
    from ray.experimental.rdt import util as rdt_util
    from ray.experimental.rdt.util import register_tensor_transport, transport_manager_info

    ensure_defaults = getattr(rdt_util, "_ensure_default_transports_registered", None)
    if ensure_defaults is not None:   # Ray registers its own (GLOO, NCCL, ...) lazily: first, so a name they take is seen
        ensure_defaults()
    for p in reversed(python_path):
        if p not in sys.path:
            sys.path.insert(0, p)
    if transport is None:
        raise ValueError("collective.rdt_transport: no transport class named")
    cls = _import(transport)
    known = transport_manager_info.get(name.upper())
    if known is not None and known.transport_manager_class is cls:
        return
    register_tensor_transport(name, devices, cls, torch.Tensor)


def spec_env(name: str, group_class: str | None, register: str | None, python_path: list[str]) -> str:
    return "|".join([name, group_class or "", register or "", os.pathsep.join(python_path)])


def register_from_env() -> None:
    """worker_process_setup_hook: register the backend named by RAY_CONFORMANCE_COLLECTIVE_SPEC."""
    name, group_class, register, path = (os.environ[SPEC_ENV].split("|") + ["", "", ""])[:4]
    register_backend(name, group_class or None, register or None, [p for p in path.split(os.pathsep) if p])


def _make(lib: str, dtype: str, data: object, device: str = HOST) -> Any:
    """The step's input: a numpy array, or a torch tensor on `device` (a torch device type), on
    this member's current device of that type: the one Ray made visible to it (rdt.device.current)."""
    if lib == "numpy":
        import numpy as np

        return np.array(data, dtype=np.dtype(dtype))
    import torch

    return to_current(torch.tensor(data, dtype=getattr(torch, dtype)), device)


def _out(x: Any, lib: str, initial: Any) -> dict[str, Any]:
    """What a rank holds: values read through a host copy (the device's own .to("cpu"), which
    waits for the backend's queued work), dtype, library and device type."""
    is_numpy = type(x).__module__ == "numpy"
    out = {"values": (x if is_numpy else to_host(x)).tolist(), "dtype": str(x.dtype).replace("torch.", ""),
           "input": initial, "type": "numpy" if is_numpy else "torch", "device": HOST if is_numpy else x.device.type}
    return out if is_numpy else {**out, **_placement(x)}


def _placement(t: torch.Tensor) -> dict[str, Any]:
    """Where a device tensor is beside this process's current device of its type (the one Ray
    made visible first): a backend that writes its result on another device shows here."""
    if is_host(t.device.type):
        return {}
    return {"device_index": t.device.index, "current_index": current(t.device.type).index}


def rdt_tensor(spec: dict[str, Any], device: str = HOST) -> Any:
    """{"dtype": "float32", "shape": [2, 3], "seed": 5} -> a tensor of small exact integers, on
    this process's current device of type `device`."""
    import torch

    n = 1
    for d in spec["shape"]:
        n *= d
    values = [((spec["seed"] + 2 * i) % 7) + 1 for i in range(n)]
    return to_current(torch.tensor(values, dtype=getattr(torch, spec["dtype"])).reshape(spec["shape"]), device)


def rdt_expected(spec: dict[str, Any], device: str = HOST) -> dict[str, Any]:
    t = rdt_tensor(spec)
    return {"dtype": spec["dtype"], "shape": list(spec["shape"]), "device": device, "values": t.reshape(-1).tolist()}


class BarrierLog:
    """Who entered each barrier (CC-004): a member tells it before calling barrier(), and asks it
    after barrier() returned how many had entered by then (a plain actor: calls run one at a time,
    so a count is never read mid-update). The group's own order, with no clock compared across
    processes."""

    def __init__(self) -> None:
        self.entered: dict[str, set[int]] = {}

    def enter(self, key: str, rank: int) -> None:
        self.entered.setdefault(key, set()).add(rank)

    def count(self, key: str) -> int:
        return len(self.entered.get(key, ()))


class CollectiveMember:
    """One process that joins collective groups and runs op programs in them."""

    def __init__(self, name: str, group_class: str | None, register: str | None, python_path: list[str],
                 register_here: bool = True, rdt: bool = False) -> None:
        self.name = name
        self._spec = (group_class, register, python_path)
        self.how = register_backend(name, group_class, register, python_path) if register_here else "not here"
        if rdt:   # an RDT member builds Ray's RDT manager alone, before two threads race to (manager_race)
            from conformance.rdt.manager_race import settle
            settle()

    def register_again(self) -> str:
        """Register once more, as a second hook or import would; '' when that is harmless."""
        try:
            register_backend(self.name, *self._spec)
            return ""
        except Exception as exc:  # noqa: BLE001 - the finding
            return f"{type(exc).__name__}: {exc}".splitlines()[0]

    def info(self) -> dict[str, Any]:
        import ray
        from ray.util.collective import is_backend_available
        from ray.util.collective.backend_registry import _global_registry

        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "node": ctx.get_node_id(), "how": self.how,
                "accelerator_ids": {k: list(v) for k, v in ctx.get_accelerator_ids().items() if v},
                "registered": _global_registry.is_registered(self.name),
                "available": bool(is_backend_available(self.name))}

    def init_group(self, world_size: int, rank: int, backend: str, group: str) -> None:
        from ray.util import collective as col

        col.init_collective_group(world_size, rank, backend=backend, group_name=group)  # type: ignore[arg-type]  # Ray's hints: pyproject.toml

    def group_view(self, group: str) -> tuple[bool, int, int]:
        from ray.util import collective as col

        return col.is_group_initialized(group), col.get_rank(group), col.get_collective_group_size(group)

    def destroy(self, group: str) -> None:
        from ray.util import collective as col

        col.destroy_collective_group(group)

    def call(self, ref: str, *args: Any) -> Any:
        """The function `ref` ("pkg.module:function") called with this member first: how a check
        of another area runs its own program on the run's members (WL-002's data-parallel steps,
        conformance.areas.workload.dp_worker) without starting actors of its own."""
        return _import(ref)(self, *args)

    def run(self, steps: list[dict[str, Any]], rank: int, world_size: int, group: str,
            log: Actor | None = None) -> list[dict[str, Any]]:
        """Run the program as `rank`; a step that raises names itself in the error. `log`: a
        BarrierLog handle that every barrier step reports to (None: the members' clocks only)."""
        out = []
        for i, step in enumerate(steps):
            try:
                if step["op"] == "barrier":
                    out.append(self._barrier(step, rank, group, log, f"{group}.{i}"))
                    continue
                out.append(self._step(step, rank, world_size, group))
            except Exception as exc:
                raise RuntimeError(f"rank {rank}, step {i} ({programs.describe(step)}): "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        return out

    def _barrier(self, step: dict[str, Any], rank: int, group: str, log: Actor | None, key: str) -> dict[str, Any]:
        """One barrier, the late rank entering after its delay: when each member entered and left
        (its clock), and how many members the log had seen enter once it had left."""
        import ray
        from ray.util import collective as col

        if rank == step["delay_rank"]:
            time.sleep(step["delay_s"])
        if log is not None:
            ray.get(log.enter.remote(key, rank))
        entered = time.time()
        col.barrier(group)
        left = time.time()
        seen = int(ray.get(log.count.remote(key))) if log is not None else None
        return {"entered": entered, "left": left, "entered_by_exit": seen}

    def _step(self, step: dict[str, Any], rank: int, world_size: int, group: str) -> dict[str, Any]:
        from ray.util import collective as col
        from ray.util.collective.types import ReduceOp

        op, n, seed = step["op"], step.get("n", 4), step.get("seed", 0)
        lib, dtype, device = step["lib"], step["dtype"], step.get("device", "cpu")
        mine = programs.values(seed, rank, n)
        reduce_op = getattr(ReduceOp, step.get("reduce", "SUM"))
        if op == "allreduce":
            t = _make(lib, dtype, mine, device)
            col.allreduce(t, group, reduce_op)
            return _out(t, lib, mine)
        if op == "reduce":
            t = _make(lib, dtype, mine, device)
            col.reduce(t, step["root"], group, reduce_op)
            return _out(t, lib, mine)
        if op == "broadcast":
            t = _make(lib, dtype, mine, device)
            col.broadcast(t, step["root"], group)
            return _out(t, lib, mine)
        if op == "allgather":
            outs = [_make(lib, dtype, [0] * n, device) for _ in range(world_size)]
            col.allgather(outs, _make(lib, dtype, mine, device), group)
            res = [_out(x, lib, None) for x in outs]
            return {**res[0], "values": [r["values"] for r in res], "input": [[0] * n] * world_size}
        if op == "reducescatter":
            t = _make(lib, dtype, [0] * n, device)
            col.reducescatter(t, [_make(lib, dtype, v, device) for v in programs.scatter_input(seed, rank, n, world_size)],
                              group, reduce_op)
            return _out(t, lib, [0] * n)
        if op == "sendrecv":
            if rank == step["src"]:
                col.send(_make(lib, dtype, mine, device), step["dst"], group)
            elif rank == step["dst"]:
                t = _make(lib, dtype, [0] * n, device)
                col.recv(t, step["src"], group)
                return _out(t, lib, [0] * n)
            return {"values": None, "dtype": dtype, "type": lib, "input": None}
        raise ValueError(f"unknown op {op!r}")

    # ------------------------------------------------------------------ RDT over the backend (CC-011, CC-012)
    def rdt_make(self, tensors: list[dict[str, Any]], device: str = HOST) -> list[Any]:
        """The tensors `rdt_expected` describes, on this member's current `device` (returned
        through the RDT transport the caller names in .options(tensor_transport=...))."""
        return [rdt_tensor(t, device) for t in tensors]

    def rdt_take(self, tensors: list[Any]) -> list[dict[str, Any]]:
        """What arrived: dtype, shape, device type (and index beside this member's current one)
        and the values (read through a host copy), per tensor."""
        return [{"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "device": t.device.type,
                 "values": to_host(t).reshape(-1).tolist(), **_placement(t)} for t in tensors]

    def payload_allreduce(self, nbytes: int, group: str) -> bool:
        """One allreduce(SUM) of a float32 tensor of nbytes of ones; True when every element came
        back as the group size (the tensor is dropped before returning)."""
        import torch
        from ray.util import collective as col

        t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        col.allreduce(t, group)
        ok = bool((t == float(col.get_collective_group_size(group))).all())
        del t
        return ok

    def leftovers_here(self) -> dict[str, Any]:
        """What runs below this member and the files it holds, in /dev/shm or anywhere else
        (conformance.leftovers.here: the same reading as a transport's endpoints)."""
        from conformance import leftovers

        return leftovers.here()

    def leftovers_orphans(self, names: list[str], since: float) -> list[str]:
        """Which of these files are still on this host, made since `since`, and held by nobody
        (conformance.leftovers.orphans)."""
        from conformance import leftovers

        return leftovers.orphans(names, since)

    def held_mib(self) -> float:
        """The host memory this process holds (MiB; conformance.host_memory: anonymous memory and
        shared memory outside Ray's object store) after a garbage collection and a heap trim:
        what a backend still holds shows here; pages of Ray's store a zero-copy ray.get touched
        do not (Ray's store owns and reuses them)."""
        from conformance import host_memory

        return float(host_memory.snapshot()["held"]) / 2**20

    def timed(self, op: str, nbytes: int, iters: int, group: str, root: int = 0) -> float:
        """Seconds per op for a float32 tensor of nbytes (allreduce / broadcast), after one warm-up."""
        import torch
        from ray.util import collective as col

        t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        def call() -> None:
            if op == "allreduce":
                col.allreduce(t, group)
            else:
                col.broadcast(t, root, group)

        call()
        col.barrier(group)
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        col.barrier(group)
        return (time.perf_counter() - t0) / iters

    def store_put(self, nbytes: int) -> list[Any]:
        """A float32 array of nbytes put in Ray's object store here, its ref wrapped in a list (so
        Ray passes the ref, not its value, to whoever gets it): CC-010's object-store reference."""
        import numpy as np
        import ray

        return [ray.put(np.ones(max(1, nbytes // 4), dtype=np.float32))]

    def store_get_s(self, refs: list[Any]) -> float:
        """Seconds for this process to get the object behind refs[0] from Ray's object store (pulled
        from the putter's node when it is another) into a buffer of its own: what a backend that
        staged every op through the object store would pay for these bytes, on this run's host."""
        import numpy as np
        import ray

        t0 = time.perf_counter()
        got = ray.get(refs[0])
        mine = np.empty_like(got)
        np.copyto(mine, got)
        took = time.perf_counter() - t0
        del got, mine
        return took

    def host_copy_s(self, nbytes: int, iters: int) -> float:
        """Seconds per in-memory copy of nbytes in this process (the same-run host reference)."""
        import torch

        a, b = torch.ones(max(1, nbytes // 4)), torch.empty(max(1, nbytes // 4))
        b.copy_(a)
        t0 = time.perf_counter()
        for _ in range(iters):
            b.copy_(a)
        return (time.perf_counter() - t0) / iters
