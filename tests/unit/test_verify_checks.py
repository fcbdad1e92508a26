"""verify's checks one by one (conformance/signing/verify/): each registered check on a good
report and on the one fault it holds, without signing or the CLI (tests/cli holds the whole path)."""
from __future__ import annotations

import copy
import json
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import datafiles, releases
from conformance.catalog.node_sample import choose
from conformance.report.view import Report
from conformance.signing import attestation as att
from conformance.signing import dsse, submission
from conformance.signing.verify import claims, nodes, record, registry, release, signature, tier, waivers
from conformance.signing.verify.case import Judged, Sealed
from conformance.signing.verify.envelope import parse_statement
from conformance.signing.verify.lines import NOT_CHECKED, ORDER, Verification
from signing_support import FINISHED_AT, build_report, write_releases, write_report_dir

NOW = datetime(2026, 3, 2, tzinfo=timezone.utc)
EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example"   # a real run's folder (the seeded sample, its page)


def _sealed(folder: Path, report: dict[str, Any], statement: dict[str, Any] | None = None) -> Sealed:
    files = submission.read_folder(write_report_dir(folder, report))
    env = dsse.Envelope(dsse.PAYLOAD_TYPE, b"{}", ())
    return Sealed(folder / att.ENVELOPE_NAME, env, files, files.digests(), (), statement, "why")


def _case(tmp_path: Path, report: dict[str, Any] | None = None, *, signed: bool = False, at: date | None = None,
          version: str | None = None) -> Judged:
    report = report or build_report()
    folder = tmp_path / "r"
    sealed = _sealed(folder, report)
    releases_file = write_releases(tmp_path / "releases.yaml")
    known = releases.load_releases(releases_file)
    claimed = known.get(version or report["suite"]["version"])
    if signed:
        statement = att.build_statement(report, sealed.digests, datafiles.sha256_file(datafiles.schema_path("report")),
                                        claimed.descriptors() if claimed else None)
        sealed = Sealed(sealed.envelope_path, sealed.envelope, sealed.files, sealed.digests, (), statement, "ok")
    return Judged(sealed, Report.from_json(sealed.document), claimed, known,
                  releases_file, datafiles.schema_path("report"), None, NOW, at, lambda p: Verification(p))


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """A good signed report's case, shared by the tests that only read it."""
    return _case(tmp_path_factory.mktemp("good"), signed=True)


def _run(check: Any, case: Any, v: Verification | None = None) -> dict[str, tuple[bool, str]]:
    v = v or Verification(Path("x"))
    check(v, case)
    return {line.name: (line.ok, line.detail) for line in v.lines}


# ---------------------------------------------------------------------------- the registry

def test_every_printed_line_is_written_by_a_registered_check() -> None:
    declared = [name for c in registry.CHECKS for name in c.lines]
    assert sorted(set(declared)) == sorted(ORDER)
    assert len(declared) == len(set(declared)), "two checks write one line"


def test_a_check_names_each_line_it_writes_in_its_docstring_and_leaves_unchecked_only_its_own() -> None:
    for c in registry.CHECKS:
        if isinstance(c, registry.SchemaGate):
            continue
        assert set(getattr(c, "unchecked", ())) <= set(c.lines), c
        doc = c.holds.__doc__ or ""
        assert all(f"`{name}" in doc for name in c.lines), (c.holds.__name__, c.lines)


def test_the_schema_gate_sits_between_the_envelope_checks_and_the_report_checks() -> None:
    kinds = [type(c).__name__ for c in registry.CHECKS]
    gate = kinds.index("SchemaGate")
    assert set(kinds[:gate]) == {"SealedCheck"} and set(kinds[gate + 1:]) == {"ReportCheck"}


def test_a_report_that_fails_its_schema_leaves_the_report_checks_unchecked(tmp_path: Path) -> None:
    from conformance.signing.verify import verify_path

    folder = tmp_path / "r"
    report = build_report()
    del report["tiers"]
    write_report_dir(folder, report)
    (folder / att.ENVELOPE_NAME).write_text('{"payloadType": "x", "payload": "", "signatures": [{"keyid": "k", "sig": "AA=="}]}')
    v = verify_path(folder, [], releases_file=write_releases(tmp_path / "releases.yaml"), now=NOW)
    unchecked = sorted(line.name for line in v.lines if line.detail == NOT_CHECKED)
    assert unchecked == sorted({n for c in registry.CHECKS if isinstance(c, registry.ReportCheck)
                                and not c.needs_statement for n in c.unchecked})


# ---------------------------------------------------------------------------- before the schema

