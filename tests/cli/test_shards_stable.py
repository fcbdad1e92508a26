"""A whole certification in two shards merges into a report that verifies `stable` (issue 48 item 1).

No Ray: the shards are the signed example's kind of report (tests/support/signing_support.py: every
active check of this checkout passing on 2 nodes), split as `run --shard 1/2` and `--shard 2/2`
record it, each written with the run's own writers and signed; then the real CLI merges, signs
and verifies. tests/ray/test_shards_run.py takes the same path through real suite runs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main
from signing_support import SPANS, build_report, shard_reports, write_releases, write_report_dir


@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Path]:
    assert main(["keygen", "--out", str(tmp_path / "key")]) == 0
    return {"root": tmp_path, "releases": write_releases(tmp_path / "releases.yaml"),
            "key": tmp_path / "key" / "conformance.key", "pub": tmp_path / "key" / "conformance.pub"}


def _sign(world: dict[str, Path], folder: Path) -> None:
    assert main(["sign", str(folder), "--key", str(world["key"]), "--releases", str(world["releases"])]) == 0


def test_two_shards_of_a_whole_certification_merge_into_a_stable_verified_report(
        world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    whole = build_report()
    assert whole["tier"] == "stable"
    folders = []
    for i, report in enumerate(shard_reports(whole), 1):
        folder = write_report_dir(world["root"] / f"shard-{i}", report)
        _sign(world, folder)
        folders.append(folder)
    capsys.readouterr()
    rc = main(["verify", str(folders[0]), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL selection: not a certification run: a shard (1-of-2) of a sharded run" in out

    merged = world["root"] / "merged"
    assert main(["merge", *map(str, folders), "--out", str(merged)]) == 0
    report = json.loads((merged / "report.json").read_text())
    assert report["tier"] == "stable" and report["partial"] is False
    assert (report["started_at"], report["finished_at"]) == (SPANS[1][0], SPANS[2][1])
    assert "--conformance-shard=1/2" not in report["selection"]["args"]
    _sign(world, merged)
    capsys.readouterr()
    rc = main(["verify", str(merged), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    out = capsys.readouterr().out
    assert rc == 0, [line for line in out.splitlines() if line.startswith("FAIL")]
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    assert lines["PASS shards"].startswith("PASS shards: 2 shards, each signed and verified"), lines
    assert lines["PASS tier"].startswith("PASS tier: recomputed 'stable' equals the claim"), lines["PASS tier"]

    # a merged report edited and signed again is not the merge of its shards
    report["checks"][-1]["duration_s"] = 0.5
    (merged / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    from conformance.report.build import render_markdown
    (merged / "report.md").write_text(render_markdown(report), encoding="utf-8")
    assert main(["sign", str(merged), "--key", str(world["key"]), "--releases", str(world["releases"]), "--force"]) == 0
    capsys.readouterr()
    rc = main(["verify", str(merged), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL shards: the merged report's checks is not the merge of its shards" in out, out
