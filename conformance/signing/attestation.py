"""The signed statement for a report folder (signing it: conformance.signing.sign).

The statement is an in-toto Statement v1 with the test-result predicate:
  subject        report.json, junit.xml, report.md (and the plugin artifact from report.json's
                 `plugin_artifact: {name, sha256}`) by sha256, so editing any of them after
                 signing breaks verification;
  configuration  ResourceDescriptors for the suite release and the checklist / tier ladder /
                 report-schema (/ waivers) digests the run used;
  passedTests / warnedTests / failedTests  check ids (every check lands in exactly one list);
  rayAcceleratorConformance  a namespaced extension with the claimed tier and report.json's sha256.
Everything here is derived from report.json, which is what the verifier recomputes from. It
reads report.json as JSON on purpose: the Statement restates its fields as written (what the
signature binds), the red team's raw signer (redteam/harness.py) builds one over hostile JSON, and
verify's subjects line reads plugin_artifact before the report schema holds.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance import SUITE_NAME
from conformance.catalog import datafiles
from conformance.errors import UserError
from conformance.signing.canonical import loads_strict

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
EXTENSION = "rayAcceleratorConformance"  # in-toto allows extension fields; no '.' or '$'
EXTENSION_SCHEMA_VERSION = 1

REPORT_JSON = "report.json"
REPORT_FILES = (REPORT_JSON, "junit.xml", "report.md")
ENVELOPE_NAME = "report.intoto.json"
BUNDLE_NAME = "report.sigstore.json"

# How per-check outcomes map onto the predicate's three lists (the predicate has no skip list).
PASSED_OUTCOMES = ("pass",)
FAILED_OUTCOMES = ("fail", "error", "flaky")   # flaky: failed, then passed on a re-run (never a pass)
WARNED_OUTCOMES = ("waived", "skip", "not_applicable")

CHECKLIST_RD = "tiers/checklist.yaml"
TIERS_RD = "tiers/tiers.yaml"
SCHEMA_RD = "schemas/report.schema.json"
WAIVERS_RD = "tiers/waivers.yaml"

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def suite_uri(version: str) -> str:
    return f"pkg:pypi/{SUITE_NAME}@{version}"


def outcome_lists(checks: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """passedTests / warnedTests / failedTests: sorted check ids by outcome."""
    lists: dict[str, list[str]] = {"passedTests": [], "warnedTests": [], "failedTests": []}
    for c in checks:
        outcome = c.get("outcome")
        key = ("passedTests" if outcome in PASSED_OUTCOMES else
               "failedTests" if outcome in FAILED_OUTCOMES else "warnedTests")
        lists[key].append(str(c.get("id")))
    return {k: sorted(v) for k, v in lists.items()}


def predicate_result(lists: Mapping[str, list[str]], tier: str | None) -> str:
    """FAILED if any check failed/errored or no tier was reached, WARNED if any was not a plain pass."""
    if lists["failedTests"] or tier is None:
        return "FAILED"
    return "WARNED" if lists["warnedTests"] else "PASSED"


def plugin_artifact(report: Mapping[str, Any]) -> dict[str, str] | None:
    """report.json's optional `plugin_artifact: {name, sha256}`, shape-checked."""
    art = report.get("plugin_artifact")
    if art is None:
        return None
    if not isinstance(art, dict) or not isinstance(art.get("name"), str) or not art["name"] \
            or not isinstance(art.get("sha256"), str) or not _SHA256.match(art["sha256"]):
        raise UserError("report.json: plugin_artifact: expected {name: non-empty string, sha256: 64 hex digits}")
    if art["name"] in REPORT_FILES:
        raise UserError(f"report.json: plugin_artifact.name: {art['name']!r} collides with a report file name")
    return {"name": art["name"], "sha256": art["sha256"]}


def expected_subject_names(report: Mapping[str, Any]) -> list[str]:
    art = plugin_artifact(report)
    return ([art["name"]] if art else []) + list(REPORT_FILES)


