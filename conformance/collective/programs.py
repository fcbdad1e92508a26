"""Op programs: what each rank of a group runs, and what each rank must hold afterwards (pure).

A program is a list of steps (plain dicts, so they travel to the member actors as they are). Every
input element is a small integer (1..5), so every result of every op is an integer that every
dtype the suite names holds exactly (a product over three ranks is at most 125): a correct
backend is bit-exact in every dtype, whatever order it reduces in, and any difference is a bug.

    {"op": "allreduce", "reduce": "SUM", "dtype": "float32", "lib": "torch", "device": "cpu", "n": 4, "seed": 3}
    {"op": "reduce" | "broadcast", "root": 2, ...}
    {"op": "sendrecv", "src": 0, "dst": 2, ...}        # src sends, dst receives, others idle
    {"op": "barrier", "delay_rank": 2, "delay_s": 0.3, "nth": 1, "of": 3}

A barrier step is judged on what a barrier log (members.BarrierLog, an actor) saw: each member
tells it that it is entering before it calls barrier() (the late rank after its delay), and asks
it, once barrier() has returned, how many members had entered by then; fewer than the group is a
member that left before every member had entered. No clock is compared across processes.
"""
from __future__ import annotations

from functools import reduce as _fold
from typing import Any, Iterable

from conformance.collective.config import REDUCE_OPS

NUMPY_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def values(seed: int, rank: int, n: int) -> list[int]:
    """The input of `rank` for a step with `seed`: n small integers (1..5)."""
    return [((seed + 3 * rank + 2 * i) % 5) + 1 for i in range(n)]


def scatter_input(seed: int, rank: int, n: int, world_size: int) -> list[list[int]]:
    """reducescatter: rank's tensor_list (one tensor per destination rank)."""
    return [values(seed + 7 * j, rank, n) for j in range(world_size)]


def _combine(op: str, a: int, b: int) -> int:
    return {"SUM": a + b, "PRODUCT": a * b, "MIN": min(a, b), "MAX": max(a, b)}[op]


def _elementwise(op: str, rows: Iterable[list[int]]) -> list[int]:
    return [_fold(lambda x, y: _combine(op, x, y), col) for col in zip(*rows)]


def expected(step: dict[str, Any], rank: int, world_size: int) -> Any:
    """What `rank` must hold after the step; None where the contract says nothing."""
    op, n, seed = step["op"], step.get("n", 4), step.get("seed", 0)
    ranks = range(world_size)
    if op == "allreduce":
        return _elementwise(step["reduce"], (values(seed, r, n) for r in ranks))
    if op == "reduce":
        return _elementwise(step["reduce"], (values(seed, r, n) for r in ranks)) if rank == step["root"] else None
    if op == "broadcast":
        return values(seed, step["root"], n)
    if op == "allgather":
        return [values(seed, r, n) for r in ranks]
    if op == "reducescatter":
        return _elementwise(step["reduce"], (scatter_input(seed, r, n, world_size)[rank] for r in ranks))
    if op == "sendrecv":
        return values(seed, step["src"], n) if rank == step["dst"] else None
    return None


