"""Docs tables generated from the data files (the checklist and the tier ladder are the source)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tabulate import tabulate

from conformance.catalog.data import SuiteData, load_suite_data
from conformance.catalog.ladder import required_checks


def params_text(params: dict[str, Any]) -> str:
    """A check's thresholds as `name=value` pairs for the docs table ('-' when it has none)."""
    return "<br>".join(f"`{k}={v}`" for k, v in params.items()).replace("|", "/") or "-"


def checklist_markdown(data: SuiteData) -> str:
    rows = [[c.id, c.area, c.level, c.title, c.requirement.replace("|", "/"), params_text(c.params), c.since]
            for c in data.checklist.active()]
    return tabulate(rows, headers=["id", "area", "level", "title", "requirement", "params", "since"],
                    tablefmt="github")


def tiers_markdown(data: SuiteData) -> str:
    rows = []
    for t in data.ladder.tiers:
        conds = []
        for c in t.get("conditions", []):
            conds.append({"transport_declared": "a transport is declared",
                          "min_nodes": f">= {c.get('value')} nodes",
                          "should_share": f">= {float(c.get('value', 0)):.0%} of SHOULD checks pass"}[c["kind"]])
        ids = required_checks(t, data.checklist)
        rows.append([t["name"], t["summary"], ", ".join(ids) or "-", "; ".join(conds) or "-",
                     "yes" if t.get("allow_waived") else "no"])
    return (tabulate(rows, headers=["tier", "summary", "requires (in addition to the tiers below)", "conditions",
                                    "waived counts"], tablefmt="github")
            + "\n\nTiers are cumulative. skip, not_applicable and error never count as passed.")


SHAPE_POLICY_TEXT = """\
Some checks need more hardware than a product may have: a task holding two devices needs two
devices per node, a pre-set visible-devices variable is only meaningful with three, transfers
between nodes need two nodes, and domain packing needs nodes that carry interconnect, slice or
rack labels. On hardware without that shape such a check ends `not_applicable` — never `pass` —
and the report names the **hardware fact** that caused it, from what Ray detected (the report's
`shape`: nodes in the run, devices per node, domain labels), never from the manifest's claims.

The report then states the **ceiling**: the highest tier this shape can reach even if every other
check passes (`next_steps.shape_ceiling`). A tier is out of reach when one of its MUST checks
needs more than the shape, when its `min_nodes` condition exceeds the run's nodes, or when its
SHOULD share cannot be met without the checks the shape rules out. Example: a product with two
devices per node can never pass DP-015; one without domain labels loses TL-008 and TL-014, and
with one node TL-010 and TR-006 too, which keeps it below stable's 80 % SHOULD share.

Whether such a `not_applicable` counts against the SHOULD share is the ladder's decision, as data
(`tiers.yaml`, `shape_policy.exempt_from_should_share`): `false` (today) means it counts as not
passed, so stable stays a statement about hardware that can do everything the checklist asks.
Every run's report ends with the next tier's blocking checks: each with its requirement, the doc
section that explains it and what to change (`next_steps` in report.json, "To reach …" in
report.md)."""


def shape_policy_markdown(data: SuiteData) -> str:
    """The shape policy section of docs/tiers.md: the text above, and the needs table from tiers.yaml."""
    policy = data.ladder.shape_policy
    rows = []
    for need in policy.get("needs", []):
        what = []
        if "min_devices_per_node" in need:
            what.append(f">= {need['min_devices_per_node']} devices per node")
        if "min_nodes" in need:
            what.append(f">= {need['min_nodes']} nodes")
        if need.get("domain_labels"):
            what.append("domain labels on the nodes with devices")
        if need.get("partition_faults"):
            what.append("(the run's environment, not the hardware) a cluster whose nodes can be partitioned: "
                        "never a suite-started one; counted in the ceiling and its SHOULD slack only")
        levels = ", ".join(f"{cid} ({data.checklist.by_id()[cid].level})" for cid in need["ids"])
        rows.append([levels, "; ".join(what)])
    exempt = "yes" if policy.get("exempt_from_should_share") else "no"
    return (SHAPE_POLICY_TEXT + "\n\n" + tabulate(rows, headers=["checks", "need from the hardware's shape"],
                                                  tablefmt="github")
            + f"\n\nShape-caused not_applicable left out of the SHOULD share: **{exempt}**.")


