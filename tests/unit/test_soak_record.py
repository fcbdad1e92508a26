"""Recording CI runs of the reference plugin in the soak file (conformance/catalog/soak_record.py,
issue 48: a provisional check is promoted after `soak_runs` recorded green CI runs, and until now
nothing wrote the record). The real example report (a run `make example` wrote) and the command
as the release manager runs it: what it records, what it refuses (in one line, exit 2), and that
the loader reads what it wrote."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import data
from conformance.catalog.soak_record import appended, entries, main, one_run, reference_problem
from conformance.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "reports" / "example"
SOAK = ROOT / "tiers" / "soak.yaml"
CI = "https://ci.example/job/1"


def example() -> dict[str, Any]:
    report: dict[str, Any] = json.loads((EXAMPLE / "report.json").read_text())
    return report


def test_a_run_of_the_reference_plugin_records_each_provisional_check_it_ran() -> None:
    report = example()
    got = entries(report, ["FR-019"], "abc1234", CI, "example")
    outcome = next(c["outcome"] for c in report["checks"] if c["id"] == "FR-019")
    assert got == {"FR-019": {"date": report["finished_at"][:10], "commit": "abc1234", "ci": CI, "outcome": outcome}}
    # a check it did not run (not applicable, skipped, absent) records nothing
    for c in report["checks"]:
        if c["id"] == "FR-019":
            c["outcome"] = "not_applicable"
    assert entries(report, ["FR-019", "XX-999"], "abc1234", CI, "example") == {}


@pytest.mark.parametrize("edit, field", [
    (lambda m: m["transport"].update(manager="broken_transports:SlowerPerByte"), "broken_transports:SlowerPerByte"),
    (lambda m: m["accelerator"].update(manager="vendor_x.manager:XManager"), "vendor_x.manager:XManager"),
    (lambda m: m["accelerator"].update(torch_device="broken_devices:install"), "broken_devices:install"),
    (lambda m: m["topology"].update(provider="broken_topology:describe"), "broken_topology:describe"),
])
def test_a_twin_or_a_vendors_plugin_is_no_soak(edit: Any, field: str) -> None:
    """Every import reference the manifest names is the suite's own simulated accelerator's (a
    python_path beside them, as the teeth table's good rows carry, loads nothing by itself)."""
    manifest = copy.deepcopy(example()["manifest"])
    manifest["plugin"]["python_path"] = ["/src/tests/broken_plugins"]
    assert reference_problem(manifest) is None
    edit(manifest)
    problem = reference_problem(manifest)
    assert problem is not None and field in problem and "\n" not in problem
    assert reference_problem("not a manifest") is not None
    assert reference_problem({"accelerator": "x", "plugin": 3}) is not None   # names no plugin code at all


def test_one_ci_run_is_one_entry_whatever_its_reports() -> None:
    """The golden path's run and a good row both ran FR-019: one entry, a pass only if both passed."""
    good, flaky = example(), example()
    for c in flaky["checks"]:
        if c["id"] == "FR-019":
            c["outcome"] = "flaky"
    runs = [entries(r, ["FR-019"], "abc1234", CI, "r") for r in (good, flaky, good)]
    assert one_run(runs) == {"FR-019": dict(runs[0]["FR-019"], outcome="flaky")}
    assert one_run(runs[:1]) == runs[0]


def test_the_file_keeps_its_comment_validates_and_refuses_one_ci_run_twice() -> None:
    text = SOAK.read_text()
    run = {"date": "2026-12-07", "commit": "abc1234", "ci": CI, "outcome": "pass"}
    out = appended(text, {"FR-019": run})
    assert out.startswith(text[:text.index("schema_version")])
    soak = data.parse_soak(__import__("yaml").safe_load(out))
    assert soak.runs["FR-019"][-1] == run and soak.green_streak("FR-019") >= 1
    with pytest.raises(UserError, match="recorded already"):
        appended(out, {"FR-019": run})
    with pytest.raises(UserError, match="not YAML"):
        appended("checks: [\x1b", {"FR-019": run})
    with pytest.raises(UserError):
        appended("schema_version: 1\nchecks: 3\n", {"FR-019": run})


def test_the_command_appends_and_refuses_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    soak = tmp_path / "soak.yaml"
    shutil.copy(SOAK, soak)
    before = data.load_soak(soak).runs["FR-019"]
    args = [str(EXAMPLE), "--commit", "abc1234", "--ci", CI, "--soak", str(soak)]
    assert main(args) == 0 and soak.read_text() == SOAK.read_text()   # without --write: printed only
    assert "soak: FR-019 pass" in capsys.readouterr().out
    assert main([*args, "--write"]) == 0
    after = data.load_soak(soak).runs["FR-019"]
    assert len(after) == len(before) + 1 and after[-1]["ci"] == CI
    written = soak.read_text()
    bad_report = tmp_path / "bad"
    bad_report.mkdir()
    (bad_report / "report.json").write_text("{\x1b[31m not json")
    two = [str(EXAMPLE), str(EXAMPLE), "--commit", "abc1234", "--ci", CI + "/2", "--soak", str(soak), "--write"]
    assert main(two) == 0 and len(data.load_soak(soak).runs["FR-019"]) == len(after) + 1   # one run, one entry
    written = soak.read_text()
    for argv in ([*args, "--write"],                                       # the same CI run again
                 [str(EXAMPLE), "--commit", "not-a-sha\x1b[2J", "--ci", CI, "--soak", str(soak), "--write"],
                 [str(bad_report), "--commit", "abc1234", "--ci", "x", "--soak", str(soak), "--write"]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "\x1b" not in err and "Traceback" not in err, err
    assert soak.read_text() == written   # nothing a refused call wrote
