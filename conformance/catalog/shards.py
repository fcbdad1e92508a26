"""A certification split into shards: `run --shard I/N` runs one deterministic slice of the
checklist plus the mandatory core, `merge` folds the N signed shards into one report (pure
functions; the pytest plugin, the merge and verify call them).

Why slices by area and cluster shape: a shape is a cluster the run starts, most of a shard's
fixed cost; checks that share a shape and an area go to one shard together, so a shape is started
in two shards only when it must (the shared shape carries most areas: splitting it by area is
what balances the shards). The core (tiers/tiers.yaml `shards.core`, release data: the device
contract, cheap and without a cluster) runs in every shard, so the merge can tell that every
shard ran on the same hardware: their core outcomes, preflight facts and shape must agree (as
Khronos VK-GL-CTS runs a mandatory case list in every shard).

Each shard records its slice of the whole plan (`selection.shard`: index, count, the plan, the
core), and its recorded command line carries `--conformance-shard=I/N`: the merge holds the two
equal (a shard renamed or re-numbered by hand is refused) and the plans equal across shards.

Why merge and verify hold the recorded plan structurally and do not recompute it: the planner
balances by the checks' typical durations (tiers/run.yaml `durations`), which are re-measured
between releases and belong to no release, so a recomputed plan would refuse an older honest run
whenever they change. What trust needs of a plan is its structure, which the recorded plan shows
itself (report.merge.plan_problems): every shard records the same plan, each planned check is a
check of the release once and no core check, the core is the release's, the checks that record
one measurement twice (SAME_SHARD) share a shard, and each shard ran exactly its slice and the
core. Which other checks share a shard gains a vendor nothing: every shard runs on the same
machine (the core, environment and shape agree) and passes its own verification, and the count
alone, the vendor's choice, already moves every check between shards.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AbstractSet, Any, Iterable, Mapping, Sequence

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
    """A release's tiers.yaml `shards` (Ladder.knobs.shards): the most shards a run may be split
    into, the window (hours) from the first shard's start to the last one's end, the mandatory core."""

    max_count: int
    window_h: float
    core: tuple[str, ...]


# The checks that record one measurement of a run twice, so the evidence line compares their
# records (conformance.signing.merged_evidence): PF-002 and PF-003 copy PF-001's sweep
# (signing/same_measurement.py), TR-001 and TR-005 record the one dtype probe (signing/same_probe.py).
# A plan keeps each group in one shard: the planner never splits one, and merge and verify refuse a
# recorded plan that does (held-out round 34, S1: PF-002 and PF-003 cut from PF-001's sweep).
SAME_SHARD: tuple[tuple[str, ...], ...] = (("PF-001", "PF-002", "PF-003"), ("TR-001", "TR-005"))


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


def _group_head(cid: str, present: AbstractSet[str]) -> str:
    """The first member of `cid`'s SAME_SHARD group among `present` (`cid` when it has no group)."""
    group = next((g for g in SAME_SHARD if cid in g), (cid,))
    return min(c for c in group if c in present or c == cid)


def units(checks: Mapping[str, tuple[str, str]], durations: Mapping[str, float], default_s: float,
          core: Iterable[str] = ()) -> list[Unit]:
    """`checks`: id -> (area, shape) of the checks to split (the core left out); cost: the typical
    durations of tiers/run.yaml. A SAME_SHARD group goes with its first member's unit."""
    skip = set(core)
    groups: dict[tuple[str, str], list[str]] = {}
    for cid in checks:
        if cid not in skip:
            area, shape = checks[_group_head(cid, set(checks) - skip)]
            groups.setdefault((shape, area), []).append(cid)
    return [Unit(shape, area, tuple(sorted(ids)), sum(float(durations.get(c, default_s)) for c in ids))
            for (shape, area), ids in sorted(groups.items())]


def atoms(unit: Unit) -> list[tuple[str, ...]]:
    """The unit's checks as the pieces a split may not cut: each SAME_SHARD group one piece."""
    out: dict[str, list[str]] = {}
    for cid in unit.checks:
        out.setdefault(_group_head(cid, set(unit.checks)), []).append(cid)
    return [tuple(v) for v in out.values()]


def _split(unit: Unit, durations: Mapping[str, float], default_s: float) -> tuple[Unit, Unit]:
    pieces = atoms(unit)
    half = (len(pieces) + 1) // 2
    def part(chosen: list[tuple[str, ...]]) -> Unit:
        checks = tuple(sorted(c for piece in chosen for c in piece))
        return Unit(unit.shape, unit.area, checks, sum(float(durations.get(c, default_s)) for c in checks))

    return part(pieces[:half]), part(pieces[half:])


def plan_shards(checks: Mapping[str, tuple[str, str]], count: int, *, durations: Mapping[str, float],
                default_s: float, core: Iterable[str] = ()) -> list[list[str]]:
    """The slices of a run split into `count` shards (slice i is shard i+1's, core excluded):
    deterministic for the same checks, durations and count. Units of one shape and area are
    placed longest first on the least loaded shard, a shard already starting that shape preferred
    on a tie; when there are fewer units than shards, the largest is split (its shape then
    started twice because it must), never through a SAME_SHARD group."""
    todo = units(checks, durations, default_s, core)
    while len(todo) < count and any(len(atoms(u)) > 1 for u in todo):
        big = max((u for u in todo if len(atoms(u)) > 1), key=lambda u: (u.cost, len(u.checks), u.shape, u.area))
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


def release_plan(check_ids: Iterable[str], count: int, checklist: Any, core: Sequence[str],
                 durations: Mapping[str, Any]) -> list[list[str]]:
    """The plan `run --shard I/N` makes of `check_ids` (the checks it placed): each check's area
    and cluster shape from `checklist` (a catalog.data.Checklist), the release's `core`
    (Ladder.knobs.shards.core) and the typical `durations` (tiers/run.yaml `durations`: default_s,
    checks). Only the run plans: merge and verify hold the recorded plan's structure (the module
    docstring says why). A check the checklist does not name, or one of the core, is left out."""
    by_id = checklist.by_id()
    placed = {cid: (by_id[cid].area, by_id[cid].shape() or NO_SHAPE) for cid in check_ids
              if cid in by_id and cid not in core}
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