def test_statement_of_another_payload_type_is_refused() -> None:
    st, why = parse_statement(dsse.Envelope("text/plain", b"{}", ()))
    assert st is None and why == f"payloadType 'text/plain', expected {dsse.PAYLOAD_TYPE!r}"
    assert _run(signature.statement_is_ours, type("S", (), {"statement": None, "statement_why": why})) == \
        {"statement": (False, why)}


def test_no_trusted_key_is_no_signature(tmp_path: Path) -> None:
    lines = _run(signature.signed_by_a_trusted_key_bound_to_the_vendor, _sealed(tmp_path, build_report()))
    assert lines == {"signature": (False, "no valid signature by any of 0 trusted key(s) (envelope keyids: none)")}


def test_a_vendor_name_with_an_invisible_character_fails_names(tmp_path: Path) -> None:
    report = build_report()
    report["manifest"]["vendor"] = "Ac\u200bme"
    ok, detail = _run(signature.names_print_as_they_compare, _sealed(tmp_path, report))["names"]
    assert not ok and "vendor" in detail


def test_no_bundle_beside_the_envelope_writes_no_bundle_line(tmp_path: Path) -> None:
    assert _run(signature.bundle_carries_the_same_envelope, _sealed(tmp_path, build_report())) == {}


def test_a_subject_that_is_not_name_and_digest_fails_subjects(tmp_path: Path) -> None:
    case = _sealed(tmp_path, build_report(), statement={"subject": [{"name": "report.json"}]})
    assert _run(signature.subjects_match_the_files, case) == {"subjects": (False, "a subject is not {name, digest}")}


def test_each_signed_file_digest_is_the_file_beside_the_envelope(tmp_path: Path) -> None:
    report = build_report()
    case = _sealed(tmp_path, report)
    st = att.build_statement(report, {**case.digests, "report.md": "0" * 64}, "0" * 64)
    lines = _run(signature.subjects_match_the_files, _sealed(tmp_path, report, st))
    assert lines["subject report.json"][0] and not lines["subject report.md"][0]
    assert lines["subject report.md"][1].startswith("file has sha256 ")


def test_a_key_not_revoked_writes_no_revocation_line(good: Judged) -> None:
    assert _run(signature.revoked_key_signed_before_its_revocation, good) == {}


# ---------------------------------------------------------------------------- the release

def test_trust_every_field_of_a_good_report_has_a_status(good: Judged) -> None:
    assert _run(release.every_field_has_a_trust_status, good)["trust"][0]


def test_an_unknown_suite_version_is_no_release(tmp_path: Path) -> None:
    ok, detail = _run(release.suite_is_a_known_release, _case(tmp_path, version="9.9.9"))["release"]
    assert not ok and detail.startswith(f"suite version {releases.current_version()!r} is not a release this verifier knows")


def test_a_data_digest_that_is_not_the_releases_fails_release(tmp_path: Path) -> None:
    report = build_report()
    report["suite"]["tiers_sha256"] = "0" * 64
    ok, detail = _run(release.suite_is_a_known_release, _case(tmp_path, report))["release"]
    assert not ok and detail.startswith("tiers_sha256 000000000000… is not the release's ")


def test_release_files_and_embedded_manifest_of_a_good_report_pass(good: Judged) -> None:
    case = good
    assert _run(release.release_files_are_available, case)["release-files"][0]
    lines = _run(release.embedded_manifest_and_environment_are_supported, case)
    assert lines["manifest"][0] and lines["environment"][0], lines


def test_an_unknown_release_writes_no_release_files_line_and_fails_manifest(tmp_path: Path) -> None:
    case = _case(tmp_path, version="9.9.9")
    assert _run(release.release_files_are_available, case) == {}
    assert _run(release.embedded_manifest_and_environment_are_supported, case)["manifest"] == \
        (False, "cannot check: unknown release")


def test_the_newest_release_is_not_superseded(good: Judged) -> None:
    assert _run(release.release_not_superseded_when_the_run_started, good)["superseded"][0]


# ---------------------------------------------------------------------------- the record

def test_a_contradicted_node_count_fails_its_cross_check(tmp_path: Path) -> None:
    report = build_report()
    report["shape"]["nodes"] = 3
    lines = _run(record.facts_agree_across_fields, _case(tmp_path, report))
    assert not lines["cross-check nodes"][0] and "shape.nodes" in lines["cross-check nodes"][1]
    assert lines["cross-check devices_per_node"][0]


def test_a_run_that_finished_before_it_started_fails_time(tmp_path: Path) -> None:
    report = build_report()
    report["started_at"] = "2026-03-01T13:00:00Z"
    ok, detail = _run(record.times_are_ordered, _case(tmp_path, report))["time"]
    assert not ok and "is after finished_at" in detail


def test_companions_written_by_the_run_state_what_the_report_states(good: Judged) -> None:
    lines = _run(record.companions_state_what_the_report_states, good)
    assert lines and all(ok for ok, _ in lines.values()), lines


