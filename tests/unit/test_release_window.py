"""How long an old release may certify (signing/release_window.py, redteam R3/R4): the SIG's
window after a release's successor is published, judged on the verifier's clock
(CONFORMANCE_VERIFY_NOW pins it: signing/clock.py), never on a date the report records. Real
reports, signed and verified as tests/support/signing_support.py builds them."""
from __future__ import annotations

import copy
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
import yaml

from conformance.catalog import releases
from conformance.cli.main import main
from conformance.errors import UserError
from conformance.signing import clock, keys, release_window
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import Verification, verify_path
from signing_support import build_report, write_releases, write_report_dir

OLD = "0.0.1-old"
SUCCESSOR_PUBLISHED = "2026-03-05"   # after the test run (2026-03-01): the run is not `superseded` by its dates


def _release(version: str, published: str | None) -> releases.Release:
    return releases.Release(version=version, checklist_sha256="", tiers_sha256="", report_schema_sha256="",
                            waivers_sha256="", labels_sha256="", vocabulary_sha256="", schemas_sha256=(),
                            ray_versions=("2.60",), published=published)


def _listed(*dates: str | None) -> dict[str, releases.Release]:
    return {f"r{i}": _release(f"r{i}", d) for i, d in enumerate(dates)}


# ---------------------------------------------------------------------------- the rule

def test_a_release_certifies_until_its_successor_s_publication_plus_the_grace() -> None:
    listed = _listed("2026-01-01", "2026-02-01", "2026-03-01")
    assert release_window.window_problem("r0", listed, date(2026, 2, 14), 14) is None
    problem = release_window.window_problem("r0", listed, date(2026, 2, 15), 14)
    assert problem is not None
    for part in ("release 'r0'", "superseded by r1", "published 2026-02-01", "14 day(s)", "up to 2026-02-14",
                 "clock reads 2026-02-15", "newest release (r2)"):
        assert part in problem, (part, problem)
    assert release_window.window_problem("r1", listed, date(2026, 3, 14), 14) is None
    assert release_window.window_problem("r2", listed, date(2099, 1, 1), 14) is None      # the newest: no window
    assert release_window.window_problem("r0", listed, date(2026, 2, 1), 0) is not None   # no grace: closed that day


def test_no_policy_or_an_unknown_release_applies_no_window() -> None:
    listed = _listed("2026-01-01", "2026-02-01")
    assert release_window.window_problem("r0", listed, date(2099, 1, 1), None) is None
    assert release_window.window_problem("nope", listed, date(2099, 1, 1), 14) is None   # the `release` line's
    assert release_window.window_problem(7, listed, date(2099, 1, 1), 14) is None


def test_an_undated_successor_dates_no_window_so_the_older_release_certifies_nothing() -> None:
    listed = _listed("2026-01-01", None, "2026-03-01")
    problem = release_window.window_problem("r0", listed, date(2026, 1, 2), 14)
    assert problem is not None and "superseded by r1, which has no publication date" in problem
    assert "certifies nothing" in problem
    # an undated release is judged by its own successor's date: nothing inferred either way
    assert release_window.window_problem("r1", listed, date(2026, 3, 14), 14) is None
    assert release_window.window_problem("r1", listed, date(2026, 3, 15), 14) is not None


def test_the_installed_policy_sets_a_grace_and_the_schema_holds_it(tmp_path: Path) -> None:
    assert release_window.grace_days(releases.default_path()) == 14
    for bad in ("-1", "'14'", "400", "true"):
        path = write_releases(tmp_path / f"r{bad.strip(chr(39))}.yaml")
        path.write_text(path.read_text().replace("superseded_grace_days: 14", f"superseded_grace_days: {bad}"))
        with pytest.raises(UserError, match="superseded_grace_days"):
            release_window.grace_days(path)


# ---------------------------------------------------------------------------- verify