def configuration(report: Mapping[str, Any], schema_sha256: str,
                  release_data: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """ResourceDescriptors for what the run was configured with (suite release + data digests).

    The first ones come from report.json's `suite` block; `release_data` ({descriptor name:
    sha256}, from the release entry) adds every other data file that decides a tier (waivers,
    labels, all schemas), so the signature binds the whole release, not only the checklist.
    """
    suite = report["suite"]
    rds: list[dict[str, Any]] = [
        {"name": SUITE_NAME, "uri": suite_uri(suite["version"])},
        {"name": CHECKLIST_RD, "digest": {"sha256": suite["checklist_sha256"]}},
        {"name": TIERS_RD, "digest": {"sha256": suite["tiers_sha256"]}},
        {"name": SCHEMA_RD, "digest": {"sha256": suite.get("report_schema_sha256") or schema_sha256}},
    ]
    if suite.get("waivers_sha256"):
        rds.append({"name": WAIVERS_RD, "digest": {"sha256": suite["waivers_sha256"]}})
    named = {rd["name"] for rd in rds}
    for name, sha in sorted((release_data or {}).items()):
        if name not in named:
            rds.append({"name": name, "digest": {"sha256": sha}})
    return rds


def environment_sha256(report: Mapping[str, Any]) -> str:
    """sha256 of report.json's environment block, JSON with sorted keys (what the statement binds)."""
    text = json.dumps(report.get("environment"), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return datafiles.sha256_bytes(text.encode("utf-8"))


def build_statement(report: Mapping[str, Any], digests: Mapping[str, str], schema_sha256: str,
                    release_data: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The in-toto Statement for `report`; `digests` maps each report file name to its sha256.

    Pure: the same report and digests always give the same (canonically encoded) statement.
    """
    art = plugin_artifact(report)
    subjects = ([{"name": art["name"], "digest": {"sha256": art["sha256"]}}] if art else [])
    subjects += [{"name": name, "digest": {"sha256": digests[name]}} for name in REPORT_FILES]
    lists = outcome_lists(report["checks"])
    manifest = report.get("manifest") or {}
    ext: dict[str, Any] = {"schemaVersion": EXTENSION_SCHEMA_VERSION,
                           "suiteVersion": report["suite"]["version"],
                           "tier": report.get("tier"),
                           "reportSha256": digests[REPORT_JSON],
                           "finishedAt": report.get("finished_at"),
                           "manifestSha256": report.get("manifest_sha256"),
                           "rayVersion": (report.get("environment") or {}).get("ray"),
                           "environmentSha256": environment_sha256(report)}
    for field in ("vendor", "product"):
        if isinstance(manifest.get(field), str):
            ext[field] = manifest[field]
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
            "predicate": {"result": predicate_result(lists, report.get("tier")),
                          "configuration": configuration(report, schema_sha256, release_data),
                          **lists, EXTENSION: ext}}


def release_descriptors(entry: Mapping[str, Any]) -> dict[str, str]:
    """{ResourceDescriptor name: sha256} of a release entry (releases.current_entry() shape)."""
    from conformance.catalog.releases import DESCRIPTOR_NAMES

    out = {DESCRIPTOR_NAMES[f]: str(entry[f]) for f in DESCRIPTOR_NAMES if entry.get(f)}
    out.update({f"schemas/{name}": str(sha) for name, sha in (entry.get("schemas_sha256") or {}).items()})
    return out


def parse_report(raw: bytes, source: str) -> dict[str, Any]:
    """report.json bytes -> dict (duplicate keys refused); one-line UserError otherwise."""
    try:
        doc = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{source}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise UserError(f"{source}: invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{source}: expected a JSON object")
    return doc


# Size caps (docs/signing.md "Limits"): a real envelope is a few KB, report.json ~100 KB.
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
MAX_REPORT_FILE_BYTES = 32 * 1024 * 1024


def read_file(path: Path, what: str, *, max_bytes: int = MAX_REPORT_FILE_BYTES, within: Path | None = None) -> bytes:
    """A regular file of at most `max_bytes` (strict_input.read_regular); one-line UserError otherwise."""
    from conformance.catalog import strict_input

    return strict_input.read_regular(Path(path), what, max_bytes=max_bytes, within=within)


def write_new(path: Path, data: bytes, overwrite: bool) -> None:
    """Write `data` to `path`; without `overwrite`, never replace an existing file."""
    if overwrite:
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