def test_the_evidence_of_a_good_report_gives_its_outcomes(good: Judged) -> None:
    lines = _run(record.evidence_gives_each_outcome, good)
    assert {"evidence", "summary", "selection"} <= {name.split(" ")[0] for name in lines}
    assert all(ok for ok, _ in lines.values()), [n for n, (ok, _) in lines.items() if not ok]


def test_a_report_that_is_not_merged_writes_no_shards_line(good: Judged) -> None:
    assert _run(record.shards_each_verify, good) == {}


def _example() -> dict[str, Any]:
    report: dict[str, Any] = json.loads((EXAMPLE / "report.json").read_text(encoding="utf-8"))
    return report


def test_the_page_the_run_wrote_is_the_reports_page_and_an_edited_one_is_refused(tmp_path: Path) -> None:
    """`page`: the example run's report.html beside its report.json passes byte for byte; the same
    page with a line a vendor added after signing does not."""
    page = (EXAMPLE / "report.html").read_bytes()
    honest = _case(tmp_path / "honest", _example())
    (honest.sealed.folder / "report.html").write_bytes(page)
    assert _run(record.page_is_the_reports_page, honest) == \
        {"page": (True, "report.html is this verifier's page of report.json, byte for byte")}
    edited = _case(tmp_path / "edited", _example())
    (edited.sealed.folder / "report.html").write_bytes(page.replace(b"</body>", b"<p>Vendor note: all passed.</p></body>", 1))
    ok, detail = _run(record.page_is_the_reports_page, edited)["page"]
    assert not ok and detail.startswith("report.html is not this verifier's page of report.json")


def _shipped(case: Judged) -> Judged:
    """`case` as the shipped releases file knows it: the example claims an archived release, whose
    ladder fixes the sample size the `nodes` line holds it to."""
    import dataclasses

    path = releases.default_path()
    known = releases.load_releases(path)
    return dataclasses.replace(case, release=known[case.report.suite.version], known_releases=known, releases_file=path)


def test_the_exercised_nodes_are_the_seeds_choice_and_a_relabelled_seed_is_refused(tmp_path: Path) -> None:
    """`nodes`: the example run's per-node checks ran on its seed's choice; the same records under a
    seed that chooses another node (a relabel to make another sample look drawn) do not."""
    report = _example()
    unknown = _case(tmp_path / "unknown", report, version="0.0.0+never")   # a release the releases file lacks
    ok, detail = _run(nodes.exercised_nodes_are_the_runs_choice, unknown)["nodes"]
    assert not ok and detail.startswith("the release's sample size cannot be read"), detail
    ok, detail = _run(nodes.exercised_nodes_are_the_runs_choice, _shipped(_case(tmp_path / "honest", report)))["nodes"]
    assert ok and "choice of" in detail and detail.endswith(nodes.SAMPLE_WORD), detail
    drawn = report["selection"]["nodes"]
    ids = [n["node_id"] for n in report["environment"]["devices"]["nodes"]]
    chosen = choose(ids, drawn["seed"], drawn["size"])
    drawn["seed"] = next(seed for seed in range(1000) if choose(ids, seed, drawn["size"]) != chosen)
    ok, detail = _run(nodes.exercised_nodes_are_the_runs_choice, _shipped(_case(tmp_path / "relabelled", report)))["nodes"]
    assert not ok and f"seed {drawn['seed']}'s choice" in detail, detail


# ---------------------------------------------------------------------------- tier and completeness

def test_the_tier_of_a_good_report_recomputes_and_so_do_its_capabilities(good: Judged) -> None:
    v = Verification(Path("x"))
    lines = _run(tier.tier_recomputes_from_the_results, good, v)
    assert lines["tier"][0] and "capabilities" in lines, lines
    assert v.tier_known and v.recomputed_tier == build_report()["tier"]


def test_a_claimed_tier_the_results_do_not_give_fails_tier(tmp_path: Path) -> None:
    report = build_report()
    claimed = report["tier"]
    report["tier"] = None
    ok, detail = _run(tier.tier_recomputes_from_the_results, _case(tmp_path, report))["tier"]
    assert not ok and detail.startswith(f"claims no tier but the per-check results give {claimed!r}")


def test_per_tier_detail_is_compared_field_by_field(tmp_path: Path) -> None:
    report = build_report()
    report["tiers"][0]["achieved"] = not report["tiers"][0]["achieved"]
    claimed = Report.from_json(report).tiers
    actual = Report.from_json(build_report()).tiers
    name = report["tiers"][0]["name"]
    assert tier.first_tier_difference(claimed, actual) == \
        f"tiers[{name}].achieved: claimed {claimed[0].achieved}, recomputed {actual[0].achieved}"
    assert tier.first_tier_difference(actual, actual) is None