def op_matrix(world_size: int, dtypes: Iterable[str], libs: Iterable[str], ops: Iterable[str],
              n: int, seed0: int = 0, devices: Iterable[str] = ("cpu",), barriers: int = 1) -> list[dict[str, Any]]:
    """Every claimed op x dtype x library (torch tensors on each device type), once: allreduce and
    reducescatter for every ReduceOp, reduce and broadcast to the last (non-zero) rank, send/recv
    both ways between rank 0 and the last rank, and `barriers` barriers in a row, each entered late
    by another rank (the last, then 0, 1, ...): a barrier is a synchronisation every time, not only
    the group's first. numpy arrays are host memory: they run once, on cpu."""
    last = world_size - 1
    steps: list[dict[str, Any]] = []
    ops = list(ops)
    places = [(lib, device) for lib in libs for device in (devices if lib == "torch" else ("cpu",))]
    for lib, device in dict.fromkeys(places):
        for dtype in dtypes:
            if lib == "numpy" and dtype not in NUMPY_DTYPES:
                continue
            base = {"dtype": dtype, "lib": lib, "device": device, "n": n}
            for op in ops:
                if op in ("allreduce", "reducescatter"):
                    steps += [{**base, "op": op, "reduce": r} for r in REDUCE_OPS]
                elif op == "reduce":
                    steps += [{**base, "op": op, "reduce": r, "root": last} for r in REDUCE_OPS]
                elif op == "broadcast":
                    steps.append({**base, "op": op, "root": last})
                elif op == "allgather":
                    steps.append({**base, "op": op})
                elif op == "sendrecv":
                    steps += [{**base, "op": op, "src": 0, "dst": last}, {**base, "op": op, "src": last, "dst": 0}]
    if "barrier" in ops:
        steps += [{"op": "barrier", "delay_rank": (last + j) % world_size, "delay_s": 0.3, "nth": j + 1, "of": barriers}
                  for j in range(barriers)]
    for i, s in enumerate(steps):
        s["seed"] = seed0 + i
    return steps


def interleaved(world_size: int, rounds: int, n: int = 4, device: str = "cpu") -> list[dict[str, Any]]:
    """Op ordering: point-to-point messages between every neighbour pair interleaved with
    collectives, two messages in a row on the same pair (they must arrive in order), then two more
    between ranks 0 and 1 alone while the other ranks go on to the next collective: the pattern of
    pipeline parallelism, where only neighbouring stages exchange activations. A backend whose
    message numbering is not separate from its collective numbering sees the ranks disagree on
    which collective comes next."""
    steps: list[dict[str, Any]] = []
    base = {"dtype": "float32", "lib": "torch", "device": device, "n": n}
    for _ in range(rounds):
        steps.append({**base, "op": "allreduce", "reduce": "SUM"})
        for r in range(world_size):
            dst = (r + 1) % world_size
            steps += [{**base, "op": "sendrecv", "src": r, "dst": dst}, {**base, "op": "sendrecv", "src": r, "dst": dst}]
        if world_size > 2:   # knob: a pair alone needs a rank outside it
            steps += [{**base, "op": "sendrecv", "src": 0, "dst": 1}, {**base, "op": "sendrecv", "src": 1, "dst": 0}]
        steps.append({**base, "op": "broadcast", "root": 0})   # non-zero roots are CC-004's
        steps.append({**base, "op": "allreduce", "reduce": "MAX"})
    for i, s in enumerate(steps):
        s["seed"] = 1000 + i
    return steps


def describe(step: dict[str, Any]) -> str:
    """A step in a few words, for failure reasons: 'allreduce PRODUCT float16/numpy'."""
    bits = [step["op"]]
    if "reduce" in step:
        bits.append(step["reduce"])
    if "root" in step:
        bits.append(f"root {step['root']}")
    if step["op"] == "sendrecv":
        bits.append(f"{step['src']}->{step['dst']}")
    if "dtype" in step:
        bits.append(f"{step['dtype']}/{step['lib']}" + (f" on {step['device']}" if step.get("device", "cpu") != "cpu" else ""))
    return " ".join(bits)


ROOTED_OPS = ("broadcast", "reduce")

# What each check says when results come back wrong (or not at all): the requirement that broke,
# never a cause the values alone cannot show (a wrong value is no proof of broken ordering or isolation).
WRONG_RESULTS = {
    "CC-004": "an op did not give its right result (CC-004: every claimed op, dtype and world size bit-exact, in place)",
    "CC-005": ("send/recv interleaved with allreduce and broadcast did not each give their right result (CC-005: each op returns its "
               "own right result whatever runs between)"),
    "CC-007": ("groups over the same actors, driven at once, did not each give their right results (CC-007: each group's ops return "
               "that group's right results)"),
}


