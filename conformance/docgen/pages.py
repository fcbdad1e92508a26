"""Docs tables generated from the data files (the checklist and the tier ladder are the source)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tabulate import tabulate

from conformance.catalog.data import Check, SuiteData, load_suite_data
from conformance.catalog.ladder import required_checks
from conformance.docgen.blocks import DocError, check_entry, check_facts, param_text, splice


def params_text(params: dict[str, Any]) -> str:
    """A check's thresholds as `name=value` pairs ('-' when it has none)."""
    return ", ".join(f"`{k}={v}`" for k, v in params.items()) or "-"


WRAP = 100   # the generated pages' line width (a paragraph wrapped: Markdown joins its lines)


def checklist_markdown(data: SuiteData) -> str:
    """One block per check (its heading, level, area, cluster shape and release, the requirement, the params):
    an edit to one check changes that check's lines only, and no line is wider than its own text
    (a table row held a whole requirement and every param: up to 2,256 characters)."""
    import textwrap

    def wrapped(text: str) -> str:
        return "\n".join(textwrap.wrap(" ".join(text.split()), width=WRAP, break_long_words=False,
                                        break_on_hyphens=False))

    blocks = [f"### {c.id}: {c.title}\n\n{c.level} · area `{c.area}` · cluster `{c.cluster}` · since {c.since}\n\n{wrapped(c.requirement)}"
              f"\n\n" + wrapped(f"- params: {params_text(c.params)}") + "\n" + wrapped(f"- judged: {judged_text(c)}")
              + ("\n" + wrapped(f"- scenario bound: {scenario_text(c)}") if c.scenario else "")
              + ("\n" + wrapped(f"- whose waits: {waits_text(c)}") if c.waits else "")
              + ("\n" + wrapped(f"- diff gates: {merit_text(c)}") if c.merit else "")
              for c in data.checklist.active()]
    return "\n\n".join(blocks)


def scenario_text(check: Check) -> str:
    """A timed scenario's total bound: its steps (`scenario_bound:`) and what the params give."""
    from conformance.catalog.scenario_bounds import scenario_bound, text

    return f"`{text(check.scenario or ())}` = {scenario_bound(check):g} s"


def waits_text(check: Check) -> str:
    """Whose time each of the check's waits is (`waits:`), by what bounds it."""
    from conformance.catalog.declared_waits import UNNAMED

    names = {"plugin": "the plugin's (never stretched)", "ray": "Ray's and the host's (stretched by the run's measurement)"}
    own = {"plugin": "its scenario's bound", "ray": "the suite's nominal bounds"}
    return "; ".join(f"{names[o]} bounded by " + ", ".join(own[o] if n == UNNAMED else f"`{n}`" for n in check.waits.of(o))
                     for o in ("plugin", "ray") if check.waits and check.waits.of(o))


NORMALISED = {"reference": "a fraction of `{ref}`, measured in the same run",
              "host": "no same-run reference: within the host's change it is the host's",
              "itself": "as it is"}


def merit_text(check: Check) -> str:
    """What `ray-conformance diff` gates for the check (its merit figures) and what normalises
    each (docs/ci.md)."""
    if check.merit is None:
        return "nothing"
    return "; ".join(f"`{f.metric}` ({f.better} is better), " + NORMALISED[f.normalised_by].format(ref=f.reference)
                     for f in check.merit.figures)


def judges_path(area: str) -> str:
    """Where an area's judges live: its judges module, or its judges package (split by check group)."""
    import importlib.util

    spec = importlib.util.find_spec(f"conformance.areas.{area}.judges")
    package = spec is not None and spec.submodule_search_locations is not None
    return f"conformance/areas/{area}/judges{'/' if package else '.py'}"


def judged_text(check: Check) -> str:
    """How a reader of the report can trust the check's outcome: the judge that recomputes it
    from its evidence (in the run and in verify), or why it rests on the vendor's word."""
    if check.judge:
        return f"by `{check.judge}` ({judges_path(check.area)}), in the run and again in verify"
    if check.unjudged:
        return f"not recomputed, on the vendor's word: {check.unjudged}"
    return "not declared"


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
                     "yes" if t.get("allow_waived") else "no", "yes" if t.get("allow_flaky") else "no"])
    findings = data.checklist.findings()
    levels = ", ".join(sorted({c.level for c in findings}))
    uncounted = (f" Checks of level {levels} ({', '.join(c.id for c in findings)}) are findings for the SIG: "
                 "recorded and shown, never counted toward a tier, a SHOULD share or a capability profile, "
                 "whatever their outcome (tiers/vocabulary.yaml `uncounted_levels`)." if findings else "")
    return (tabulate(rows, headers=["tier", "summary", "requires (in addition to the tiers below)", "conditions",
                                    "waived counts", "flaky counts"], tablefmt="github")
            + "\n\nTiers are cumulative. skip, not_applicable and error never count as passed; flaky counts only "
              "where the tier says so (below)." + uncounted)


