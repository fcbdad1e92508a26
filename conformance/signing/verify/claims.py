"""The signed Statement agrees with report.json, and every field it derives from the per-check
outcomes (test lists, result, summary counts) equals what the outcomes give."""
from __future__ import annotations

from collections import Counter
from typing import Any

from conformance.catalog import datafiles
from conformance.catalog.strict_input import as_list
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing.verify.case import Judged
from conformance.signing.verify.lines import Verification, short

EXTENSION_FIELDS = {"schemaVersion", "suiteVersion", "tier", "reportSha256", "finishedAt", "manifestSha256",
                    "rayVersion", "environmentSha256", "vendor", "product"}


def statement_claims_match_the_report(v: Verification, case: Judged) -> None:
    """`claims`: vendor, product, finishedAt, tier, manifest digest, Ray version, environment and
    configuration (= the release's data files) as report.json states them; the predicate's lists,
    result and the summary as the per-check outcomes give them (the tier: as recomputed, when it was)."""
    st = case.sealed.statement
    assert st is not None  # the registry runs this only on our Statement
    report, document = case.report, case.report.document
    pred, ext = st["predicate"], st["predicate"][att.EXTENSION]
    problems = []
    if ext.get("schemaVersion") != att.EXTENSION_SCHEMA_VERSION or "schemaVersion" not in ext:
        problems.append(f"{att.EXTENSION}.schemaVersion is not {att.EXTENSION_SCHEMA_VERSION}")
    unknown = sorted(set(ext) - EXTENSION_FIELDS)
    if unknown:
        problems.append(f"{att.EXTENSION} has unknown field(s) {terminal(unknown[:5], limit=200)}")
    report_sha256 = case.sealed.report_sha256
    if ext.get("reportSha256") != report_sha256:
        problems.append(f"reportSha256 {short(ext.get('reportSha256'))} is not report.json's {short(report_sha256)}")
    if ext.get("tier") != report.tier:
        problems.append(f"statement tier {ext.get('tier')!r} differs from report.json's {report.tier!r}")
    if ext.get("suiteVersion") != report.suite.version:
        problems.append(f"statement suiteVersion {ext.get('suiteVersion')!r} differs from report.json's")
    stated: tuple[tuple[str, Any], ...] = (
        ("vendor", report.manifest.get("vendor")), ("product", report.manifest.get("product")),
        ("finishedAt", report.finished_at), ("manifestSha256", report.manifest_sha256),
        ("rayVersion", report.environment.ray), ("environmentSha256", att.environment_sha256(document)))
    for key, value in stated:
        if ext.get(key) != value:
            problems.append(f"statement {key} {terminal(repr(ext.get(key)), limit=80)} differs from "
                            f"report.json's {terminal(repr(value), limit=80)}")
    release = case.release
    want_config = att.configuration(document, datafiles.sha256_file(case.schema_file),
                                    release.descriptors() if release else None)
    config = as_list(pred.get("configuration"))
    if not isinstance(pred.get("configuration"), list) \
            or not all(isinstance(rd, dict) and isinstance(rd.get("name"), str) for rd in config):
        problems.append("configuration is not a list of named ResourceDescriptors")
    got_config = {rd["name"]: rd for rd in config if isinstance(rd, dict) and isinstance(rd.get("name"), str)}
    for rd in want_config:
        if rd["name"] == att.SCHEMA_RD and report.suite.report_schema_sha256 is None:
            continue  # the signer filled in its own schema digest; the release check covers schemas
        if got_config.get(rd["name"]) != rd:
            problems.append(f"configuration {rd['name']} does not match report.json and the release")
    extra = sorted(set(got_config) - {rd["name"] for rd in want_config})
    if extra or len(config) != len(got_config):
        problems.append(f"configuration has unexpected or repeated descriptors {terminal(extra[:5], limit=200)}")
    lists = att.outcome_lists(c.document for c in report.checks)
    for key, ids in lists.items():
        signed_ids = pred.get(key)
        if not isinstance(signed_ids, list) or not all(isinstance(i, str) for i in signed_ids) \
                or sorted(signed_ids) != ids:
            problems.append(f"{key} does not match the per-check outcomes")
    tier = v.recomputed_tier if v.tier_known else report.tier
    result = att.predicate_result(lists, tier)
    if pred.get("result") != result:
        problems.append(f"result {pred.get('result')!r}, the outcomes give {result!r}")
    counts = Counter(c.outcome for c in report.checks)
    summary = report.summary
    wrong = sorted(k for k in set(summary) | set(counts) if k in summary and summary[k] != counts.get(k, 0))
    if wrong:
        problems.append(f"summary counts wrong for {', '.join(wrong)}")
    v.judge("claims", problems, f"statement matches report.json; result {result} and test lists "
                                f"match the per-check outcomes")