def each_op_first(problems: list[str]) -> list[str]:
    """`problems` (judge's, each starting with its step's op) with the first problem of every op
    moved to the front, in order, and the rest after. A failure reason is one line cut at
    REASON_LIMIT characters (conformance.run.outcomes), and one broken op fails every rank in
    every dtype: in step order its problems fill the line and hide a second op's defect."""
    firsts: dict[str, int] = {}
    for i, p in enumerate(problems):
        firsts.setdefault(p.split(" ", 1)[0].rstrip(":"), i)
    first = set(firsts.values())
    return [problems[i] for i in sorted(first)] + [p for i, p in enumerate(problems) if i not in first]


def wrong_results(check_id: str, problems: list[str], limit: int = 6) -> str:
    """The reason a check gives for `problems`: its requirement first, then the first few."""
    return f"{WRONG_RESULTS[check_id]}: " + "; ".join(problems[:limit])


def unchanged_hint(step: dict[str, Any], rank: int, got: dict[str, Any]) -> str:
    """Why a wrong tensor may still hold its input: for a rooted op, the rank was taken as the
    root (it sent, so its tensor rightly stayed); otherwise the result was not written in place."""
    if got["values"] != got["input"]:
        return ""
    if step["op"] in ROOTED_OPS:
        return (f" (rank {rank}'s tensor still holds its own input, as a root's does: the backend took it as "
                f"the root instead of rank {step.get('root')})")
    return " (the caller's tensor still holds its input: not written in place)"


def barrier_early(step: dict[str, Any], outs: list[dict[str, Any]], world_size: int,
                  tolerance_s: float = 0.05) -> list[int]:
    """The ranks that left a barrier before every rank had entered it (by the barrier log's count,
    `entered_by_exit`; by the members' clocks where no log was kept)."""
    if all(o.get("entered_by_exit") is not None for o in outs):
        return [r for r, o in enumerate(outs) if o["entered_by_exit"] < world_size]
    late = outs[step["delay_rank"]]["entered"]
    return [r for r in range(world_size) if outs[r]["left"] < late - tolerance_s]


def barrier_problems(step: dict[str, Any], outs: list[dict[str, Any]], world_size: int,
                     tolerance_s: float = 0.05) -> list[str]:
    """A barrier step's problem: the ranks that left it before every rank had entered it (by the
    barrier log's count, `entered_by_exit`; by the members' clocks where no log was kept)."""
    nth = f" {step['nth']} of {step['of']}" if "nth" in step else ""
    early = barrier_early(step, outs, world_size, tolerance_s)
    if not early:
        return []
    return [f"barrier{nth}: rank(s) {early} left the barrier before every rank had entered it (rank "
            f"{step['delay_rank']} entered late; a barrier must hold every member until all have entered, every time)"]


def judge(steps: list[dict[str, Any]], outputs: list[list[dict[str, Any]]], world_size: int,
          tolerance_s: float = 0.05) -> list[str]:
    """Problems found in what each rank returned (outputs[rank][step]); empty when all is right."""
    problems: list[str] = []
    for i, step in enumerate(steps):
        what = describe(step)
        if step["op"] == "barrier":
            problems += barrier_problems(step, [outputs[r][i] for r in range(world_size)], world_size, tolerance_s)
            continue
        for rank in range(world_size):
            want, got = expected(step, rank, world_size), outputs[rank][i]
            if want is None:
                continue
            if got["dtype"] != step["dtype"] or got["type"] != step["lib"]:
                problems.append(f"{what}: rank {rank}'s tensor became {got['type']} {got['dtype']}")
            elif got.get("device", "cpu") != step.get("device", "cpu"):
                problems.append(f"{what}: rank {rank}'s tensor moved to {got.get('device')}")
            elif got.get("device_index") != got.get("current_index"):
                problems.append(f"{what}: rank {rank}'s tensor is on {got['device']}:{got.get('device_index')}, not on "
                                f"the member's current {got['device']}:{got.get('current_index')} (the device Ray made "
                                "visible to it)")
            elif got["values"] != want:
                hint = unchanged_hint(step, rank, got)
                problems.append(f"{what} at world size {world_size}: rank {rank} holds {got['values']}, "
                                f"expected {want}{hint}")
    return problems