@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A report claiming an older release OLD, whose successor (the test release, same digests)
    was published on SUCCESSOR_PUBLISHED, signed by a key of the keyring."""
    d = tmp_path_factory.mktemp("window")
    pair = keys.write_keypair(d / "k")
    rel = write_releases(d / "releases.yaml")
    doc = yaml.safe_load(rel.read_text())
    (version, entry), = doc["releases"].items()
    doc["releases"] = {OLD: entry, version: {**copy.deepcopy(entry), "published": SUCCESSOR_PUBLISHED}}
    rel.write_text(yaml.safe_dump(doc, sort_keys=False))
    report = build_report()
    report["suite"]["version"] = OLD
    folder = write_report_dir(d / "old", report)
    sign_report_dir(folder, pair.private_path, releases_file=rel)
    return {"folder": folder, "releases": rel, "pub": pair.public_path, "key": pair.private_path}


def _verify(world: dict[str, Path], now: datetime) -> Verification:
    return verify_path(world["folder"], [key_from_file(world["pub"])], releases_file=world["releases"], now=now)


def _lines(v: Verification) -> dict[str, tuple[bool, str]]:
    return {line.name: (line.ok, line.detail) for line in v.lines}


def test_inside_the_window_an_older_release_verifies_and_says_until_when(world: dict[str, Path]) -> None:
    v = _verify(world, datetime(2026, 3, 18, 23, tzinfo=timezone.utc))
    assert v.ok, [line.render() for line in v.lines if not line.ok]
    ok, detail = _lines(v)["superseded"]
    assert ok and "accepted up to 2026-03-18 on the verifier's clock (14 day(s) of grace)" in detail


def test_past_the_window_only_the_superseded_line_fails_whatever_the_report_dates(world: dict[str, Path]) -> None:
    v = _verify(world, datetime(2026, 3, 19, tzinfo=timezone.utc))
    failed = {name: detail for name, (ok, detail) in _lines(v).items() if not ok}
    assert set(failed) == {"superseded"}, failed
    assert f"release '{OLD}' was superseded by" in failed["superseded"] and "published 2026-03-05" in failed["superseded"]
    assert "14 day(s)" in failed["superseded"] and "clock reads 2026-03-19" in failed["superseded"]
    lines = _lines(v)
    assert lines["signature"][0] and lines["evidence"][0] and lines["tier"][0]   # it verifies, but certifies nothing


def test_the_cli_reads_the_verifier_s_clock_from_the_environment(world: dict[str, Path], monkeypatch, capsys) -> None:
    argv = ["verify", str(world["folder"]), "--key", str(world["pub"]), "--releases", str(world["releases"])]
    monkeypatch.setenv(clock.ENV, "2026-03-10T12:00:00Z")
    assert main(argv) == 0, capsys.readouterr().out
    monkeypatch.setenv(clock.ENV, "2027-01-01T00:00:00+00:00")
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL superseded" in out and "clock reads 2027-01-01" in out and "REJECTED" in out


@pytest.mark.parametrize("value", ["2026-03-10", "yesterday", "2026-03-10T12:00:00", "2026-13-40T00:00:00Z"])
def test_a_clock_that_is_not_a_date_time_with_an_offset_is_one_line_exit_2(world: dict[str, Path], value: str,
                                                                           monkeypatch, capsys) -> None:
    monkeypatch.setenv(clock.ENV, value)
    rc = main(["verify", str(world["folder"]), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{clock.ENV}: expected an ISO 8601 date-time with its offset" in err


def test_the_clock_is_the_machine_s_unless_pinned(monkeypatch) -> None:
    monkeypatch.delenv(clock.ENV, raising=False)
    assert abs((clock.verifier_now() - datetime.now(timezone.utc)).total_seconds()) < 60
    monkeypatch.setenv(clock.ENV, "2026-12-07T13:00:00+01:00")
    assert clock.verifier_now() == datetime(2026, 12, 7, 12, tzinfo=timezone.utc)