FLAKES_TEXT = """\
A check that fails once in twenty runs of a correct plugin must not block a tier, and a check
that passes on a retry must not hide a real intermittent bug. Two rules, both data:

- **Flakes are named, never hidden.** A test of a check that fails or errors runs again in the
  same run, at most the release's `retries` times (`tiers/tiers.yaml`, `flakes.retries`), each
  attempt a fresh setup, call and teardown. The report records every attempt (outcome, reason,
  duration: `checks[].attempts`). A check that failed and then passed is **`flaky`**: never
  `pass`; it counts as not passed for a tier unless the tier says `allow_flaky: true` (and for a
  capability profile unless the profile does, `tiers/capabilities.yaml`), the run exits 1, and
  report.md, the terminal and `review` list it for the SIG with its attempts. `verify` recomputes
  it from the attempts: a `pass` whose attempts record a failure is refused.
- **A new check enters provisional.** It is added to `tiers/checklist.yaml` with
  `provisional: true`: it runs and is reported (`checks[].provisional`), and counts toward no
  tier, SHOULD share or capability profile, like a finding. Each CI run of the reference plugin
  records its outcome in `tiers/soak.yaml`: the release manager appends it from that run's
  reports (`python -m conformance.catalog.soak_record REPORT_DIR... --commit SHA --ci URL
  --write`, which refuses a report of any other plugin, a twin's included, and one CI run
  twice); a release promotes the check (drops `provisional`)
  only once its last `soak_runs` recorded runs all passed. The loader refuses a promotion without
  that soak and a provisional check without a record (`conformance/catalog/soak.py`)."""


def flakes_markdown(data: SuiteData) -> str:
    """The flakes section of docs/tiers.md: the rule, and the state from tiers.yaml and soak.yaml."""
    from conformance.catalog.data import load_soak
    from conformance.catalog.soak import soak_markdown, soak_state

    soak = load_soak()
    allowed = [t["name"] for t in data.ladder.tiers if t.get("allow_flaky")]
    return (FLAKES_TEXT + f"\n\nToday: a failed test runs again at most **{data.ladder.retries}** time(s); "
            f"flaky counts toward {', '.join(allowed) if allowed else 'no tier'}; a promotion needs "
            f"**{soak.soak_runs}** green CI runs in a row.\n\n" + soak_markdown(soak_state(data.checklist, soak),
                                                                            soak.soak_runs))


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


def not_applicable_when(data: SuiteData) -> dict[str, list[str]]:
    """check id -> when it ends not_applicable, from the data that decides it: the manifest gates
    (schemas/manifest.schema.json) and the shape policy's needs (tiers/tiers.yaml)."""
    from conformance.catalog.manifest_gates import load_gates

    out: dict[str, list[str]] = {}
    for g in load_gates(data.checklist):
        joiner = " and " if g.when == "all_missing" else " / "
        for cid in g.checks:
            out.setdefault(cid, []).append("without " + joiner.join(f"`{f}`" for f in g.fields) + " (manifest)")
    for need in data.ladder.shape_policy.get("needs", []):
        what = []
        if "min_devices_per_node" in need:
            what.append(f"with fewer than {need['min_devices_per_node']} devices per node")
        if "min_nodes" in need:
            what.append(f"on fewer than {need['min_nodes']} nodes")
        if need.get("domain_labels"):
            what.append("without domain labels on the nodes with devices")
        if need.get("partition_faults"):
            what.append("without a cluster whose nodes can be partitioned")
        for cid in need["ids"]:
            out.setdefault(cid, []).extend(what)
    return out


def check_facts_of(data: SuiteData, teeth_table: dict[str, Any] | None, *,
                   with_tests: bool = False) -> dict[str, list[str]]:
    """check id -> the facts the docs show for it (params, cluster, when not applicable, waiver, tests,
    broken variants), each read from where it is declared."""
    from conformance.catalog.check_index import guards_of_checks, tests_of_checks, variants_of_checks

    tests = tests_of_checks()
    variants = variants_of_checks(teeth_table) if teeth_table is not None else {}
    guards = guards_of_checks(teeth_table) if teeth_table is not None else {}
    na = not_applicable_when(data)
    waived: dict[str, str] = {}
    for w in data.waivers:
        scope = f", for the {', '.join(w.transports)} transport{'s' if len(w.transports) > 1 else ''} only" \
            if w.transports else ""
        text = f"{w.issue} (until {w.expires}{scope}{', blocks the tier' if w.blocks_tier else ''})"
        waived[w.check] = f"{waived[w.check]}; {text}" if w.check in waived else text
    good = [r for r in (teeth_table or {}).get("runs", []) if not r.get("catches")]
    shown = {c.id: [r["id"] for r in good if c.id in (r.get("passes") or [])] for c in data.checklist.findings()}
    return {c.id: check_facts(c, tests=tests.get(c.id, ()) if with_tests else (), variants=variants.get(c.id),
                              not_applicable=na.get(c.id), waiver=waived.get(c.id),
                              guards=guards.get(c.id), shown=shown.get(c.id))
            for c in data.checklist.active()}


