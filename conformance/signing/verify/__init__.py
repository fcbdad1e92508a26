"""Verify a signed report: every check on its own line, nothing trusted that can be recomputed.

Checks, in order:
  signature     a DSSE signature over PAE(payloadType, payload) by a trusted key
  identity      the signing key is bound (keyring `vendors`) to the report's manifest vendor
  revocation    a key revoked from a date (keyring `revoked`) counts only for reports signed before
                it (signing/revocation.py: the SIG's list of kept reports, else the release's
                publication and finished_at bound the signing date)
  names         the manifest's vendor and product print as they compare (conformance/identity.py)
  bundle        a report.sigstore.json beside report.intoto.json carries the same envelope
  statement     payloadType, Statement type and predicate type are the ones we sign
  subject NAME  each signed file digest equals the file beside the envelope (one line per subject)
  schema        report.json is valid against the release's report schema
  trust         every field of report.json and of the Statement has a trust status
                (schemas/report.trust.yaml: recomputed, cross-checked, signed claim, informational)
  release       the suite version is a known release and the data digests report.json records
                (checklist, tiers, report schema, waivers) are that release's
  release-files the release's label vocabulary and capability profiles are read from the files with
                the release's digests (never the installed ones)
  manifest      the embedded manifest is valid against the release's manifest schema
  environment   Python and torch are inside the suite's declared support (signing/embedded.py)
  claims        the signed statement agrees with report.json (vendor, product, finishedAt, tier,
                manifest digest, Ray version, environment, configuration = the release's data
                files), and every derived field (predicate lists and result, summary counts)
                equals what the per-check outcomes give
  cross-check F each fact several fields state (nodes, devices per node, domain labels, resource,
                accelerator type) is stated alike by all of them, a per-node fact on every node;
                the winner, never one field alone nor a contradicted fact, is the tier input
  time          started_at <= finished_at <= the verifier's clock (and --at), on or after the
                release's publication
  superseded    no later release was published before the run started, and the verifier's clock
                (signing/clock.py) is inside the SIG's window after the next release's publication
                (signing/release_window.py)
  tier          the tier recomputed with compute_tiers equals the claimed tier and per-tier
                detail; waiver semantics (blocks_tier, expiry) come from the release's waivers
                file, never from the report's copy
  completeness  exactly the release's active checks are present, including all the claimed tier needs,
                each with the release's title, area and level
  waivers       each waived check cites a waiver listed in the release's waivers.yaml, unexpired at finished_at
  validity      the run's Ray version is a release version (N.N.N) the release certifies; with `at`, every waiver is
                still unexpired and the tier still holds on that date ("recertification required")
  evidence      each judged check's outcome is what its judge gives on its metrics; every check's
                figures plausible, scenarios of a pass ok, references the manifest's, tests of
                its own area (signing/evidence.py); each check's node coverage is the run's record
                of its clusters (signing/coverage_rule.py), a "not judged: host" verdict carries the
                host's measurements (signing/host_verdict.py)
  summary       the summary counts are recomputed from the per-check outcomes, every key present
  nodes         the per-node checks (DP-008/010/011/012) ran on the seed's choice of the run's recorded
                nodes (sample: recomputed from selection.nodes.seed), or on every one of them (all)
                (catalog/node_sample.py)
  shards        a merged report (`merge`): every shard in shards/<i-of-N>/ verified, one run of one
                machine, every check once, within the window, and this report their merge
                (signing/shards.py, report/merge.py)
  selection     the run executed the whole checklist, uninterrupted, with no recorded pytest
                argument that narrows it, else "not a certification run"

Each check is a small function named for what it holds, in the module of its subject (signature,
release, record, tier, claims, waivers); registry.CHECKS lists them in the order verify_path runs
them, and lines.ORDER is the order a reviewer reads their lines in. The checks before `schema`
read the envelope and the JSON as read; the rest read report.json typed (conformance/report/view.py).

Unreadable input (missing files, an envelope that is not JSON or not DSSE) raises UserError
(exit 2); a failed check is a FAIL line (exit 1).
"""
from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Sequence

from conformance.catalog import releases
from conformance.report.view import Report
from conformance.signing import submission, trust
from conformance.signing.keyring import TrustedKey
from conformance.signing.verify.case import Judged, Sealed
from conformance.signing.verify.envelope import locate_envelope, parse_statement, read_envelope
from conformance.signing.verify.lines import NOT_CHECKED, Verification
from conformance.signing.verify.registry import CHECKS, SchemaGate, SealedCheck
from conformance.signing.verify.release import report_is_schema_valid
from conformance.signing.verify.release_files import release_inputs
from conformance.signing.verify.waivers import effective_checks

__all__ = ["Verification", "effective_checks", "locate_envelope", "read_envelope", "release_inputs", "verify_path"]


def verify_path(path: Path, trusted: Sequence[TrustedKey], *, releases_file: Path | None = None,
                waivers_file: Path | None = None, at: date | None = None,
                now: datetime | None = None) -> Verification:
    """Verify the envelope at `path` (a report folder or the envelope file) against `trusted` keys.

    Waivers come from the release's waivers file (`waivers_file` replaces it: tests, or a SIG's
    own copy). `at`: judge waivers and the Ray window as of that date (`verify --at`). `now`: the
    verifier's clock (tests pin it); no report may finish after it.
    """
    envelope_path = locate_envelope(Path(path))
    env = read_envelope(envelope_path, within=envelope_path.parent if Path(path).is_dir() else None)
    files = submission.read_folder(envelope_path.parent)
    statement, why = parse_statement(env)
    sealed = Sealed(envelope_path, env, files, files.digests(), tuple(trusted), statement, why)
    releases_file = Path(releases_file or releases.default_path())
    known = releases.load_releases(releases_file)
    v = Verification(envelope_path, report=files.report)
    clock = now or trust.utc_now()

    def verify_one(shard: Path) -> Verification:
        return verify_path(shard, trusted, releases_file=releases_file, waivers_file=waivers_file, at=at, now=clock)

    judged: Judged | None = None
    for check in CHECKS:
        if check.needs_statement and statement is None:
            continue
        if isinstance(check, SealedCheck):
            check.holds(v, sealed)
        elif isinstance(check, SchemaGate):
            verdict = report_is_schema_valid(v, sealed, known, releases_file)
            if verdict.problem is None:
                judged = Judged(sealed, Report.from_json(files.report), verdict.release, known, releases_file,
                                verdict.schema_file, waivers_file, clock, at, verify_one)
        elif judged is None:
            for name in check.unchecked:
                v.add(name, False, NOT_CHECKED)
        else:
            check.holds(v, judged)
    return v.ordered()