# ---------------------------------------------------------------- evidence: what each rank held, as a digest
# A check records, per group it ran, one digest per rank of what that rank held after every step
# (its projection below), and the judge (conformance.areas.collective.judges) regenerates the steps
# from the release's params and the manifest and digests what each rank MUST hold: equal digests are
# every step right on that rank, bit for bit, without a report carrying every tensor.

def _plain(v: object) -> Any:
    """Values as one canonical JSON form: an integral float is its int (3.0 and 3 hold the same)."""
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, float):
        return int(v) if v.is_integer() else repr(v)
    return v


def _want(step: dict[str, Any], rank: int, world_size: int) -> Any:
    if step["op"] == "barrier":
        return ["barrier", True]
    want = expected(step, rank, world_size)
    if want is None:
        return None
    return [step["lib"], step["dtype"], step.get("device", "cpu"), True, _plain(want)]


def _digest(items: list[Any]) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(items, separators=(",", ":")).encode()).hexdigest()[:16]


def held_digests(steps: list[dict[str, Any]], outputs: list[list[dict[str, Any]]], world_size: int,
                 tolerance_s: float = 0.05) -> list[str]:
    """One digest per rank of what it held after every step (outputs[rank][step])."""
    early = {i: barrier_early(step, [outputs[r][i] for r in range(world_size)], world_size, tolerance_s)
             for i, step in enumerate(steps) if step["op"] == "barrier"}
    out = []
    for rank in range(world_size):
        items: list[Any] = []
        for i, step in enumerate(steps):
            if step["op"] == "barrier":
                items.append(["barrier", rank not in early[i]])
            elif _want(step, rank, world_size) is None:
                items.append(None)
            else:
                got = outputs[rank][i]
                items.append([got.get("type"), got.get("dtype"), got.get("device", "cpu"),
                              got.get("device_index") == got.get("current_index"), _plain(got.get("values"))])
        out.append(_digest(items))
    return out


def wanted_digests(steps: list[dict[str, Any]], world_size: int) -> list[str]:
    """The digest of every rank that held exactly what the contract says (held_digests' counterpart)."""
    return [_digest([_want(s, rank, world_size) for s in steps]) for rank in range(world_size)]


def group_evidence(steps: list[dict[str, Any]], outputs: list[list[dict[str, Any]]] | None, world_size: int,
                   problems: int) -> dict[str, Any]:
    """The compact record of one group's program: its step count, each rank's digest (None: no
    outputs came back) and the number of problems the live judging found."""
    return {"steps": len(steps), "world_size": world_size, "problems": problems,
            "digests": None if outputs is None else held_digests(steps, outputs, world_size)}


def small_program(ws: int, seed0: int) -> list[dict[str, Any]]:
    """The short program of the group checks (CC-006, CC-007, CC-008): allreduce, broadcast from
    the last rank, a message from the last rank to rank 0."""
    base = {"dtype": "float32", "lib": "torch", "n": 4}
    steps = [{**base, "op": "allreduce", "reduce": "SUM"}, {**base, "op": "broadcast", "root": ws - 1},
             {**base, "op": "sendrecv", "src": ws - 1, "dst": 0}]
    for i, s in enumerate(steps):
        s["seed"] = seed0 + i
    return steps


def isolation_layouts(groups: int, pool: int) -> list[tuple[list[int], list[int]]]:
    """CC-007's groups over a pool of `pool` members: (the pool indexes of its members, their
    ranks): sizes 2..pool in turn, every other group with its ranks reversed."""
    out = []
    for g in range(groups):
        size = 2 + g % (pool - 1)
        ranks = list(range(size)) if g % 2 == 0 else list(reversed(range(size)))
        out.append(([(g + i) % pool for i in range(size)], ranks))
    return out
