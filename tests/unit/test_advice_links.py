"""Every link the report's advice emits lands on a heading that exists in the docs (GitHub's
anchor rules), so "explained in …" always leads to the text that answers it."""
from __future__ import annotations

import re
from pathlib import Path

from conformance.catalog.data import load_suite_data
from conformance.catalog.manifest_gates import FIELDS_DOC
from conformance.report.guidance import guidance_markdown
from conformance.report.next_steps import next_steps, next_steps_markdown
from conformance.run.hooks import area_docs

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(((?:docs/)[^)#\s]+\.md)(?:#([^)\s]+))?\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    found, seen = set(), {}
    in_code = False
    for line in doc.read_text().splitlines():
        if line.startswith("```") or line.startswith("~~~"):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^#{1,6} (.+)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def assert_resolves(target: str) -> None:
    path, _, anchor = target.partition("#")
    doc = ROOT / path
    assert doc.is_file(), f"{target}: no such document"
    if anchor:
        assert anchor in anchors(doc), f"{target}: no heading with that anchor in {path}"


def test_slug_follows_github() -> None:
    assert slug("Performance method (PF-001..PF-004, `conformance/transport/bench.py`)") == \
        "performance-method-pf-001pf-004-conformancetransportbenchpy"
    assert slug("3. The device checks (DP)") == "3-the-device-checks-dp"


def test_every_area_doc_and_the_manifest_fields_doc_resolve() -> None:
    for target in area_docs().values():
        assert_resolves(target)
    assert_resolves(FIELDS_DOC)
    assert_resolves("docs/tiers.md#shape-policy")


def test_every_link_the_guidance_emits_resolves() -> None:
    """A report where every check is not applicable for a bare manifest (the gated checks link
    the manifest-fields section) or fails: all the advice's links, rendered, resolve."""
    data = load_suite_data()
    bare = {"accelerator": {"manager": "m:M", "resource_name": "X",
                            "expected": {"devices_per_node": 1, "accelerator_type": "x"}}}
    for outcome in ("not_applicable", "fail"):
        checks = [{"id": c.id, "area": c.area, "level": c.level, "outcome": outcome, "reason": "r"}
                  for c in data.checklist.active()]
        from conformance.catalog.ladder import RunContext, compute_tiers
        tier, tiers = compute_tiers(checks, data.checklist, data.ladder, RunContext(False, 1, None))
        report = {"checks": checks, "tier": tier, "tiers": tiers, "manifest": bare, "cluster": {"nodes": 1}}
        report["next_steps"] = next_steps(report, data.checklist, data.ladder, area_docs())
        text = "\n".join(guidance_markdown(report) + next_steps_markdown(report["next_steps"]))
        links = LINK.findall(text)
        assert links, text[:500]
        for path, anchor in links:
            assert_resolves(f"{path}#{anchor}" if anchor else path)
        if outcome == "not_applicable":
            dp017 = next(b for b in report["next_steps"]["blocking"] if b["id"] == "DP-017")
            assert dp017["doc"] == FIELDS_DOC
            section = (ROOT / "docs/writing-a-plugin.md").read_text().split("### Manifest fields that decide")[1]
            assert "accelerator.hosts.without_device" in section.split("\n## ")[0]   # the text answers it
