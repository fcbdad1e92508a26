"""Trust by construction: every field has a status, and verify holds each field to it.

The table (schemas/report.trust.yaml) is walked against the report schema and a real
Statement; each field of the table is then perturbed alone and re-signed: a recomputed or
cross-checked field must be rejected, an informational one must not matter. Then the attack
classes one at a time: cross-field contradictions, incomplete runs, timestamps, Ray versions,
inputs the code cannot compute with, sign/verify symmetry.
"""
from __future__ import annotations

import copy
import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from conformance.catalog import data, datafiles
from conformance.catalog.capabilities import compute_capabilities, load_profiles
from conformance.cli.main import main
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, keys, trust, trust_table
from conformance.signing.canonical import canonical_json
from conformance.signing.keyring import key_from_file, trusted_key
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import verify_path
from conformance.signing.verify.lines import ORDER
from signing_support import build_report, retier, shard_reports, stable_only_check, suite, write_releases, write_report_dir

NOW = datetime(2026, 3, 2, tzinfo=timezone.utc)  # the verifier's clock: a day after the test runs


def schema_paths(node: dict[str, Any], prefix: str = "") -> list[str]:
    """Every property path the report schema declares (`[]` for list items)."""
    out = []
    for key, sub in (node.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        out.append(path)
        out += schema_paths(sub, path)
    if isinstance(node.get("items"), dict):
        out += schema_paths(node["items"], f"{prefix}[]")
    return out


def test_every_report_schema_field_has_a_trust_status() -> None:
    table = trust_table.load_table()
    paths = schema_paths(datafiles.load_schema("report"))
    assert len(paths) > 80
    missing = [p for p in paths if p not in table["report"]]
    assert not missing, f"fields of report.schema.json with no status in schemas/report.trust.yaml: {missing}"


def test_every_table_entry_names_a_field_that_exists() -> None:
    """No stale entry: each is a schema field, or lies below a schema field that is an open object."""
    table = trust_table.load_table()
    schema = datafiles.load_schema("report")
    declared = set(schema_paths(schema))
    for path in table["report"]:
        if path in declared or ("." not in path and "[" not in path and schema.get("additionalProperties", True)):
            continue  # a schema field, or a top-level field the open schema allows (plugin_artifact)
        ancestors = [path[:i] for i in range(len(path)) if path[i] in ".["]
        assert any(a in declared for a in ancestors), f"{path}: not below any field of the report schema"


def test_every_statement_field_has_a_status() -> None:
    report = build_report(plugin_artifact={"name": "plugin.whl", "sha256": "ab" * 32})
    st = att.build_statement(report, {n: "cd" * 32 for n in att.REPORT_FILES}, "ef" * 32,
                             att.release_descriptors(__import__("conformance.catalog.releases", fromlist=["x"])
                                                     .current_entry()))
    assert trust_table.unknown_fields("statement", st) == []
    leaves = [p for p in trust_table.load_table()["statement"]]
    assert "predicate.rayAcceleratorConformance.tier" in leaves


def test_fact_sources_in_code_and_table_are_the_same() -> None:
    """A source named in the table without an extractor (or the reverse) cannot be forgotten."""
    in_table = {p for sources in trust_table.fact_sources().values() for p, _ in sources}
    assert in_table == set(trust.FACT_SOURCES)
    for name, sources in trust_table.fact_sources().items():
        assert sum(wins for _, wins in sources) == 1, f"fact {name}: exactly one field wins"


def test_checked_by_names_a_verify_line() -> None:
    for section in trust_table.SECTIONS:
        for path, entry in trust_table.load_table()[section].items():
            if "checked_by" in entry:
                assert entry["checked_by"].split(" ")[0] in ORDER, f"{section} {path}: {entry['checked_by']}"


def test_the_docs_show_the_generated_trust_table() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "signing.md").read_text()
    assert trust_table.markdown_table() in text, "run `make docs` (ray-conformance docs)"


# ----------------------------------------------------------------------------- signing helpers

@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("trust")
    pair = keys.write_keypair(d / "k")
    bound = trusted_key(key_from_file(pair.public_path).public_key, "examplecorp", ("ExampleCorp",))
    return {"dir": d, "key": pair.private_path, "trusted": [bound], "releases": write_releases(d / "releases.yaml"),
            "n": 0}


def signed(env: dict[str, Any], report: dict[str, Any]) -> Path:
    env["n"] += 1
    folder = write_report_dir(env["dir"] / f"r{env['n']}", report)
    sign_report_dir(folder, env["key"])
    return folder


