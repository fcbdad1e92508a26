"""String-keyed reads of report.json stay at its JSON boundary (issue 47): code that judges a report
reads the typed view (conformance/report/view.py), not `report["checks"]` in forty places.

The rule, read off the source with `ast` (pure, no import of the package). A *report read* is

* a subscript `X["k"]`, or a call `X.get("k", ...)`,
* whose key "k" is a string constant naming a field of report.json: a top-level property of
  schemas/report.schema.json or a property of its check entry (`checks[]`),
* on a receiver X that names a report: a variable or attribute whose name is one of REPORT_NAMES
  (`report`, `case.document`, `self.report`, ...), or itself a report read (`report["suite"]["tiers"]`
  counts twice; `report["suite"]["version"]` once: `version` is no field of the report or a check).

What it does not see: a report bound to another name (`doc`, `r`, `d` and `e` name other JSON
throughout: the tiers/manifest YAML, a log record, a check row; the few reports among them, html/page's
`r` and merge's `first`, are renderer and writer code), reads through a helper
(`trust.parse_time(report, "started_at")`) and a check entry's own keys (`c["outcome"]`). It is a
bound that cannot grow back, not a proof: name a report `report`.

A read inside ALLOWED (a module, or one function or class of a module as `path::name`) is the
JSON boundary and does not count: each says why there, and a function's docstring says why it
takes the JSON. Three kinds: the writer and the renderers (the dict being built, and report.md and
report.html rendered from the JSON verify re-renders); code that reads report.json before or
whether or not its schema holds (the schema gate, the signature, names, review rows, decisions);
and code that judges a field as signed in a form an older release's schema did not type (claimed
capabilities, selection.shards). Every other read counts, and fewer than MAX_READS may remain.
Most left are in catalog/, which sits below report/ in the layers (test_layers): its report readers
cannot take the view until the view moves down.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"
REPORT_NAMES = frozenset({"report", "document", "rep", "report_doc", "report_json", "old", "new", "base"})
MAX_READS = 34    # the bound: strictly fewer report reads outside ALLOWED (33 now; 117 when this test was written)

# where string-keyed access to report.json is the point: the JSON boundary, each with why
_RENDERED = "renders report.md/report.html/terminal text from the JSON as written; verify re-renders the JSON as signed"
ALLOWED: dict[str, str] = {
    "conformance/report/view.py": "Report.from_json: the one reader of a schema-valid report into the view",
    "conformance/report/build.py": "the writer: it builds the dict report.json is written from (and report.md)",
    "conformance/report/merge.py": "the writer of a merged report: it builds its dict from the shards' JSON",
    "conformance/run/session.py": "the run's writer: the dict it builds, before report.json is written and validated",
    "conformance/run/hooks.py": "the run's writer: sections it adds to the dict and prints, before it is written",
    "conformance/report/next_steps.py": "computes the next_steps section the writer adds to the dict",
    "conformance/report/html/model.py": _RENDERED,
    "conformance/report/guidance.py": _RENDERED,
    "conformance/report/findings.py": _RENDERED,
    "conformance/report/flakes.py": _RENDERED,
    "conformance/report/coverage.py": _RENDERED,
    "conformance/areas/collective/report.py": _RENDERED,
    "conformance/areas/topology/report.py": _RENDERED,
    "conformance/areas/workload/report.py": _RENDERED,
    "conformance/signing/shards.py::merge_folders": "merge's writer: the signed shard reports it merges into one dict",
    # before (or whether or not) the report schema holds: the JSON as read, every read narrowed
    "conformance/signing/verify/release.py::report_is_schema_valid": "the schema gate: the claimed release picks the schema",
    "conformance/signing/submission.py::report_schema_for": "sign's schema gate: the claimed release picks the schema",
    "conformance/signing/verify/signature.py::signed_by_a_trusted_key_bound_to_the_vendor":
        "a sealed check: the signature's vendor, judged whether or not the schema holds",
    "conformance/identity.py::report_name_problems": "the names sign refuses and review shows, before the schema",
    "conformance/signing/compat_forms.py::compat_name_problems": "the names sign refuses and review shows, before the schema",
    "conformance/signing/review.py::_fill": "a review row for every submission, one that fails its schema included",
    "conformance/signing/review.py::_claimed_capabilities": "a review row for every submission (see _fill)",
    "conformance/signing/decision.py::decide": "a decision on any report verify read, schema-valid or not",
    "conformance/signing/decision.py::build": "the decision Statement decide builds (see decide)",
    "conformance/signing/validity.py::certificate_validity": "dates a decision's report, schema-valid or not (decide)",
    "conformance/signing/attestation.py": "the Statement restates report.json as written; the red team signs hostile JSON",
    # the JSON as signed, in a form an older release's schema did not type
    "conformance/catalog/capabilities.py::verify_claim": "claimed capabilities: a release before profiles let any value",
    "conformance/signing/verify/release_files.py::ReleaseInputs": "claimed capabilities (see verify_claim)",
    "conformance/signing/shards.py::is_merged": "selection.shards: a release before merging let any value",
    "conformance/signing/shards.py::shard_run_problems": "a shard's JSON rebuilt for trust.run_problems (see is_merged)",
    "conformance/signing/shards.py::shard_lines": "selection.shards as signed (see is_merged)",
}


def field_names(schema: dict[str, object] | None = None) -> frozenset[str]:
    """report.json's top-level properties and its check entry's, as the schema declares them."""
    schema = schema or json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    props = schema["properties"]
    assert isinstance(props, dict)
    return frozenset(props) | frozenset(props["checks"]["items"]["properties"])


def _receiver_names_a_report(node: ast.expr, keys: frozenset[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in REPORT_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in REPORT_NAMES
    return _read_key(node, keys) is not None


def _read_key(node: ast.AST, keys: frozenset[str]) -> str | None:
    """The field `node` reads from a report (None: not a report read by the module's rule)."""
    if isinstance(node, ast.Subscript):
        key, receiver = node.slice, node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key, receiver = node.args[0], node.func.value
    else:
        return None
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in keys):
        return None
    return key.value if _receiver_names_a_report(receiver, keys) else None