def area_checks_markdown(data: SuiteData, area: str, teeth_table: dict[str, Any] | None) -> str:
    """The `checks:<area>` block of an area's page: its checks in checklist order, one entry each."""
    facts = check_facts_of(data, teeth_table)
    checks = [c for c in data.checklist.active() if c.area == area]
    if not checks:
        raise DocError(f"checks:{area}: no active check of that area")
    return "\n".join(check_entry(c, facts[c.id]) for c in checks)


def check_index_markdown(data: SuiteData, teeth_table: dict[str, Any]) -> str:
    """One block per check: its requirement, params, cluster, the test(s) that evidence it and the
    broken variant(s) shown to fail it (tests/teeth.yaml), so a newcomer finds each in one step and an
    edit's diff is that check's block alone."""
    facts = check_facts_of(data, teeth_table, with_tests=True)
    blocks = []
    for c in data.checklist.active():
        lines = [f"### {c.id}: {c.title}", "", f"{c.level} · area `{c.area}`. {c.requirement}", ""]
        lines += [f"- {f}" for f in facts[c.id]]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def load_teeth_table(docs_dir: Path) -> dict[str, Any] | None:
    """tests/teeth.yaml of the source checkout beside `docs_dir` (None in an installed package)."""
    from conformance.catalog.datafiles import read_yaml_or_json

    path = Path(docs_dir).resolve().parent / "tests" / "teeth.yaml"
    return read_yaml_or_json(path, what="teeth table") if path.is_file() else None


TRUST_BEGIN = "<!-- trust table: generated by `ray-conformance docs` from schemas/report.trust.yaml -->"
TRUST_END = "<!-- end of trust table -->"


def with_trust_table(text: str) -> str:
    """signing.md's text with the generated trust table between its markers (appended if absent)."""
    from conformance.signing.trust_table import markdown_table

    block = f"{TRUST_BEGIN}\n\n{markdown_table()}\n\n{TRUST_END}"
    if TRUST_BEGIN in text and TRUST_END in text:
        head, rest = text.split(TRUST_BEGIN, 1)
        return head + block + rest.split(TRUST_END, 1)[1]
    return text.rstrip("\n") + "\n\n## Trust status of every field\n\n" + block + "\n"


def page_blocks(data: SuiteData, teeth_table: dict[str, Any] | None) -> dict[str, str]:
    """Every block a page may hold between `<!-- generated: NAME -->` markers: `checks:<area>` for each
    area with checks, and the blocks each area declares (Area.doc_blocks)."""
    from conformance.areas import AREAS
    from conformance.catalog.data import load_vocabulary
    from conformance.imports import import_ref

    blocks = {f"checks:{area}": area_checks_markdown(data, area, teeth_table)
              for area in dict.fromkeys(c.area for c in data.checklist.active())}
    blocks["areas"] = ", ".join(f"`{a}` ({p})" for a, p in load_vocabulary().area_prefix.items()) + "."
    for area in AREAS:
        if area.doc_blocks:
            blocks.update(import_ref(area.doc_blocks)(data))
    return blocks


def render_docs(out_dir: Path) -> dict[Path, str]:
    """What every generated file and every page with generated blocks under `out_dir` (and the README
    beside it) must hold, from the data as it is now. `write_docs` writes it; the docs test compares."""
    data = load_suite_data()
    out: dict[Path, str] = {}
    signing = out_dir / "signing.md"
    if signing.is_file():  # a hand-written page with one generated table
        out[signing] = with_trust_table(signing.read_text())
    teeth = load_teeth_table(out_dir)
    if teeth is not None:
        out[out_dir / "check-index.md"] = (
            "# Check index: requirement, params, test and broken variant of every check\n\n"
            "<!-- generated by `ray-conformance docs` from tiers/checklist.yaml, the check modules' "
            "marks and tests/teeth.yaml; do not edit by hand -->\n\n" + check_index_markdown(data, teeth) + "\n")
    for name, body, title in (("checklist.md", checklist_markdown(data), "Checklist"),
                              ("tiers.md", tiers_markdown(data) + "\n\n## Shape policy\n\n"
                               + shape_policy_markdown(data) + "\n\n## Flakes and provisional checks\n\n"
                               + flakes_markdown(data), "Tier ladder")):
        out[out_dir / name] = (f"# {title}\n\n<!-- generated by `ray-conformance docs` from tiers/*.yaml; "
                               "do not edit by hand -->\n\n" + body + "\n")
    guide = out_dir / "writing-a-plugin.md"
    if guide.is_file():
        from conformance.catalog.manifest_gates import gates_markdown
        from conformance.catalog.manifest_gates import splice as splice_gates
        out[guide] = splice_gates(guide.read_text(), gates_markdown(data.checklist))
    blocks = page_blocks(data, teeth)
    readme = out_dir.resolve().parent / "README.md"   # the checkout's README, beside its docs/
    pages = sorted(out_dir.glob("*.md")) + ([readme] if teeth is not None and readme.is_file() else [])
    for page in pages:
        text = out.get(page, page.read_text())
        spliced = splice(text, blocks, lambda cid, name, fmt: param_text(data, cid, name, fmt), where=page.name)
        if spliced != text or page in out:
            out[page] = spliced
    return out


def write_docs(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in render_docs(out_dir).items():
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written
