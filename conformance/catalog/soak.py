"""Provisional checks and their soak (issue 48): when a new check may start to count.

A new check enters tiers/checklist.yaml `provisional: true`: it runs and is reported, counted
toward nothing (catalog.data.Checklist.counted), so a check that is itself flaky or wrong on a
correct plugin never blocks a tier while it is young (Kubernetes promotes a conformance test
only after it ran flake-free for two weeks). Each CI run of the reference plugin records its
outcome for each provisional check in tiers/soak.yaml; a release promotes a check (drops its
`provisional`) only when its last `soak_runs` recorded runs all passed.

Pure functions over a Checklist and the soak record; catalog.data loads the record (load_soak,
validated by schemas/soak.schema.json) and refuses what soak_problems finds, the docs (docgen)
show soak_state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, Sequence


class SoakedCheck(Protocol):
    """What these read of a check (catalog.data.Check)."""

    @property
    def id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def provisional(self) -> bool: ...

    @property
    def retired(self) -> bool: ...


class SoakedChecklist(Protocol):
    """What these read of a checklist (catalog.data.Checklist): catalog.data loads the record with
    these functions, so they name what they read, not the class above them (no import back, not
    even a hint)."""

    def by_id(self) -> Mapping[str, SoakedCheck]: ...

    def active(self) -> Sequence[SoakedCheck]: ...

    def provisional(self) -> Sequence[SoakedCheck]: ...


@dataclass(frozen=True)
class Soak:
    """tiers/soak.yaml: the green runs a promotion needs, and each check's recorded CI runs."""

    soak_runs: int
    runs: dict[str, tuple[dict[str, Any], ...]]

    def green_streak(self, cid: str) -> int:
        """How many of the check's most recent recorded runs passed, in a row."""
        streak = 0
        for run in reversed(self.runs.get(cid, ())):
            if run.get("outcome") != "pass":
                break
            streak += 1
        return streak

    def soaked(self, cid: str) -> bool:
        return self.green_streak(cid) >= self.soak_runs

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> "Soak":
        """From a schema-valid tiers/soak.yaml (catalog.data.parse_soak validates it first)."""
        return cls(soak_runs=int(doc["soak_runs"]),
                   runs={cid: tuple(dict(r) for r in runs) for cid, runs in doc["checks"].items()})


def soak_problems(checklist: SoakedChecklist, soak: Soak) -> list[str]:
    """One line each (the loader refuses the first): a record of an unknown check, a provisional
    check with no record, a check that was soaking and counts now without its soak (a promotion
    before `soak_runs` green runs in a row)."""
    known = checklist.by_id()
    out = [f"soak: checks.{cid}: unknown check id (tiers/checklist.yaml has none)" for cid in soak.runs if cid not in known]
    for c in checklist.provisional():
        if c.id not in soak.runs:
            out.append(f"soak: checks.{c.id}: the provisional check has no soak record; expected a list "
                       "(empty until its first CI run)")
    for cid in soak.runs:
        promoted = known.get(cid)
        if promoted is not None and not promoted.provisional and not promoted.retired and not soak.soaked(cid):
            out.append(f"checklist: {cid}.provisional: promoted after {soak.green_streak(cid)} green run(s) in a row; "
                       f"the soak needs {soak.soak_runs} (tiers/soak.yaml soak_runs): keep it provisional")
    return out


def entry_problems(checklist: SoakedChecklist, released: Iterable[str]) -> list[str]:
    """A check new since the last release (`released`: that release's check ids) that does not
    enter provisional: it would count before any soak."""
    before = set(released)
    return [f"checklist: {c.id}: a new check enters provisional (provisional: true, and a soak record in "
            "tiers/soak.yaml); it counts once a release promotes it after its soak"
            for c in checklist.active() if c.id not in before and not c.provisional]


def soak_state(checklist: SoakedChecklist, soak: Soak) -> list[dict[str, Any]]:
    """Each provisional check and each check promoted on a soak record: {id, title, state, green,
    needed, runs} (state: provisional | promoted), for the docs."""
    out = []
    for c in checklist.active():
        if not c.provisional and c.id not in soak.runs:
            continue
        out.append({"id": c.id, "title": c.title, "state": "provisional" if c.provisional else "promoted",
                    "green": soak.green_streak(c.id), "needed": soak.soak_runs,
                    "runs": len(soak.runs.get(c.id, ()))})
    return out


def soak_markdown(rows: Iterable[Mapping[str, Any]], soak_runs: int) -> str:
    """The docs' table of provisional and promoted checks (or a sentence when there is none)."""
    rows = list(rows)
    if not rows:
        return "No check is provisional today, and none was promoted on a soak record."
    lines = ["| check | title | state | green runs in a row | needed | runs recorded |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['id']} | {r['title']} | {r['state']} | {r['green']} | {r['needed']} | {r['runs']} |" for r in rows]
    return "\n".join(lines)
