"""The RL weight-sync scenario (WL-001): one trainer, inference workers on other nodes, K rounds.

Each round the trainer rewrites its weights in place (a training step), publishes them once
through the transport, and every worker takes the same ref (Ray moves the tensors before the
worker's method runs). The driver knows round k's bytes from the layout alone
(conformance.areas.workload.model.expected), so it judges every worker's digest against them, and
against round k-1's to name a stale copy; the trainer's own copy is digested again after its
workers took it. Memory of every actor is read after every round. The same payload then goes
through Ray's object store for a few rounds: the per-round time beside it is the figure a CI
gates between two runs (recorded, never judged here: speed is measured in benchmarks/).

Pure judging helpers (`round_problems`, `memory_problems`) take digests and snapshots, so they
are unit-tested without Ray.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance.areas.workload import model
from conformance.rdt import payloads


@dataclass
class SyncPlan:
    """What one run of the scenario moves (from the check's params and the device probe)."""

    device: str
    entries: list[dict[str, Any]]
    rounds: int
    store_rounds: int
    receivers: int

    @property
    def state_bytes(self) -> int:
        return model.nbytes(self.entries)


@dataclass
class SyncRecord:
    """What the scenario saw: per-round times, problems, memory series by actor label."""

    round_s: list[float] = field(default_factory=list)
    store_round_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    memory: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    round_wrong: list[int] = field(default_factory=list)   # per round: the problems it showed (the judge's evidence)

    def figures(self, plan: SyncPlan) -> dict[str, Any]:
        """The figures (ray-conformance diff gates names ending in _s: lower is better; _per_s and
        _speedup: higher is better). The per-round series are named so diff leaves them alone
        (one round's time is too noisy to gate), and so is the object store's median (Ray's
        figure, not the vendor's; it enters the speedup)."""
        out: dict[str, Any] = {"rounds": len(self.round_s), "state_bytes": plan.state_bytes,
                               "tensors": model.tensor_count(plan.entries), "receivers": plan.receivers,
                               "round_seconds": [round(x, 4) for x in self.round_s],
                               "wrong_per_round": list(self.round_wrong),
                               "store_round_seconds": [round(x, 4) for x in self.store_round_s]}
        if self.round_s:
            med = statistics.median(self.round_s)
            out["median_round_s"] = round(med, 4)
            out["sync_bytes_per_s"] = round(plan.state_bytes * plan.receivers / med) if med > 0 else None
        if self.round_s and self.store_round_s:
            store = statistics.median(self.store_round_s)
            out["median_store_round_seconds"] = round(store, 4)
            med = statistics.median(self.round_s)
            out["object_store_speedup"] = round(store / med, 3) if med > 0 else None
        return out


def round_problems(round_no: int, label: str, got: object, expect: object, previous: Any | None,
                   device: str) -> list[str]:
    """What is wrong with one worker's copy in round `round_no`: stale (exactly the previous
    round's bytes), mixed (some tensors of each), or other wrong bytes; tensors on another device
    type than the transport's."""
    diffs = payloads.compare(expect, got, payloads.EXACT_FIELDS)
    problems = []
    if diffs:
        if previous is not None and payloads.same_bytes(previous, got):
            problems.append(f"round {round_no}: {label} holds round {round_no - 1}'s weights (stale: "
                            f"the transport served an older version)")
        else:
            stale = _stale_tensors(got, expect, previous)
            kind = f"mixed versions: {stale} tensor(s) of round {round_no - 1}, the rest wrong or new" if stale else \
                "wrong bytes"
            problems.append(f"round {round_no}: {label} holds {kind}: {'; '.join(diffs[:3])}"
                            + (f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""))
    wrong_device = sorted({t["device"] for _, t in payloads.tensors_in(got) if t.get("device") != device})
    if wrong_device:
        problems.append(f"round {round_no}: {label} received tensors on {', '.join(wrong_device)}, not on the "
                        f"transport's device {device!r}")
    return problems


def _stale_tensors(got: object, expect: object, previous: Any | None) -> int:
    if previous is None:
        return 0
    now = dict(payloads.tensors_in(got))
    before = dict(payloads.tensors_in(previous))
    fresh = dict(payloads.tensors_in(expect))
    return sum(1 for k, t in now.items()
               if k in before and t.get("sha256") == before[k].get("sha256") != fresh.get(k, {}).get("sha256"))


def memory_problems(series: dict[str, list[dict[str, Any]]], warmup: int, max_growth: int,
                    leak_per_round: int) -> list[str]:
    """Memory that is not flat over rounds, per actor and probe (host RSS, device memory in use):
    after `warmup` rounds, growth beyond `max_growth` bytes, or growth of at least `leak_per_round`
    bytes in every one of at least three judged rounds (a leak per object, too small per round to
    reach the total bound in a short run, repeats in every round; noise does not)."""
    problems = []
    for label, snaps in series.items():
        judged = snaps[warmup:]
        for probe in ("held_bytes", "device_used_bytes"):
            read = [s.get(probe) for s in judged]
            if len(read) < 2 or any(v is None for v in read):
                continue
            values = [int(v) for v in read if v is not None]
            steps = [int(b) - int(a) for a, b in zip(values, values[1:])]
            total = int(values[-1]) - int(values[0])
            if total > max_growth:
                problems.append(f"{label}: {probe} grew {total} bytes over {len(steps)} rounds "
                                f"(bound {max_growth}): memory is not flat over rounds")
            elif len(steps) >= 3 and all(s >= leak_per_round for s in steps):
                problems.append(f"{label}: {probe} grew in every round (by {min(steps)}..{max(steps)} bytes, "
                                f">= {leak_per_round} each): a leak per published object")
    return problems


def problems_line(groups: list[list[str]], most: int = 4) -> str:
    """One failure reason for problems found by different parts of a scenario (the transport's
    rounds, memory, the broadcast's rounds), at most `most` shown (pure): taken from each
    non-empty group in turn, so a second defect is named beside many findings of a first."""
    queues = [list(g) for g in groups if g]
    shown: list[str] = []
    while len(shown) < most and any(queues):
        for q in queues:
            if q and len(shown) < most:
                shown.append(q.pop(0))
    total = sum(len(g) for g in groups)
    return f"{total} problem(s): " + "; ".join(shown) + (f" (+{total - len(shown)} more)" if total > len(shown) else "")


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0
