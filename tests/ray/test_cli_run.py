"""`ray-conformance run` end to end: exit codes, --require-tier, --sign-key, then verify."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from suite_runner import CHECKS, SIM_MANIFEST


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli.main", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def test_run_signs_and_gates_on_tier(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    assert cli("keygen", "--out", str(keys), cwd=tmp_path).returncode == 0
    out = tmp_path / "out"
    contract_only = str(CHECKS / "device/test_device_contract.py")
    proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--require-tier", "experimental",
               "--sign-key", str(keys / "conformance.key"), "--", contract_only, cwd=tmp_path)
    # the live device checks were not selected: they are `skip`, so experimental is not reached
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "below the required experimental" in proc.stdout
    assert {p.name for p in out.iterdir()} >= {"report.json", "report.md", "junit.xml", "report.intoto.json", "report.html"}
    verify = cli("verify", str(out), "--key", str(keys / "conformance.pub"), cwd=tmp_path)
    # signed and self-consistent, but only one module ran: not a certification run
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "PASS signature" in verify.stdout and "PASS tier" in verify.stdout
    assert "FAIL selection: not a certification run" in verify.stdout


def test_partial_runs_are_recorded_and_refused_by_verify(tmp_path: Path) -> None:
    """`-- --collect-only` and `-- -k <one test>` write reports marked partial with their
    selection; signed, they verify only as "not a certification run" (exit 1)."""
    import json

    keys = tmp_path / "keys"
    assert cli("keygen", "--out", str(keys), cwd=tmp_path).returncode == 0
    for name, extra in (("collect", ["--collect-only"]), ("one", ["-k", "test_methods_return_documented_types"])):
        out = tmp_path / name
        proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(out), "--sign-key",
                   str(keys / "conformance.key"), "--", *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "not a certification run" in proc.stdout
        report = json.loads((out / "report.json").read_text())
        sel = report["selection"]
        assert report["partial"] is True and extra[0] in sel["args"]
        assert sel["collect_only"] is (name == "collect")
        if name == "one":
            assert sel["deselected"] and "DP-001" not in sel["not_run"] and "DP-002" in sel["not_run"]
            dp1 = next(c for c in report["checks"] if c["id"] == "DP-001")
            assert dp1["outcome"] == "pass" and dp1["params"] == {}
        else:
            assert len(sel["not_run"]) == len(report["checks"])
        verify = cli("verify", str(out), "--key", str(keys / "conformance.pub"), cwd=tmp_path)
        assert verify.returncode == 1 and "FAIL selection: not a certification run" in verify.stdout, verify.stdout


def test_run_without_required_tier_exits_zero_when_completed(tmp_path: Path) -> None:
    proc = cli("run", "--manifest", str(SIM_MANIFEST), "--out", str(tmp_path / "o"), "--",
               str(CHECKS / "device/test_device_contract.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "tier achieved: none" in proc.stdout