def verify(env: dict[str, Any], folder: Path, **kw: Any):
    return verify_path(folder, env["trusted"], releases_file=env["releases"], now=NOW, **kw)


def failing(v) -> dict[str, str]:
    return {line.name: line.detail for line in v.lines if not line.ok}


def test_the_honest_report_verifies(env: dict[str, Any]) -> None:
    for report in (build_report(), full_report()):
        v = verify(env, signed(env, report))
        assert v.ok, failing(v)


# ----------------------------------------------------------------------------- perturbation fuzz

def _concrete(doc: Any, path: str) -> list[tuple[Any, Any]] | None:
    """(container, key) steps to the first value at `path` (`[]`: the first item that has the rest)."""
    tokens: list[Any] = []
    for part in path.split("."):
        name, brackets = part.split("[", 1)[0], part.count("[]")
        tokens.append(name)
        tokens += ["[]"] * brackets

    def walk(node: Any, i: int) -> list[tuple[Any, Any]] | None:
        if i == len(tokens):
            return []
        tok = tokens[i]
        if tok == "[]":
            if not isinstance(node, list):
                return None
            for j, item in enumerate(node):
                rest = walk(item, i + 1)
                if rest is not None:
                    return [(node, j), *rest]
            return None
        if not isinstance(node, dict) or tok not in node:
            return None
        rest = walk(node[tok], i + 1)
        return None if rest is None else [(node, tok), *rest]

    return walk(doc, 0)


def _perturbed(value: Any, status: str, path: str) -> Any:
    """A different value of the same kind: what a hostile vendor edits before re-signing."""
    if path.endswith("nodes[].labels"):  # only domain keys are facts; other labels are fingerprint
        return {**value, "ray.io/accelerator-domain": "forged"}
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 1
    if isinstance(value, str):
        try:
            return (datetime.fromisoformat(value.replace("Z", "+00:00")).replace(day=2)
                    .isoformat().replace("+00:00", "Z"))
        except ValueError:
            pass
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return ("0" if value[0] != "0" else "1") + value[1:]
        return value + "-x"
    if value is None:
        return "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        if status == "informational" or not value:
            return {**value, "x": 1}
        return {k: v for k, v in value.items() if k != sorted(value)[0]}
    raise AssertionError(type(value))


FLAKY = "DP-020"   # a SHOULD no profile requires: flaky, it costs the top tier's SHOULD share at most


def _profile_only_check() -> str:
    """A check a capability profile requires and no tier does: failing it blocks the profile (its
    `blocking` entry) and leaves the tier as it was."""
    from conformance.catalog.ladder import required_checks

    s = suite()
    tiered = {cid for t in s.ladder.tiers for cid in required_checks(t, s.checklist)}
    profiles = compute_capabilities(build_report()["checks"], s.checklist, load_profiles(), {})
    return next(cid for p in profiles for cid in p["required_checks"] if cid not in tiered)