def test_a_missing_check_fails_completeness(tmp_path: Path) -> None:
    report = build_report()
    gone = report["checks"].pop()["id"]
    ok, detail = _run(tier.checklist_is_complete, _case(tmp_path, report))["completeness"]
    assert not ok and f"missing 1 check(s): {gone}" in detail


def test_unknown_release_cannot_recompute_the_tier(tmp_path: Path) -> None:
    case = _case(tmp_path, version="9.9.9")
    assert _run(tier.tier_recomputes_from_the_results, case) == {"tier": (False, "cannot recompute: unknown release")}
    assert _run(tier.checklist_is_complete, case) == {"completeness": (False, "cannot check: unknown release")}


# ---------------------------------------------------------------------------- claims

def test_the_statement_sign_writes_matches_the_report(good: Judged) -> None:
    ok, detail = _run(claims.statement_claims_match_the_report, good)["claims"]
    assert ok, detail


def test_a_statement_tier_that_is_not_the_reports_fails_claims(good: Judged) -> None:
    case = good
    st = copy.deepcopy(case.sealed.statement)
    assert st is not None
    st["predicate"][att.EXTENSION]["tier"] = "nonsense"
    sealed = Sealed(case.sealed.envelope_path, case.sealed.envelope, case.sealed.files, case.sealed.digests, (), st, "")
    other = Judged(sealed, case.report, case.release, case.known_releases, case.releases_file, case.schema_file,
                   None, NOW, None, case.verify_one)
    ok, detail = _run(claims.statement_claims_match_the_report, other)["claims"]
    assert not ok and "statement tier 'nonsense' differs from report.json's" in detail


# ---------------------------------------------------------------------------- waivers and validity

def test_no_waived_check_passes_waivers(good: Judged) -> None:
    assert _run(waivers.waivers_are_the_releases, good) == {"waivers": (True, "no waived checks")}


def test_a_check_waived_without_a_waiver_fails_waivers(tmp_path: Path) -> None:
    report = build_report()
    report["checks"][0]["outcome"] = "waived"
    cid = report["checks"][0]["id"]
    ok, detail = _run(waivers.waivers_are_the_releases, _case(tmp_path, report))["waivers"]
    assert not ok and detail == f"{cid}: waived without a waiver {{check, issue, expires}}"


def test_a_pre_release_ray_needs_recertification(tmp_path: Path) -> None:
    report = build_report()
    report["environment"]["ray"] = "2.60.0rc1"
    ok, detail = _run(waivers.certificate_still_holds, _case(tmp_path, report))["validity"]
    assert not ok and detail.startswith("recertification required: environment.ray '2.60.0rc1' is a pre-release")


def test_an_unlisted_waiver_blocks_the_tier_in_effective_checks() -> None:
    checks = [{"id": "DV-001", "outcome": "waived", "waiver": {"check": "DV-001", "issue": "x", "blocks_tier": False}}]
    assert waivers.effective_checks(checks, [], None)[0]["waiver"]["blocks_tier"] is True
    assert waivers.finished_date(FINISHED_AT) == date(2026, 3, 1) and waivers.finished_date("no") is None


@pytest.mark.parametrize("check", [c for c in registry.CHECKS if isinstance(c, registry.ReportCheck)],
                         ids=lambda c: c.holds.__name__)
def test_every_report_check_passes_a_good_signed_report(good: Judged, check: registry.ReportCheck) -> None:
    lines = _run(check.holds, good)
    assert all(ok for ok, _ in lines.values()), {n: d for n, (ok, d) in lines.items() if not ok}


def test_a_waivers_copy_is_held_to_what_the_release_published() -> None:
    """A page drawn from the report shows its copy of a waiver: a copy that outlives the release's
    (G22: expires 2099) or says another reason is named; the copy the run writes is not."""
    from conformance.catalog import data

    listed = data.Waiver(check="FR-016", issue="https://example.org/1", reason="Ray cannot", expires="2027-05-31")
    copy = {"check": "FR-016", "issue": "https://example.org/1", "reason": "Ray cannot", "expires": "2027-05-31",
            "blocks_tier": False, "original_outcome": "fail"}
    assert waivers.copy_problems("FR-016", copy, [listed]) == []
    assert waivers.copy_problems("FR-016", {**copy, "expires": "2099-12-31"}, [listed]) == [
        "FR-016: the report's copy of waiver https://example.org/1 says expires '2099-12-31', the release published "
        "'2027-05-31'"]
    assert len(waivers.copy_problems("FR-016", {**copy, "reason": "fine", "blocks_tier": None}, [listed])) == 2
    assert waivers.copy_problems("FR-016", {**copy, "expires": "2099-12-31"}, None) == []   # no file to hold it to
