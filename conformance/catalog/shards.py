"""A certification split into shards: `run --shard I/N` runs one deterministic slice of the
checklist plus the mandatory core, `merge` folds the N signed shards into one report (pure
functions; the pytest plugin, the merge and verify call them).

Why slices by area and cluster shape: a shape is a cluster the run starts, most of a shard's
fixed cost; checks that share a shape and an area go to one shard together, so a shape is started
in two shards only when it must (the shared shape carries most areas: splitting it by area is
what balances the shards). The core (tiers/run.yaml `shards.core`: the device contract, cheap and
without a cluster) runs in every shard, so the merge can tell that every shard ran on the same
hardware: their core outcomes, preflight facts and shape must agree (as Khronos VK-GL-CTS runs a
mandatory case list in every shard).

Each shard records its slice of the whole plan (`selection.shard`: index, count, the plan, the
core), and its recorded command line carries `--conformance-shard=I/N`: the merge holds the two
equal (a shard renamed or re-numbered by hand is refused) and the plans equal across shards.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

SHARD_OPTION = "--conformance-shard"
NO_SHAPE = "none"      # a check whose checklist entry names no cluster (catalog.clusters.NO_CLUSTER)
_SPEC = re.compile(r"^([0-9]{1,3})/([0-9]{1,3})$")
_LABEL = re.compile(r"^([0-9]{1,3})-of-([0-9]{1,3})$")


@dataclass(frozen=True, order=True)
class Shard:
    """Shard `index` of `count` (1-based), named `i-of-N` as Khronos names its shard logs."""

    index: int
    count: int

    @property
    def spec(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def label(self) -> str:
        return f"{self.index}-of-{self.count}"


@dataclass(frozen=True)
class ShardPolicy:
    """tiers/run.yaml `shards`: the most shards a run may be split into, the window (hours) from
    the first shard's start to the last one's end, and the mandatory core."""

    max_count: int
    window_h: float
    core: tuple[str, ...]


def shard_policy(knobs: Mapping[str, Any]) -> ShardPolicy:
    """The policy of the run knobs (conformance.catalog.data.load_run_knobs(), schema-validated)."""
    s = knobs["shards"]
    return ShardPolicy(int(s["max_count"]), float(s["window_h"]), tuple(s["core"]))


def parse_shard(text: str, max_count: int, what: str = "--shard") -> Shard:
    """`I/N` -> Shard; ValueError naming `what` and what was expected."""
    m = _SPEC.match(str(text).strip())
    index, count = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if not m or not (1 <= index <= count) or not (2 <= count <= max_count):
        raise ValueError(f"{what}: expected I/N with 1 <= I <= N and 2 <= N <= {max_count} (e.g. 1/2), got {text!r}")
    return Shard(index, count)


def parse_label(label: str) -> Shard | None:
    """`i-of-N` (a shard's folder name) -> Shard; None when it is not one."""
    m = _LABEL.match(label)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        return None
    return Shard(int(m.group(1)), int(m.group(2)))


def shard_record(value: object) -> Shard | None:
    """A report's `selection.shard` as a Shard (None when absent or malformed)."""
    if not isinstance(value, Mapping):
        return None
    index, count = value.get("index"), value.get("count")
    if type(index) is not int or type(count) is not int or not 1 <= index <= count:
        return None
    return Shard(index, count)


def recorded_specs(args: Iterable[Any]) -> list[str]:
    """The values of every `--conformance-shard=` in a recorded command line."""
    return [a.partition("=")[2] for a in args if isinstance(a, str) and a.startswith(SHARD_OPTION + "=")]


def without_shard(args: Iterable[Any]) -> list[Any]:
    """A recorded command line without its `--conformance-shard=` (what the merged report records)."""
    return [a for a in args if not (isinstance(a, str) and a.startswith(SHARD_OPTION + "="))]


# ------------------------------------------------------------------ the plan

@dataclass(frozen=True)
class Unit:
    """Checks that share a cluster shape and an area: they go to one shard together."""

    shape: str
    area: str
    checks: tuple[str, ...]
    cost: float


def units(checks: Mapping[str, tuple[str, str]], durations: Mapping[str, float], default_s: float,
          core: Iterable[str] = ()) -> list[Unit]:
    """`checks`: id -> (area, shape) of the checks to split (the core left out); cost: the typical
    durations of tiers/run.yaml."""
    skip = set(core)
    groups: dict[tuple[str, str], list[str]] = {}
    for cid, (area, shape) in checks.items():
        if cid not in skip:
            groups.setdefault((shape, area), []).append(cid)
    return [Unit(shape, area, tuple(sorted(ids)), sum(float(durations.get(c, default_s)) for c in ids))
            for (shape, area), ids in sorted(groups.items())]


def _split(unit: Unit, durations: Mapping[str, float], default_s: float) -> tuple[Unit, Unit]:
    half = (len(unit.checks) + 1) // 2
    def part(checks: tuple[str, ...]) -> Unit:
        return Unit(unit.shape, unit.area, checks, sum(float(durations.get(c, default_s)) for c in checks))

    return part(unit.checks[:half]), part(unit.checks[half:])


def plan_shards(checks: Mapping[str, tuple[str, str]], count: int, *, durations: Mapping[str, float],
                default_s: float, core: Iterable[str] = ()) -> list[list[str]]:
    """The slices of a run split into `count` shards (slice i is shard i+1's, core excluded):
    deterministic for the same checks, durations and count. Units of one shape and area are
    placed longest first on the least loaded shard, a shard already starting that shape preferred
    on a tie; when there are fewer units than shards, the largest is split (its shape then
    started twice because it must)."""
    todo = units(checks, durations, default_s, core)
    while len(todo) < count and any(len(u.checks) > 1 for u in todo):
        big = max((u for u in todo if len(u.checks) > 1), key=lambda u: (u.cost, len(u.checks), u.shape, u.area))
        todo.remove(big)
        todo += _split(big, durations, default_s)
    todo.sort(key=lambda u: (-u.cost, u.shape, u.area, u.checks))
    loads = [0.0] * count
    shapes: list[set[str]] = [set() for _ in range(count)]
    slices: list[list[str]] = [[] for _ in range(count)]
    for u in todo:
        i = min(range(count), key=lambda k: (loads[k], u.shape not in shapes[k], k))
        loads[i] += u.cost
        shapes[i].add(u.shape)
        slices[i] += u.checks
    return [sorted(s) for s in slices]


def release_plan(check_ids: Iterable[str], count: int, checklist: Any, knobs: Mapping[str, Any]) -> list[list[str]]:
    """The plan `run --shard I/N` makes of `check_ids` (the checks it placed): each check's area
    and cluster shape from `checklist` (the release's: a catalog.data.Checklist), the typical
    durations and the core of `knobs` (tiers/run.yaml). The one planner of a run, of `merge` and of
    verify: a recorded plan that is not this one is the vendor's, not the suite's. A check the
    checklist does not name, or one of the core, is left out (a recorded slice naming it differs)."""
    by_id = checklist.by_id()
    core = shard_policy(knobs).core
    placed = {cid: (by_id[cid].area, by_id[cid].shape() or NO_SHAPE) for cid in check_ids
              if cid in by_id and cid not in core}
    durations = knobs["durations"]
    return plan_shards(placed, count, durations=durations["checks"], default_s=float(durations["default_s"]), core=core)


def selection_shard(shard: Shard, plan: Sequence[Sequence[str]], core: Iterable[str]) -> dict[str, Any]:
    """A shard report's `selection.shard`: which shard, the whole plan, the core."""
    return {"index": shard.index, "count": shard.count, "plan": [list(s) for s in plan], "core": sorted(core)}


def ids(value: object) -> list[str]:
    """A recorded list of check ids as one (anything else, a hand-edited record's: none)."""
    return [c for c in value if isinstance(c, str)] if isinstance(value, list) else []


def shard_checks(record: object) -> set[str]:
    """The checks a shard runs: its slice of the plan and the core."""
    if not isinstance(record, Mapping):
        return set()
    raw_plan, raw_index = record.get("plan"), record.get("index")
    plan: list[Any] = raw_plan if isinstance(raw_plan, list) else []
    index: int = raw_index if type(raw_index) is int else 0
    own = ids(plan[index - 1]) if 1 <= index <= len(plan) else []
    return set(own) | set(ids(record.get("core")))
