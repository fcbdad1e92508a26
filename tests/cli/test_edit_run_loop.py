"""The edit–run loop: `run --area/--check/--last-failed` runs just those checks, the report is
partial (never a certification), and bad choices are one-line errors with exit 2."""
from __future__ import annotations

import json
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from conformance.catalog.selection import chosen_checks, failed_checks, id_ranges, partial_reasons
from conformance.cli.main import main
from suite_runner import SIM_MANIFEST

ACTIVE = {"DP-001": "device", "DP-002": "device", "DP-004": "device", "TR-001": "transport"}


def cli(*args: str, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout_s, cwd=cwd)


def test_chosen_checks_is_the_union_of_areas_ids_and_last_failures() -> None:
    assert chosen_checks(ACTIVE, areas=["transport"], checks=["dp-002"], last_failed=["DP-004", "XX-001"]) == \
        ["DP-002", "DP-004", "TR-001"]
    assert chosen_checks(ACTIVE, last_failed=[]) == []
    with pytest.raises(ValueError, match=r"--check: unknown check id 'DP-003'; expected one of "
                                         r"DP-001\.\.DP-002, DP-004, TR-001$"):
        chosen_checks(ACTIVE, checks=["DP-003"])
    with pytest.raises(ValueError, match="--area: unknown area 'devices'; expected one of device, transport"):
        chosen_checks(ACTIVE, areas=["devices"])


def test_id_ranges_and_failed_checks() -> None:
    assert id_ranges(["DP-003", "DP-001", "DP-002", "DP-007", "FR-001"]) == "DP-001..DP-003, DP-007, FR-001"
    report = {"checks": [{"id": "DP-001", "outcome": "fail"}, {"id": "DP-002", "outcome": "error"},
                         {"id": "DP-003", "outcome": "pass"}, {"id": "DP-004", "outcome": "skip"}]}
    assert failed_checks(report) == ["DP-001", "DP-002"]


@pytest.mark.parametrize("args, message", [
    (["--area", "nope"], "argument --area: invalid choice: 'nope' (choose from 'device', "),
    (["--check", "DP-001,DP-999"], "--check: unknown check id 'DP-999'; expected one of "),
    (["--last-failed"], "--last-failed: no previous report at "),
    (["--nodes", "every"], "--nodes: unknown node mode 'every'; expected one of sample, all"),
    (["--node-seed", "x"], "--node-seed: expected a whole number 0 <= seed < 4294967296, got 'x'"),
])
def test_bad_choices_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                        message: str) -> None:
    with pytest.raises(SystemExit, match="2") if args[0] == "--area" else nullcontext():
        assert main(["run", "--manifest", str(SIM_MANIFEST), "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr()
    assert err.out == "" and len(err.err.splitlines()) == 1 and message in err.err, err


def test_last_failed_refuses_a_previous_report_that_is_not_one(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for text, message in (('{"checks": "none"}', "--last-failed: "), ("{not json", "--last-failed: previous report")):
        (out / "report.json").write_text(text)
        assert main(["run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--last-failed"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err
    assert (out / "report.json").read_text() == "{not json"          # never overwritten


def test_one_check_then_the_last_failed_one(tmp_path: Path) -> None:
    """Two short runs of contract checks (no cluster): --check DP-002, then --last-failed after
    the report is edited to say DP-004 failed."""
    out = tmp_path / "out"
    proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--check", "DP-002", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "[1/1] DP-002 " in proc.stdout and "PASS" in proc.stdout
    assert "only 1 check(s): DP-002" in proc.stdout and "its tier cannot be claimed" in proc.stdout
    report = json.loads((out / "report.json").read_text())
    outcomes = {c["id"]: c["outcome"] for c in report["checks"]}
    assert outcomes.pop("DP-002") == "pass" and set(outcomes.values()) == {"skip"}
    assert report["partial"] is True and "--conformance-select=DP-002" in report["selection"]["args"]
    assert any("deselected" in r for r in partial_reasons(report))      # what verify refuses
    dp1 = next(c for c in report["checks"] if c["id"] == "DP-001")
    assert dp1["reason"].startswith("not selected")

    for c in report["checks"]:
        if c["id"] == "DP-004":
            c["outcome"] = "fail"
    (out / "report.json").write_text(json.dumps(report))
    # the first run's signature, bundle and failure logs: they leave with its report, together
    for name, text in (("report.intoto.json", "{}"), ("report.sigstore.json", "{}"), ("logs/DP-004/x.log", "old")):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--last-failed", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "only 1 check(s): DP-004" in proc.stdout and "[1/1] DP-004 " in proc.stdout
    again = json.loads((out / "report.json").read_text())
    assert {c["id"]: c["outcome"] for c in again["checks"]}["DP-004"] == "pass" and again["partial"] is True
    [kept] = (out / "previous").glob("*/report.json")                 # the edited report kept, not lost
    assert {p.name for p in kept.parent.iterdir()} >= {"report.json", "report.intoto.json", "report.sigstore.json",
                                                       "logs"}
    assert (kept.parent / "logs" / "DP-004" / "x.log").read_text() == "old"
    assert not any((out / n).exists() for n in ("report.intoto.json", "report.sigstore.json", "logs/DP-004"))

    proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--last-failed", cwd=tmp_path)
    assert proc.returncode == 0 and "nothing to re-run" in proc.stdout, proc.stdout + proc.stderr