def check_index_markdown(data: SuiteData, teeth_table: dict[str, Any]) -> str:
    """For every check, in one row: requirement, params, the test(s) that evidence it and the broken
    variant(s) shown to fail it (tests/teeth.yaml), so a newcomer finds each in one step."""
    from conformance.catalog.check_index import tests_of_checks, variants_of_checks

    tests = tests_of_checks()
    variants = variants_of_checks(teeth_table)
    rows = [[c.id, c.level, c.title, c.requirement.replace("|", "/"), params_text(c.params),
             "<br>".join(f"`{t}`" for t in tests.get(c.id, ())) or "-",
             "<br>".join(f"`{v}`" for v in variants.get(c.id, ())) or "-"]
            for c in data.checklist.active()]
    return tabulate(rows, headers=["id", "level", "title", "requirement", "params",
                                   "test (conformance/checks/)", "broken variant (tests/teeth.yaml)"],
                    tablefmt="github")


def load_teeth_table(docs_dir: Path) -> dict[str, Any] | None:
    """tests/teeth.yaml of the source checkout beside `docs_dir` (None in an installed package)."""
    from conformance.catalog.data import read_yaml_or_json

    path = Path(docs_dir).resolve().parent / "tests" / "teeth.yaml"
    return read_yaml_or_json(path, what="teeth table") if path.is_file() else None


TRUST_BEGIN = "<!-- trust table: generated by `ray-conformance docs` from schemas/report.trust.yaml -->"
TRUST_END = "<!-- end of trust table -->"


def with_trust_table(text: str) -> str:
    """signing.md's text with the generated trust table between its markers (appended if absent)."""
    from conformance.signing.trust import markdown_table

    block = f"{TRUST_BEGIN}\n\n{markdown_table()}\n\n{TRUST_END}"
    if TRUST_BEGIN in text and TRUST_END in text:
        head, rest = text.split(TRUST_BEGIN, 1)
        return head + block + rest.split(TRUST_END, 1)[1]
    return text.rstrip("\n") + "\n\n## Trust status of every field\n\n" + block + "\n"


def write_docs(out_dir: Path) -> list[Path]:
    data = load_suite_data()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    signing = out_dir / "signing.md"
    if signing.is_file():  # a hand-written page with one generated table
        signing.write_text(with_trust_table(signing.read_text()))
        written.append(signing)
    teeth = load_teeth_table(out_dir)
    if teeth is not None:
        path = out_dir / "check-index.md"
        path.write_text("# Check index: requirement, params, test and broken variant of every check\n\n"
                        "<!-- generated by `ray-conformance docs` from tiers/checklist.yaml, the check modules' "
                        "marks and tests/teeth.yaml; do not edit by hand -->\n\n"
                        + check_index_markdown(data, teeth) + "\n")
        written.append(path)
    for name, body, title in (("checklist.md", checklist_markdown(data), "Checklist"),
                              ("tiers.md", tiers_markdown(data) + "\n\n## Shape policy\n\n"
                               + shape_policy_markdown(data), "Tier ladder")):
        path = out_dir / name
        path.write_text(f"# {title}\n\n<!-- generated by `ray-conformance docs` from tiers/*.yaml; "
                        "do not edit by hand -->\n\n" + body + "\n")
        written.append(path)
    guide = out_dir / "writing-a-plugin.md"
    if guide.is_file():
        from conformance.catalog.manifest_gates import gates_markdown, splice
        guide.write_text(splice(guide.read_text(), gates_markdown(data.checklist)))
        written.append(guide)
    return written