def _functions(tree: ast.AST) -> dict[ast.AST, str]:
    """Each node -> the name of the outermost function (or class) holding it ('' at module level)."""
    owner: dict[ast.AST, str] = {}
    for top in ast.iter_child_nodes(tree):
        name = top.name if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else ""
        for node in ast.walk(top):
            owner[node] = name
    return owner


def report_reads(source: str, name: str = "<source>") -> list[str]:
    """`name:line function field` for each report read in `source`, function-level ALLOWED left out."""
    keys = field_names()
    tree = ast.parse(source)
    owner = _functions(tree)
    found = []
    for node in ast.walk(tree):
        key = _read_key(node, keys)
        if key is not None and f"{name}::{owner.get(node, '')}" not in ALLOWED:
            line = getattr(node, "lineno", 0)
            found.append((line, f"{name}:{line} {owner.get(node, '') or '-'} {key}"))
    return [hit for _, hit in sorted(found)]


def _all_reads() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel not in ALLOWED:
            found += report_reads(path.read_text(), rel)
    return found


def test_the_counter_counts_what_the_rule_says() -> None:
    src = ('def f(report, doc, case):\n'
           '    a = report["checks"]; b = report.get("tier"); c = case.document["suite"]["version"]\n'
           '    d = doc["checks"]; e = report["nonsense"]; g = report.get(name); h = report["suite"]["tiers"]\n'
           'x = self.report.get("summary", {})\n')
    assert report_reads(src, "m.py") == [
        "m.py:2 f checks", "m.py:2 f suite", "m.py:2 f tier", "m.py:3 f suite", "m.py:3 f tiers", "m.py:4 - summary"]


def test_the_field_names_are_the_schemas() -> None:
    names = field_names()
    assert {"suite", "checks", "tier", "selection", "manifest_sha256"} <= names      # top level
    assert {"outcome", "metrics", "waiver", "duration_s"} <= names                     # a check entry


def test_every_allowed_entry_names_a_module_or_function_that_exists() -> None:
    for entry in ALLOWED:
        path, _, function = entry.partition("::")
        assert (ROOT / path).is_file(), entry
        if function:
            tree = ast.parse((ROOT / path).read_text())
            assert function in {n.name for n in tree.body if hasattr(n, "name")}, entry


def test_fewer_report_reads_than_the_bound_outside_the_json_boundary() -> None:
    found = _all_reads()
    print(f"{len(found)} report reads outside the JSON boundary")
    assert len(found) < MAX_READS, (
        f"{len(found)} string-keyed report reads outside the JSON boundary (the bound: fewer than {MAX_READS}); "
        "read the typed view (conformance/report/view.py: Report, CheckResult) instead:\n  " + "\n  ".join(found))
