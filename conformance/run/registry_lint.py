"""The registry lint: every collected test evidences exactly one known, active checklist item.

Pure: takes each test's node id and the arguments of its `check` marks, and the checklist; returns
the test→check map and the problems (the texts a vendor sees when the registry is inconsistent).
conformance.run.session turns the problems into one pytest.UsageError.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    from conformance.catalog.data import Checklist

USAGE_HEADER = "conformance registry is inconsistent:\n  "


@dataclass
class LintResult:
    item_checks: dict[str, str] = field(default_factory=dict)   # nodeid -> check id
    problems: list[str] = field(default_factory=list)

    def message(self) -> str:
        """The UsageError text: one problem per line."""
        return USAGE_HEADER + "\n  ".join(self.problems)


def lint_registry(items: Iterable[tuple[str, Sequence[Sequence[Any]]]], checklist: Checklist, *,
                  whole_checklist: bool) -> LintResult:
    """Map each test to its check; list what is wrong.

    `items`: (nodeid, [args of each `check` mark]) per collected test, in collection order.
    `whole_checklist`: the bundled checks folder was collected whole, so every active checklist
    item must have a test (a partial selection may leave items out).
    """
    known = checklist.by_id()
    result = LintResult()
    for nodeid, marks in items:
        if not marks:
            result.problems.append(f"{nodeid}: evidences no check (add @pytest.mark.check('XX-000'))")
            continue
        if len(marks) > 1 or len(marks[0]) != 1:
            result.problems.append(f"{nodeid}: must name exactly one check")
            continue
        cid = marks[0][0]
        if cid not in known:
            result.problems.append(f"{nodeid}: names unknown check {cid!r} (not in tiers/checklist.yaml)")
            continue
        if known[cid].retired:
            result.problems.append(f"{nodeid}: names retired check {cid}")
            continue
        result.item_checks[nodeid] = cid
    if whole_checklist:
        covered = set(result.item_checks.values())
        for c in checklist.active():
            if c.id not in covered:
                result.problems.append(f"checklist item {c.id} ({c.title}) has no test")
    return result


def area_problems(items: Iterable[tuple[str, str, str]], areas: Sequence[Any],
                  vocabulary_areas: dict[str, str]) -> list[str]:
    """The area registry against the vocabulary, and each bundled test against its area's folder.

    `items`: (nodeid, check id, the test file's path relative to the bundled checks folder, or ""
    for a test outside it). A DP check's test must sit in the device area's folder: that is where
    the next reader looks for it, and where the threshold lint scans.
    """
    from conformance.catalog.area import registry_problems

    problems = registry_problems(tuple(areas), vocabulary_areas)
    by_prefix = {a.prefix: a for a in areas}
    for nodeid, cid, rel in items:
        area = by_prefix.get(cid.split("-", 1)[0])
        if area is None or not rel:
            continue
        folder = area.checks.rsplit(".", 1)[-1]
        if rel.split("/", 1)[0] != folder:
            problems.append(f"{nodeid}: evidences {cid} of area {area.name}, so it belongs in "
                            f"{area.checks_folder()}/")
    return problems
