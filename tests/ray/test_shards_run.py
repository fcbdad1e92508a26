"""Shards through the real CLI (issue 48 item 1): `run --shard 1/2` and `run --shard 2/2`, each
signed, `merge`, `sign`, `verify`; and the held-out attacks on merge, each refused in one line.

The cheapest shape that has two shards: the simulated accelerator limited to three checks without
a cluster (`--check DP-007,CC-001,CC-002`: the plan gives the collective contract to one shard and
DP-007 to the other) beside the mandatory core, which runs in both. The merged report is then
partial by its --check (verify's selection line says so), and every other line, the shards line
included, passes: the path of a whole certification, at two short suite runs' cost (side by side;
the DP-007 shard starts a one-node cluster, so this is the ray lane's).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from conformance.catalog import releases
from conformance.cli.main import main
from signing_support import PUBLISHED, write_releases
from suite_runner import SIM_MANIFEST

CHOSEN = "DP-007,CC-001,CC-002"


def _start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "conformance.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shards")
    rel = write_releases(root / "releases.yaml")
    assert main(["keygen", "--out", str(root / "key")]) == 0
    # the two shards side by side, as a vendor runs them (on two machines; here one cluster at most)
    procs = {i: _start("run", "--manifest", str(SIM_MANIFEST), "--out", str(root / f"s{i}"), "--shard", f"{i}/2",
                       "--check", CHOSEN, cwd=root) for i in (1, 2)}
    for i, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out[-3000:] + err[-2000:]
        assert f"shard {i}-of-2" in out
    for i in (1, 2):
        assert main(["sign", str(root / f"s{i}"), "--key", str(root / "key" / "conformance.key"),
                     "--releases", str(rel)]) == 0
    return {"root": root, "releases": rel, "key": root / "key" / "conformance.key",
            "pub": root / "key" / "conformance.pub"}


def _merge(world: dict[str, Path], capsys: pytest.CaptureFixture[str], *shards: Path, out: Path) -> tuple[int, str]:
    capsys.readouterr()
    try:
        rc = main(["merge", *map(str, shards), "--out", str(out)])
    except SystemExit as exc:   # argparse
        rc = int(exc.code or 0)
    return rc, capsys.readouterr().err


def _verify(world: dict[str, Path], folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    capsys.readouterr()
    rc = main(["verify", str(folder), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    lines: dict[str, str] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith(("PASS ", "FAIL ")):
            status, _, rest = line.partition(" ")
            lines.setdefault(rest.split(":")[0], f"{status} {rest}")
    return rc, lines


def _resigned(world: dict[str, Path], name: str, edit: Callable[[dict[str, Any]], None], *,
              releases_file: Path | None = None, sign: bool = True) -> Path:
    """A copy of shard `name` with report.json edited (then signed again with the vendor's key)."""
    dest = world["root"] / "attacks" / f"{name}-{len(list((world['root'] / 'attacks').glob('*'))) if (world['root'] / 'attacks').is_dir() else 0}"
    shutil.copytree(world["root"] / name, dest)
    report = json.loads((dest / "report.json").read_text())
    edit(report)
    (dest / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    if sign:
        assert main(["sign", str(dest), "--key", str(world["key"]), "--releases",
                     str(releases_file or world["releases"]), "--force"]) == 0
    return dest


def test_two_signed_shards_merge_sign_and_verify(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root = world["root"]
    s1, s2 = (json.loads((root / f"s{i}" / "report.json").read_text()) for i in (1, 2))
    core = s1["selection"]["shard"]["core"]
    assert s1["selection"]["shard"]["plan"] == s2["selection"]["shard"]["plan"]
    assert sorted(c for s in s1["selection"]["shard"]["plan"] for c in s) == sorted(CHOSEN.split(","))
    for report in (s1, s2):      # the core ran in both, the slice in its own shard only
        assert all(c["tests"] for c in report["checks"] if c["id"] in core)
    out = root / "merged"
    rc, err = _merge(world, capsys, root / "s1", root / "s2", out=out)
    assert rc == 0, err
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["1-of-2", "2-of-2"]
    merged = json.loads((out / "report.json").read_text())
    ran = {c["id"] for c in merged["checks"] if c["tests"]}
    assert ran == set(core) | set(CHOSEN.split(","))
    assert [s["shard"] for s in merged["selection"]["shards"]] == ["1-of-2", "2-of-2"]
    assert main(["sign", str(out), "--key", str(world["key"]), "--releases", str(world["releases"])]) == 0
    rc, lines = _verify(world, out, capsys)
    failed = {k: v for k, v in lines.items() if v.startswith("FAIL")}
    assert lines["shards"].startswith("PASS shards: 2 shards, each signed and verified"), lines
    assert list(failed) == ["selection"] and "--conformance-select=" in failed["selection"], failed
    assert "shard" not in failed["selection"].split("pytest args")[0]
    assert rc == 1

    # a shard alone is a recognised partial: verified only as part of its merge
    rc, lines = _verify(world, root / "s1", capsys)
    assert rc == 1 and "a shard (1-of-2) of a sharded run" in lines["selection"]

    # the merged folder without one of its shards, or with a shard swapped, is refused by verify
    gone = root / "merged-hole"
    shutil.copytree(out, gone)
    shutil.rmtree(gone / "shards" / "2-of-2")
    rc, lines = _verify(world, gone, capsys)
    assert rc == 1 and lines["shards"].startswith("FAIL shards: shards/ holds 1-of-2; selection.shards lists "
                                                  "1-of-2, 2-of-2"), lines["shards"]


def _refused(rc: int, err: str, *phrases: str) -> None:
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for phrase in phrases:
        assert phrase in err, err


def test_held_out_attacks_on_merge_are_refused_in_one_line(world: dict[str, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = world["root"]
    s1, s2 = root / "s1", root / "s2"
    out = root / "refused"

    rc, err = _merge(world, capsys, s1, out=out)                                  # a missing shard
    _refused(rc, err, "merge: refused: selection.shard: shard 2-of-2 missing: a hole in the run")

    rc, err = _merge(world, capsys, s1, s1, s2, out=out)                          # the same shard twice
    _refused(rc, err, "selection.shard: shard 1-of-2 given twice")

    slice1 = json.loads((s1 / "report.json").read_text())["selection"]["shard"]["plan"][0]
    stolen = next(c for c in json.loads((s1 / "report.json").read_text())["checks"] if c["id"] == slice1[0])

    def duplicate(report: dict[str, Any]) -> None:                               # a duplicated check
        report["checks"] = [stolen if c["id"] == stolen["id"] else c for c in report["checks"]]
    rc, err = _merge(world, capsys, s1, _resigned(world, "s2", duplicate), out=out)
    _refused(rc, err, f"checks[{stolen['id']}].tests: {stolen['id']} ran in shard 2-of-2, outside its slice")

    def other_machine(report: dict[str, Any]) -> None:                           # a shard of another machine
        report["environment"]["cpu"] = "Another CPU 9000"
    rc, err = _merge(world, capsys, s1, _resigned(world, "s2", other_machine), out=out)
    _refused(rc, err, "merge: refused: environment.cpu: shard ", "'Another CPU 9000'", "(shards of two machines)")

    other_releases = world["root"] / "other-releases.yaml"                       # a shard of another release
    releases.write_release(other_releases, version="9.9.9", published=PUBLISHED)

    def other_release(report: dict[str, Any]) -> None:
        report["suite"]["version"] = "9.9.9"
    rc, err = _merge(world, capsys, s1, _resigned(world, "s2", other_release, releases_file=other_releases), out=out)
    _refused(rc, err, "suite.version: shard 2-of-2 says '9.9.9'", "(a shard from another release)")

    def renumbered(report: dict[str, Any]) -> None:                              # its command line edited
        report["selection"]["args"] = [a.replace("--conformance-shard=2/2", "--conformance-shard=1/2")
                                       for a in report["selection"]["args"]]
    rc, err = _merge(world, capsys, s1, _resigned(world, "s2", renumbered, sign=False), out=out)
    _refused(rc, err, "report.json is not the file its report.intoto.json signs (edited after signing)")
    rc, err = _merge(world, capsys, s1, _resigned(world, "s2", renumbered), out=out)
    _refused(rc, err, "selection.args: shard 2-of-2", "says --conformance-shard=1/2, not --conformance-shard=2/2")
    assert not out.exists()                                                      # nothing written

    taken = root / "taken"                                                        # never overwrites
    taken.mkdir()
    (taken / "mine.txt").write_text("mine")
    rc, err = _merge(world, capsys, s1, s2, out=taken)
    _refused(rc, err, "is not an empty folder (nothing is overwritten)")
    assert (taken / "mine.txt").read_text() == "mine"
