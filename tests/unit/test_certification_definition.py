"""The one definition of a certification run (conformance/run/certification.py): the command the
CLI builds is, as a run records it, exactly what verify accepts; what pytest acted on beyond its
command line is recorded; and the window and supersession rules. Pure: no Ray, no subprocess."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.catalog import releases
from conformance.run import certification
from conformance.run.command import CHECKS_DIR, suite_command
from conformance.signing import trust


def _as_recorded(cmd: list[str], monkeypatch: pytest.MonkeyPatch, *, addopts: list[str] = (),  # type: ignore[assignment]
                 plugins: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """What a run started with `cmd` records (recorded_args over a stand-in pytest config)."""
    args = cmd[cmd.index("pytest") + 1:]
    loaded = [SimpleNamespace(name=n) for n in plugins]
    pm = SimpleNamespace(list_plugin_distinfo=lambda: [(p, None) for p in loaded], get_name=lambda p: p.name)
    config: Any = SimpleNamespace(getini=lambda name: list(addopts), invocation_params=SimpleNamespace(args=args),
                                  pluginmanager=pm)
    return certification.recorded_args(config, CHECKS_DIR)


@pytest.mark.parametrize("options", [{}, {"ray-address": "auto", "timeout": 60, "fault-driver": "pkg.mod:Driver",
                                          "fault-driver-options": '{"a": 1}'}])
@pytest.mark.parametrize("verbose", [False, True])
def test_the_command_the_cli_builds_is_a_certification_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           options: dict[str, Any], verbose: bool) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    cmd = suite_command(tmp_path / "m.yaml", tmp_path / "out", verbose=verbose, options=options)
    recorded = _as_recorded(cmd, monkeypatch)
    assert recorded[-1] == certification.SUITE_CHECKS and f"--rootdir={certification.SUITE_CHECKS}" in recorded
    assert certification.arg_problems(recorded) == [], recorded


def test_the_suites_own_selection_makes_the_run_partial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cmd = suite_command(tmp_path / "m.yaml", tmp_path / "out", options={"select": "DP-001,DP-002"})
    problems = certification.arg_problems(_as_recorded(cmd, monkeypatch))
    assert problems and "--conformance-select=DP-001,DP-002" in problems[0]


def test_what_pytest_acted_on_beyond_its_command_line_is_recorded(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """$PYTEST_ADDOPTS, an ini file's addopts and plugins loaded unasked never reach
    invocation_params.args; the report records them, so verify sees them."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k device")
    monkeypatch.setenv("PYTEST_PLUGINS", "vendor.autouse")
    cmd = suite_command(tmp_path / "m.yaml", tmp_path / "out")
    recorded = _as_recorded(cmd, monkeypatch, addopts=["-x"], plugins=["randomly", "ray_conformance", "xdist"])
    assert recorded[:3] == ["-x", "-k", "device"]
    assert recorded[-4:] == ["-p", "randomly", "-p", "vendor.autouse"]        # the suite's and xdist are not foreign
    problem = " ".join(certification.arg_problems(recorded))
    for part in ("-x", "-k device", "-p randomly", "-p vendor.autouse"):
        assert part in problem, problem


def test_a_folder_of_the_same_name_is_recorded_as_its_own_path(tmp_path: Path) -> None:
    other = tmp_path / "conformance" / "checks"
    other.mkdir(parents=True)
    assert certification._folder_token(str(CHECKS_DIR), CHECKS_DIR) == certification.SUITE_CHECKS
    assert certification._folder_token(f"--rootdir={CHECKS_DIR}", CHECKS_DIR) == f"--rootdir={certification.SUITE_CHECKS}"
    assert certification._folder_token(str(other), CHECKS_DIR) == str(other)


def test_the_window_holds_the_checks_durations() -> None:
    report: dict[str, Any] = {"checks": [{"id": "A", "duration_s": 30.0}, {"id": "B", "duration_s": 29.0}],
                              "duration_s": 60.0}
    assert trust.window_problems(report, 60) == []
    report["checks"][1]["duration_s"] = 40.0
    assert "add up to 70.0 s" in trust.window_problems(report, 60)[0]
    report["checks"][1]["duration_s"] = -1
    assert any("negative" in p for p in trust.window_problems(report, 60))
    assert trust.window_problems({"checks": "x", "duration_s": "y"}, 60) == []    # the schema judges shapes


def test_a_later_release_published_before_the_run_supersedes_it() -> None:
    def rel(version: str, published: str | None) -> releases.Release:
        return releases.Release(version, *("0" * 64,) * 6, schemas_sha256=(), ray_versions=("2.60",),
                                published=published)

    listed = {"1": rel("1", "2026-01-01"), "2": rel("2", None), "3": rel("3", "2026-02-01")}
    at = datetime(2026, 2, 2, tzinfo=timezone.utc)
    problem = trust.superseded_problem("1", at, listed)
    assert problem and "superseded by 3 (published 2026-02-01)" in problem
    assert trust.superseded_problem("3", at, listed) is None
    assert trust.superseded_problem("1", datetime(2026, 2, 1, 23, tzinfo=timezone.utc), listed) is None
    assert trust.superseded_problem("unknown", at, listed) is None      # the release line names it


def test_the_run_records_dev_null_as_it_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`-c /dev/null` is recorded whole (its file name, `null`, was what runs recorded before)."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    recorded = _as_recorded(suite_command(tmp_path / "m.yaml", tmp_path / "out"), monkeypatch)
    assert recorded[recorded.index("-c") + 1] == "/dev/null"


def test_c_null_is_accepted_only_for_the_releases_that_recorded_it(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    recorded = _as_recorded(suite_command(tmp_path / "m.yaml", tmp_path / "out"), monkeypatch)
    old = [("null" if a == "/dev/null" else a) for a in recorded]
    until = certification.definition().legacy_values["-c"][1]
    assert certification.arg_problems(old, legacy=certification.legacy_forms(until)) == []
    assert certification.arg_problems(old, legacy=True) == []
    later = datetime.fromisoformat(until).date().fromordinal(datetime.fromisoformat(until).toordinal() + 1).isoformat()
    for forms in (certification.legacy_forms(later), certification.legacy_forms(None), False):
        problems = " ".join(certification.arg_problems(old, legacy=forms))
        assert "-c null" in problems and "no -c /dev/null" in problems, problems
    assert certification.arg_problems(recorded, legacy=certification.legacy_forms(later)) == []
    assert until >= "2026-12-03"   # the last release published before runs recorded /dev/null whole


def test_every_release_has_a_publication_date() -> None:
    """No release escapes the date bound (verify's `time`: no run starts before its release)."""
    known = releases.load_releases()
    assert all(r.published_date() is not None for r in known.values()), [v for v, r in known.items() if not r.published]
    assert known["0.1.0"].published == "2026-11-30"