def full_report() -> dict[str, Any]:
    """build_report with the optional parts a real run writes (one profile's check failing, so the
    profiles name what blocks them; a top-tier check failing, so the tiers do; one waived; one
    flaky with its attempts). Still absent, each skipped by name: a sampled run's selection.nodes
    (its per-node evidence), selection.environment (a size knob), cluster.history's reason and
    retried, the manifest's expected domains. The shard records are perturbed in a merge (below)."""
    report = build_report({_profile_only_check(): "fail", stable_only_check(): "fail", FLAKY: "flaky"})
    flaky = next(c for c in report["checks"] if c["id"] == FLAKY)   # as tests/cli/test_flakes_verify.py records one
    flaky["attempts"] = [{"test": flaky["tests"][0], "attempt": 1, "outcome": "fail", "reason": "r", "duration_s": 0.1},
                         {"test": flaky["tests"][0], "attempt": 2, "outcome": "pass", "reason": None, "duration_s": 0.15}]
    report["manifest_path"] = "manifest.yaml"
    report["manifest"]["accelerator"]["expected"] = {"devices_per_node": 4, "accelerator_type": "NPU-X1"}
    report["environment"]["hostname"] = "host"
    report["cluster"].update(address=None, notes=["a note"])
    report["checks"][0].update(log_excerpt="a log line", log_files=["logs/x.log"])
    report["preflight"] = {"ok": True, "duration_s": 1.5, "nodes": 2,
                           "findings": [{"level": "warning", "where": "host", "message": "m", "detail": "d"}]}
    report["host"] = {"before": {"ray_processes": 0}, "after": {"ray_processes": 0}, "left_behind": {}}
    report["sections"] = {"Topology": {"rows": []}}
    report["next_steps"] = {"next_tier": None, "conditions": ["c"], "shape_ceiling": {"tier": "stable", "reason": "r"},
                            "blocking": [{"id": "DP-001", "level": "MUST", "requirement": "r", "doc": "d",
                                          "action": "a"}]}
    # what every real run writes beside them, as the committed example run wrote it
    real = json.loads((Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json").read_text())
    report["cluster"].update(history=real["cluster"]["history"], machinery=real["cluster"]["machinery"])
    report["environment"].update(cpu_count=real["environment"]["cpu_count"], machine=real["environment"]["machine"])
    report["preflight"]["host"] = real["preflight"]["host"]
    report["next_steps"]["shape_ceiling"]["slack"] = real["next_steps"]["shape_ceiling"]["slack"]
    # as conformance/report/build.py writes them: the profiles of the release, and the artifact a
    # run given --plugin-artifact names
    report["capabilities"] = compute_capabilities(report["checks"], suite().checklist, load_profiles(),
                                                  report["manifest"])
    report["plugin_artifact"] = {"name": "plugin.whl", "sha256": "ab" * 32}
    # a failure the release waives, as conformance/report/results.py records it, the release's
    # waivers digest beside it (build.py), and the host's load while a check ran
    waivers, waivers_sha256 = data.load_waivers()
    w = waivers[0]
    waived = next(c for c in report["checks"] if c["id"] == w.check)
    waived.update(outcome="waived", reason=f"waived ({w.issue}, expires {w.expires}): {w.reason}; was fail: f",
                  metrics={}, waiver={"check": w.check, "issue": w.issue, "reason": w.reason, "expires": w.expires,
                                      "blocks_tier": w.blocks_tier, "original_outcome": "fail"})
    report["suite"]["waivers_sha256"] = waivers_sha256
    report["checks"][0]["host_load"] = real["checks"][0]["host_load"]
    return retier(report)


# The shard records: a merged report's selection.shards and each merged shard's selection.shard
# (a shard alone is no certification, so they are perturbed where verify meets them: in a merge).
SHARD_RECORDS = ("selection.shards", "selection.shard")


def _is_shard_record(path: str) -> bool:
    return any(path == r or path.startswith((r + ".", r + "[")) for r in SHARD_RECORDS)


def _report_cases() -> list[str]:
    return [p for p in trust_table.load_table()["report"] if "*" not in p and not _is_shard_record(p)]


@pytest.mark.parametrize("path", _report_cases())
def test_each_report_field_perturbed_alone_and_resigned(env: dict[str, Any], path: str) -> None:
    """recomputed / cross-checked: rejected; informational: never matters; signed claim: the
    signature is all that backs it (only: nothing crashes)."""
    report = full_report()
    steps = _concrete(report, path)
    if steps is None:
        pytest.skip(f"{path} is not in the test report")
    entry = trust_table.status("report", path)
    container, key = steps[-1]
    container[key] = _perturbed(container[key], entry["status"], path)
    try:
        folder = signed(env, report)
    except UserError as exc:  # sign refuses first what verify would refuse
        assert entry["status"] != "informational" or "schema" in str(exc), str(exc)
        return
    v = verify(env, folder)
    if entry["status"] in ("recomputed", "cross-checked"):
        assert not v.ok, f"{path} ({entry['status']}) was changed and re-signed, yet verified"
    elif entry["status"] == "informational":
        assert v.ok, (path, failing(v))


@pytest.mark.parametrize("path", list(trust_table.load_table()["statement"]))
def test_each_statement_field_perturbed_alone_and_resigned(env: dict[str, Any], path: str) -> None:
    folder = signed(env, build_report())
    report = json.loads((folder / "report.json").read_text())
    digests = {n: datafiles.sha256_file(folder / n) for n in att.REPORT_FILES}
    from conformance.catalog import releases

    st = att.build_statement(report, digests, datafiles.sha256_file(datafiles.schema_path("report")),
                             att.release_descriptors(releases.current_entry()))
    steps = _concrete(st, path)
    assert steps is not None, path
    container, key = steps[-1]
    container[key] = _perturbed(container[key], "recomputed", path)
    private = keys.load_private_key(env["key"], None)
    envelope = dsse.make_envelope(canonical_json(st), private)
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(envelope))
    (folder / att.BUNDLE_NAME).unlink()
    v = verify(env, folder)
    assert not v.ok, f"Statement {path} was changed and re-signed, yet verified"


# ----------------------------------------------------------------------------- the attack classes

def _with(report: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    report = copy.deepcopy(report)
    container, key = _concrete(report, path)[-1]
    container[key] = value
    return report


@pytest.mark.parametrize("path, value, line, names", [
    ("cluster.nodes", 3, "cross-check nodes", ["shape.nodes", "cluster.nodes"]),
    ("shape.devices_per_node", 8, "cross-check devices_per_node", ["shape.devices_per_node",
                                                                   "environment.devices.nodes[].count"]),
    ("shape.domain_labels", True, "cross-check domain_labels", ["shape.domain_labels",
                                                                "environment.devices.nodes[].labels"]),
])
def test_a_contradiction_is_one_fail_line_naming_both_fields(env: dict[str, Any], path: str, value: Any,
                                                             line: str, names: list[str]) -> None:
    v = verify(env, signed(env, _with(build_report(), path, value)))
    detail = failing(v)[line]
    assert all(n in detail for n in names), detail


def test_a_one_node_run_cannot_claim_two_nodes(env: dict[str, Any]) -> None:
    """cluster.nodes and shape.nodes both say 2, the detected nodes and the manifest say 1."""
    report = build_report(nodes=1)
    report["cluster"]["nodes"] = report["shape"]["nodes"] = 2
    v = verify(env, signed(env, report))
    assert "cross-check nodes" in failing(v)
    assert "environment.devices.nodes says 1" in failing(v)["cross-check nodes"]


@pytest.mark.parametrize("edit, needle", [
    (lambda r: r.update(interrupted=True), "interrupted is True"),
    (lambda r: r.update(interrupted_reason="SIGINT"), "interrupted_reason"),
    (lambda r: r["selection"].update(args=["-k", "not recovery", "conformance/checks"]), "-k not recovery"),
    (lambda r: r["selection"].update(args=["--deselect", "checks/test_x.py::t", "conformance/checks"]), "--deselect"),
    (lambda r: r["selection"].update(args=["-m", "fast"]), "-m fast"),
    (lambda r: r["selection"].update(args=["conformance/checks/test_x.py::test_y"]), "::test_y"),
    (lambda r: r["selection"].pop("whole_checklist_collected"), "whole_checklist_collected"),
])
def test_an_incomplete_run_is_not_a_certification(env: dict[str, Any], edit: Any, needle: str) -> None:
    report = build_report()
    edit(report)
    v = verify(env, signed(env, report))
    assert needle in failing(v).get("selection", ""), failing(v)


@pytest.mark.parametrize("started, finished, needle", [
    ("2026-03-01T12:00:00Z", "2026-03-01T11:00:00Z", "is after finished_at"),
    ("2026-03-01T11:00:00Z", "2026-04-30T11:00:00Z", "in the future"),
    ("2025-12-01T11:00:00Z", "2025-12-01T12:00:00Z", "before the release was published"),
])
def test_timestamps_are_ordered_and_inside_the_window(env: dict[str, Any], started: str, finished: str,
                                                      needle: str) -> None:
    report = build_report()
    report["started_at"], report["finished_at"] = started, finished
    v = verify(env, signed(env, report))
    assert needle in failing(v).get("time", ""), failing(v)


def test_at_bounds_the_finish_too(env: dict[str, Any]) -> None:
    from datetime import date

    v = verify(env, signed(env, build_report()), at=date(2026, 2, 1))
    assert "after --at" in failing(v)["time"]


@pytest.mark.parametrize("ray, needle", [
    ("2.60.not-a-release", "is not a version"), ("2.60.0rc1", "pre-release"), ("2.60.0.dev0", "pre-release"),
    ("2.60", "not a Ray release version"), ("2.60.0+local", "not a Ray release version"),
])
def test_the_ray_version_is_a_release_version(env: dict[str, Any], ray: str, needle: str) -> None:
    report = build_report()
    report["environment"]["ray"] = ray
    v = verify(env, signed(env, report))
    assert needle in failing(v)["validity"]


def test_titles_and_levels_come_from_the_release(env: dict[str, Any]) -> None:
    report = build_report()
    first = report["checks"][0]
    first["level"], first["title"] = "MAY", "anything"
    v = verify(env, signed(env, report))
    assert f"{first['id']}.title" in failing(v)["completeness"] and f"{first['id']}.level" in failing(v)["completeness"]


def test_a_field_without_a_status_is_refused_by_sign_first(env: dict[str, Any]) -> None:
    report = build_report()
    report["certified_by"] = "everyone"
    folder = write_report_dir(env["dir"] / "unknown-field", report)
    with pytest.raises(UserError, match="certified_by have no trust status"):
        sign_report_dir(folder, env["key"])


@pytest.mark.parametrize("raw, needle", [
    ('{"a": 1' + "0" * 400 + "}", "integer of 401 digits"),
    ('{"a": 1e400}', "non-finite"),
    ('{"a": "0001-01-01T00:00:00+14:00"}', "outside the range"),
])
def test_numbers_and_dates_the_code_cannot_compute_with_are_one_line(env: dict[str, Any], raw: str,
                                                                     needle: str) -> None:
    folder = signed(env, build_report())
    report = (folder / "report.json").read_text()
    (folder / "report.json").write_text(report.replace('"schema_version": 1', f'"schema_version": 1, "junk": {raw}', 1))
    with pytest.raises(UserError, match=needle) as exc:
        verify(env, folder)
    assert "\n" not in str(exc.value) and "$.junk.a" in str(exc.value)
    with pytest.raises(UserError, match=needle):
        sign_report_dir(folder, env["key"], overwrite=True)


# ----------------------------------------------------------------------------- the shard records

@pytest.fixture(scope="module")
def merged(env: dict[str, Any]) -> Path:
    """full_report run as two shards (`run --shard 1/2`, `2/2`), each signed, merged by the real
    `merge` command and signed: the folder verify meets, the shards under shards/<i-of-N>/."""
    folders = [signed(env, shard) for shard in shard_reports(full_report())]
    out = env["dir"] / "merged"
    assert main(["merge", *map(str, folders), "--out", str(out)]) == 0
    sign_report_dir(out, env["key"])
    return out


def _write_signed(env: dict[str, Any], folder: Path, report: dict[str, Any]) -> None:
    """What a vendor holding the key does after an edit: report.json and report.md again, signed."""
    from conformance.report.build import render_markdown

    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / "report.md").write_text(render_markdown(report), encoding="utf-8")
    sign_report_dir(folder, env["key"], overwrite=True)


def test_the_honest_merged_report_verifies(env: dict[str, Any], merged: Path) -> None:
    report = json.loads((merged / "report.json").read_text())
    assert [s["shard"] for s in report["selection"]["shards"]] == ["1-of-2", "2-of-2"]
    v = verify(env, merged)
    assert v.ok, failing(v)


@pytest.mark.parametrize("path", [p for p in trust_table.load_table()["report"] if _is_shard_record(p)])
def test_each_shard_record_perturbed_alone_and_resigned(env: dict[str, Any], merged: Path, path: str) -> None:
    """selection.shards in the merged report, selection.shard in its first shard: changed there and
    every signature made again (the shard's, the merged report's digest of it, the merged
    report's); a cross-checked record must be rejected."""
    env["n"] += 1
    folder = env["dir"] / f"m{env['n']}"
    shutil.copytree(merged, folder)
    report = json.loads((folder / "report.json").read_text())
    shard_dir = folder / "shards" / report["selection"]["shards"][0]["shard"]
    in_merged = path.startswith("selection.shards")
    target = report if in_merged else json.loads((shard_dir / "report.json").read_text())
    steps = _concrete(target, path)
    assert steps is not None, f"{path} is not in the {'merged report' if in_merged else 'shard'}"
    entry = trust_table.status("report", path)
    container, key = steps[-1]
    container[key] = _perturbed(container[key], entry["status"], path)
    try:
        if not in_merged:
            _write_signed(env, shard_dir, target)
            report["selection"]["shards"][0]["report_sha256"] = datafiles.sha256_file(shard_dir / "report.json")
        _write_signed(env, folder, report)
    except UserError as exc:  # sign refuses first what verify would refuse
        assert entry["status"] != "informational", str(exc)
        return
    v = verify(env, folder)
    if entry["status"] in ("recomputed", "cross-checked"):
        assert not v.ok, f"{path} ({entry['status']}) was changed and re-signed, yet the merged report verified"
    elif entry["status"] == "informational":
        assert v.ok, (path, failing(v))
