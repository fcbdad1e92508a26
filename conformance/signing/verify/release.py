"""Which release the report claims, and what that release binds: its report schema (the gate
before report.json is typed), the trust status of every field, its data digests, its files, its
manifest schema and declared support, that no later release superseded it before the run, and that
the verifier's clock is inside the SIG's window for it (signing/release_window.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from conformance.catalog import datafiles, releases
from conformance.sanitize import terminal
from conformance.signing import embedded, release_window, submission, trust
from conformance.signing.verify.case import Judged, Sealed
from conformance.signing.verify.lines import Verification, short


@dataclass(frozen=True)
class SchemaVerdict:
    """The `schema` line's judgement: the claimed release (None: unknown), the schema file used,
    and the most specific error (None: valid)."""

    release: releases.Release | None
    schema_file: Path
    problem: str | None


def report_is_schema_valid(v: Verification, case: Sealed, known: Mapping[str, releases.Release],
                           releases_file: Path) -> SchemaVerdict:
    """`schema`: report.json is valid against the release's report schema (this verifier's when
    the release's file is not available, said on the line). The claimed release is read off the
    JSON as read: no schema has held yet, so every read is narrowed."""
    report = case.document
    version = (report.get("suite") or {}).get("version") if isinstance(report.get("suite"), dict) else None
    release = known.get(version) if isinstance(version, str) else None
    schema_file = (releases.release_file(release, "report_schema_sha256", releases_file) if release else None)
    schema_note = "" if schema_file else " (this verifier's schema; the release's schema file is not available)"
    schema_file = schema_file or datafiles.schema_path("report")
    problem = submission.schema_problem(report, schema_file)
    v.add("schema", problem is None, f"report.json: {problem}" if problem else f"report.json is valid{schema_note}")
    return SchemaVerdict(release, schema_file, problem)


def every_field_has_a_trust_status(v: Verification, case: Judged) -> None:
    """`trust`: every field of report.json and of the Statement has a trust status."""
    st = case.sealed.statement
    problems = [p for p in (submission.trust_problem("report", case.report.document),
                            submission.trust_problem("statement", st) if st is not None else None) if p]
    v.add("trust", not problems, "; ".join(problems) if problems else
          "every field of report.json and the Statement has a trust status (schemas/report.trust.yaml)")


def suite_is_a_known_release(v: Verification, case: Judged) -> None:
    """`release`: the suite version is a known release, and the data digests the report records are its."""
    suite, release = case.report.suite, case.release
    if release is None:
        v.add("release", False, f"suite version {suite.version!r} is not a release this verifier knows "
                                f"({', '.join(sorted(case.known_releases)) or 'none listed'})")
        return
    bad = [f"{f} {short(suite.digest(f))} is not the release's {short(release.digest(f))}"
           for f in releases.REPORT_DIGEST_FIELDS if suite.digest(f) is not None and suite.digest(f) != release.digest(f)]
    v.add("release", not bad, "; ".join(bad) if bad else
          f"{suite.version} is a known release; the report's data digests match it")


def release_files_are_available(v: Verification, case: Judged) -> None:
    """`release-files`: the release's label vocabulary and capability profiles are read from the
    files with its digests; no line for an unknown release."""
    inputs, problems = case.release_inputs
    release = case.release
    if release is None:
        return
    if problems:
        v.add("release-files", False, f"this verifier lacks release {release.version}'s {' and '.join(problems)} "
                                      f"(put them in {releases.archived_path(case.releases_file, release.version, 'labels_sha256').parent})")
    else:
        v.add("release-files", True, f"label vocabulary and capability profiles read from release {release.version}'s files"
                                     + inputs.profiles_note)


def embedded_manifest_and_environment_are_supported(v: Verification, case: Judged) -> None:
    """`manifest`: the embedded manifest against the release's manifest schema; `environment`:
    Python and torch inside the suite's declared support."""
    release, report = case.release, case.report
    schema = releases.release_schema_file(release, "manifest.schema.json", case.releases_file) if release else None
    if release is None:
        v.add("manifest", False, "cannot check: unknown release")
    elif schema is None:
        v.add("manifest", False, f"this verifier lacks release {release.version}'s schemas/manifest.schema.json")
    else:
        problem = embedded.manifest_problem(report, schema)
        v.add("manifest", problem is None, f"the embedded manifest is not one release {release.version} accepts: {problem}"
              if problem else f"the embedded manifest is valid against release {release.version}'s manifest schema")
    problems = embedded.environment_problems(report)
    v.add("environment", not problems, "; ".join(problems) if problems else
          "Python and torch are inside the suite's declared support")


def release_not_superseded_when_the_run_started(v: Verification, case: Judged) -> None:
    """`superseded`: the release the report claims was still the newest when the run started, and
    the verifier's clock is inside the SIG's window for it (signing/release_window.py)."""
    version = case.report.suite.version
    started, _ = trust.parse_time(case.report.document, "started_at")
    grace = release_window.grace_days(case.releases_file)
    problems = [p for p in (trust.superseded_problem(version, started, case.known_releases),
                            release_window.window_problem(version, case.known_releases, case.now.date(), grace)) if p]
    v.add("superseded", not problems, "; ".join(problems) or
          f"no release after {terminal(repr(version), limit=60)} was published before the run started"
          + release_window.window_note(version, case.known_releases, grace))
