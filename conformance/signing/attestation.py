"""The signed statement for a report folder, and `sign_report_dir` (used by `sign` and `run --sign-key`).

The statement is an in-toto Statement v1 with the test-result predicate:
  subject        report.json, junit.xml, report.md (and the plugin artifact from report.json's
                 `plugin_artifact: {name, sha256}`) by sha256, so editing any of them after
                 signing breaks verification;
  configuration  ResourceDescriptors for the suite release and the checklist / tier ladder /
                 report-schema (/ waivers) digests the run used;
  passedTests / warnedTests / failedTests  check ids (every check lands in exactly one list);
  rayAcceleratorConformance  a namespaced extension with the claimed tier and report.json's sha256.
Everything here is derived from report.json, which is what the verifier recomputes from.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance import SUITE_NAME
from conformance.catalog import data
from conformance.errors import UserError
from conformance.signing import dsse, keys
from conformance.signing.canonical import canonical_json, loads_strict

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
FAILED_OUTCOMES = ("fail", "error")
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
    return data.sha256_bytes(text.encode("utf-8"))


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
    from conformance.signing.releases import DESCRIPTOR_NAMES

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


def _write_new(path: Path, data: bytes, overwrite: bool) -> None:
    """Write `data` to `path`; without `overwrite`, never replace an existing file."""
    if overwrite:
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def sign_report_dir(report_dir: Path, key_path: Path, passphrase: bytes | None = None,
                    *, overwrite: bool = False, allow_insecure_key_mode: bool = False) -> Path:
    """Sign the report in `report_dir`; write report.intoto.json (and report.sigstore.json).

    Refuses (UserError) whatever verify would refuse, first and with verify's own line
    (signing/submission.py): a report file missing, a symlink leaving the folder, a file over its
    cap, report.json not strict JSON or not schema-valid, a field without a trust status, an
    envelope over verify's size cap. Also refuses a key that cannot be loaded or whose file is
    open to group/others (unless `allow_insecure_key_mode`), and an existing envelope unless
    `overwrite`. Returns the path of report.intoto.json.
    """
    from conformance.signing import releases, submission

    report_dir = Path(report_dir)
    if not report_dir.is_dir():
        raise UserError(f"sign: {report_dir} is not a directory")
    read = submission.read_folder(report_dir)
    report = read.report
    problem = submission.schema_problem(report, submission.report_schema_for(report))
    if problem:
        raise UserError(f"sign: refused, verify would say: FAIL schema: report.json: {problem}")
    plugin_artifact(report)
    problem = submission.trust_problem("report", report)
    if problem:
        raise UserError(f"sign: refused, verify would say: FAIL trust: {problem}")
    targets = [report_dir / ENVELOPE_NAME, report_dir / BUNDLE_NAME]
    if not overwrite:
        for t in targets:
            if t.exists() or t.is_symlink():
                raise UserError(f"sign: {t} already exists; refusing to overwrite (pass --force to re-sign)")
    private_key = keys.load_private_key(Path(key_path), passphrase, allow_insecure_mode=allow_insecure_key_mode)
    statement = build_statement(report, read.digests(), data.sha256_file(data.schema_path("report")),
                                release_descriptors(releases.current_entry()))
    envelope = dsse.make_envelope(canonical_json(statement), private_key)
    texts = [(json.dumps(envelope, indent=2, sort_keys=True, allow_nan=False) + "\n").encode(),
             (json.dumps(dsse.make_bundle(envelope), indent=2, sort_keys=True, allow_nan=False) + "\n").encode()]
    for target, text in zip(targets, texts):
        problem = submission.envelope_size_problem(target, len(text))
        if problem:
            raise UserError(f"sign: refused, verify would say: {problem}")
    try:
        for target, text in zip(targets, texts):
            _write_new(target, text, overwrite)
    except FileExistsError as exc:
        raise UserError(f"sign: {exc.filename} already exists; refusing to overwrite") from None
    return targets[0]
