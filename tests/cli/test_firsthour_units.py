"""A vendor's first hour, the parts without Ray: README examples, init, checklist, progress,
log evidence, local paths, next steps and the shape ceiling, preflight judging."""
from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from conformance.catalog.data import load_run_knobs, load_suite_data
from conformance.cli.main import build_parser, main
from suite_runner import ROOT

README = ROOT / "README.md"


def readme_blocks(language: str) -> list[str]:
    """Fenced blocks of one language in the README, dedented (list items indent them)."""
    text = README.read_text()
    pattern = re.compile(rf"^([ \t]*)```{language}\n(.*?)^\1```", re.S | re.M)
    return [textwrap.dedent(m.group(2)) for m in pattern.finditer(text)]


# ------------------------------------------------------------------ README
def test_readme_yaml_blocks_are_valid_manifests(tmp_path: Path) -> None:
    from conformance.catalog.manifest import load_manifest

    blocks = readme_blocks("yaml")
    assert blocks, "the README has YAML examples"
    for i, block in enumerate(blocks):
        doc = yaml.safe_load(block)  # valid YAML as written
        if isinstance(doc, dict) and "schema_version" in doc:
            path = tmp_path / f"readme-{i}.yaml"
            path.write_text(block)
            load_manifest(path)  # schema, node_env per node, python_path folders


def test_readme_shell_blocks_parse_and_name_real_commands() -> None:
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    blocks = readme_blocks("sh")
    assert blocks
    for block in blocks:
        proc = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        for sub in re.findall(r"ray-conformance (\w[\w-]*)", block):
            assert sub in commands, f"README names `ray-conformance {sub}`, which does not exist"


# ------------------------------------------------------------------ init
def test_init_skeleton_passes_validate_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "p"), "--package", "acme_plugin", "--resource", "ACME"]) == 0
    assert main(["validate-manifest", str(tmp_path / "p" / "manifest.yaml")]) == 0
    out = capsys.readouterr().out
    assert "manifest OK" in out and "topology provider acme_plugin.topology:describe_node" in out
    stub = (tmp_path / "p" / "acme_plugin" / "transport.py").read_text()
    assert "NotImplementedError" in stub and "docs/transport.md" in stub
    assert "collective ACMECOLL (acme_plugin.collective:AcmePluginGroup" in out


def test_init_writes_a_collective_stub_that_registers_once_and_says_what_ray_passes(tmp_path: Path) -> None:
    """The stub's register() is safe to call twice (Ray refuses a second registration), and its
    docstring says what a vendor otherwise learns from Ray's source."""
    import subprocess
    import sys
    assert main(["init", str(tmp_path / "p"), "--package", "coll_plugin", "--resource", "COLLX"]) == 0
    stub = (tmp_path / "p" / "coll_plugin" / "collective.py").read_text()
    for fact in ("barrier() is called with NO arguments", "tensor_lists = [[out_0, ..., out_{world-1}]]",
                 "tensor_lists = [[in_0, ..., in_{world-1}]]", "raises on a second registration",
                 "needs a default on every field"):
        assert fact in stub, fact
    code = ("import coll_plugin.collective as c\n"
            "from ray.util.collective.backend_registry import _global_registry\n"
            "c.register(); c.register()\n"
            "assert _global_registry.is_registered('COLLXCOLL')\n"
            "g = c.CollPluginGroup(2, 0, 'g')\n"
            "assert (g.world_size, g.rank) == (2, 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "p", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("flags", [["--no-topology"], ["--no-transport"], ["--no-collective"],
                                   ["--no-topology", "--no-transport", "--no-collective"]])
def test_init_variants_validate(tmp_path: Path, flags: list[str]) -> None:
    package = "plugin_" + "_".join(f.strip("-").replace("-", "_") for f in flags)  # one import name per case
    assert main(["init", str(tmp_path / "p"), "--package", package, *flags]) == 0
    assert main(["validate-manifest", str(tmp_path / "p" / "manifest.yaml")]) == 0


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p").mkdir()
    mine = tmp_path / "p" / "manifest.yaml"
    mine.write_text("# mine\n")
    assert main(["init", str(tmp_path / "p")]) == 0
    assert mine.read_text() == "# mine\n"
    assert "kept" in capsys.readouterr().out


def test_init_bad_package_name_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "p"), "--package", "9-lives"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--package" in err


# ------------------------------------------------------------------ checklist
def test_checklist_text_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checklist"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert any(line.startswith("DP-004") for line in lines)


def test_checklist_filters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checklist", "--area", "topology", "--level", "SHOULD", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert items and all(i["area"] == "topology" and i["level"] == "SHOULD" for i in items)
    assert main(["checklist", "--area", "device", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "DP-001" in md and "TL-001" not in md


# ------------------------------------------------------------------ progress
def test_progress_lines_fit_and_count() -> None:
    from conformance.run.progress import Progress, estimate_left, progress_line

    p = Progress.from_items([("a", "DP-001"), ("b", "DP-001"), ("c", "DP-002")], {"DP-001": 2, "DP-002": 4}, 3)
    assert not p.finished("a", "DP-001")          # DP-001 has a later test
    assert p.finished("b", "DP-001") and p.done == ["DP-001"]
    p.took(2.0)
    assert p.left_s() == pytest.approx(4.0)
    line = progress_line(1, 64, "DP-001", "A title " * 30 + "\x1b[31mred", "pass", 0.5, 3, 100)
    assert len(line) <= 100 and "PASS" in line and "\x1b" not in line and "[ 1/64] DP-001" in line
    # a slow run stretches the estimate, within bounds
    assert estimate_left(["X"], ["Y"], 40.0, {"X": 10, "Y": 10}, 3) == pytest.approx(40.0)
    # the pace is the checks' own time: a minute of cluster start before the first check ends
    # does not read as a slow run (the hooks pass what the checks took, not the wall clock)
    q = Progress.from_items([("a", "A"), ("b", "B")], {"A": 12, "B": 60}, 3)
    assert q.finished("a", "A")
    q.took(12.0)
    assert q.left_s() == pytest.approx(60.0)


def test_typical_durations_name_real_checks() -> None:
    known = set(load_suite_data().checklist.by_id())
    assert set(load_run_knobs()["durations"]["checks"]) <= known


# ------------------------------------------------------------------ Ray logs
WORKER_ERR = """\
:job_id:01000000
Failed to preload the module "conformance.cluster.inject_autoinstall"
Traceback (most recent call last):
  File "/home/alice/plugin/nimbus_mgr.py", line 1, in <module>
    import nimbus_sdk
ModuleNotFoundError: No module named 'nimbus_sdk'
:task_name:probe
"""
RAYLET = "[2026-01-01 10:00:00,000 I 1 2] node_manager.cc:1: hello\n" \
         "Raylet is terminated. Termination is unexpected. SIGKILL by the user or system OOM killer\n"


def test_first_error_skips_fault_noise_and_names_the_cause(tmp_path: Path) -> None:
    from conformance.report.ray_logs import collect_evidence, first_error

    texts = {tmp_path / "raylet.out": RAYLET, tmp_path / "worker-abc-01-77.err": WORKER_ERR}
    path, line, _ = first_error(texts)
    assert path.name == "worker-abc-01-77.err" and line == "ModuleNotFoundError: No module named 'nimbus_sdk'"
    ev = collect_evidence(texts, tmp_path / "out", "DP-008")
    assert ev is not None and ev.first_error == "worker-abc-01-77.err: ModuleNotFoundError: No module named 'nimbus_sdk'"
    assert ev.excerpt.startswith('Failed to preload the module "conformance.cluster.inject_autoinstall"')
    assert ":job_id:" not in ev.excerpt
    assert "logs/DP-008/worker-abc-01-77.err" in ev.files
    assert first_error({tmp_path / "raylet.out": RAYLET}) is None


def test_local_paths_are_shortened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from conformance.report.local_paths import display_path, shorten_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    assert display_path(tmp_path / "m" / "manifest.yaml") == "m/manifest.yaml"
    assert display_path("/opt/elsewhere/manifest.yaml") == "manifest.yaml"
    text = f"{Path.home()}/x.py and {tempfile.gettempdir()}/ray/session_1/logs"
    short = shorten_paths(text)
    assert str(Path.home()) not in short and short.startswith("~/x.py") and "$TMPDIR/ray/session_1" in short


def test_markdown_code_defuses_fences() -> None:
    from conformance.sanitize import markdown_code

    assert "~~~" not in markdown_code("a\n~~~\n```\x1b[2Jb")
    assert "\x1b" not in markdown_code("\x1b[31mred")


# ------------------------------------------------------------------ next steps and shape
def _report(outcomes: dict[str, str], shape: dict, nodes: int = 2, transport: bool = True) -> dict:
    from conformance.catalog.ladder import RunContext, compute_tiers

    data = load_suite_data()
    checks = [{"id": c.id, "area": c.area, "level": c.level, "outcome": outcomes.get(c.id, "pass"),
               "reason": None if outcomes.get(c.id, "pass") == "pass" else "r"} for c in data.checklist.active()]
    tier, tiers = compute_tiers(checks, data.checklist, data.ladder, RunContext(transport, nodes, shape))
    return {"checks": checks, "tier": tier, "tiers": tiers, "shape": shape, "cluster": {"nodes": nodes},
            "manifest": {"transport": {"name": "X"}} if transport else {}}


from conformance.run.hooks import area_docs


def test_shape_ceiling_names_the_hardware_fact() -> None:
    from conformance.report.next_steps import next_steps

    data = load_suite_data()
    docs = area_docs()
    # two devices per node, no domain labels, two nodes: DP-015, TL-008, TL-014 can never pass
    shape = {"nodes": 2, "devices_per_node": 2, "domain_labels": False}
    na = {"DP-015": "not_applicable", "TL-008": "not_applicable", "TL-014": "not_applicable"}
    steps = next_steps(_report(na, shape), data.checklist, data.ladder, docs)
    assert steps["next_tier"] == "stable"
    assert steps["shape_ceiling"]["tier"] == "beta"
    assert "SHOULD" in steps["shape_ceiling"]["reason"] and "DP-015" in steps["shape_ceiling"]["reason"]
    by_id = {b["id"]: b for b in steps["blocking"]}
    assert by_id["DP-015"]["action"].startswith("hardware shape: needs >= 3 devices per node; this hardware has 2")
    assert by_id["DP-015"]["doc"] == docs["device"] and by_id["DP-015"]["level"] == "SHOULD"
    # one device per node: DP-011 (a MUST of experimental) rules out every tier
    one = next_steps(_report({"DP-011": "not_applicable"}, {"nodes": 1, "devices_per_node": 1,
                                                            "domain_labels": False}, nodes=1),
                     data.checklist, data.ladder, docs)
    assert one["shape_ceiling"]["tier"] is None and "DP-011" in one["shape_ceiling"]["reason"]
    assert one["next_tier"] == "experimental" and one["blocking"][0]["id"] == "DP-011"


def test_ladder_decides_whether_shape_na_counts_against_should_share() -> None:
    from dataclasses import replace

    from conformance.catalog.ladder import RunContext, compute_tiers

    data = load_suite_data()
    shape = {"nodes": 2, "devices_per_node": 4, "domain_labels": False}
    shape_na = ("TL-008", "TL-014")  # need domain labels this shape does not have
    shoulds = [c.id for c in data.checklist.active() if c.level == "SHOULD"]
    # fail just enough other SHOULD checks that the share is met only when the shape's N/A is exempt
    failing = [cid for cid in shoulds if cid not in shape_na][: int(0.2 * (len(shoulds) - len(shape_na)))]
    checks = [{"id": c.id, "outcome": "not_applicable" if c.id in shape_na else
               "fail" if c.id in failing else "pass"} for c in data.checklist.active()]
    counted = compute_tiers(checks, data.checklist, data.ladder, RunContext(True, 2, shape))[0]
    exempt_ladder = replace(data.ladder, shape_policy={**data.ladder.shape_policy, "exempt_from_should_share": True})
    exempt = compute_tiers(checks, data.checklist, exempt_ladder, RunContext(True, 2, shape))[0]
    assert (counted, exempt) == ("beta", "stable")
    # without a verified shape nothing is exempt
    assert compute_tiers(checks, data.checklist, exempt_ladder, RunContext(True, 2, None))[0] == "beta"


def test_doc_links_of_next_steps_exist() -> None:
    def slug(heading: str) -> str:
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    for area, link in area_docs().items():
        path, _, anchor = link.partition("#")
        text = (ROOT / path).read_text()
        anchors = {slug(m) for m in re.findall(r"^#+ (.*)$", text, re.M)}
        assert anchor in anchors, f"{area}: {link} names no heading"


# ------------------------------------------------------------------ preflight judging
def test_judge_node() -> None:
    from conformance.catalog.manifest_view import Expected
    from conformance.run.preflight import ERROR, PROBLEM, judge_node

    expected = Expected(devices_per_node=4, accelerator_type="X1")
    crashed = judge_node("node a", "probe failed: WorkerCrashedError: boom", ray_count=4, expected=expected,
                         preload_expected=True, worker_log="Traceback ...\nModuleNotFoundError: No module named 'sdk'")
    assert crashed[0].level == ERROR and crashed[0].message.endswith("No module named 'sdk'")
    bad_import = {"imports": {"topology.provider": {"ref": "p:f", "ok": False, "error": "ImportError: x",
                                                    "traceback": "tb"}}, "preload_ok": True, "calls": {}}
    assert [f.level for f in judge_node("n", bad_import, ray_count=4, expected=expected, preload_expected=True)] == [ERROR]
    ok_calls = {"get_current_node_num_accelerators": {"ok": True, "result": {"value": 3}},
                "get_current_node_accelerator_type": {"ok": True, "result": {"value": "X1"}},
                "validate_resource_request_quantity": {"ok": False, "error": "ValueError: no", "traceback": "tb"}}
    found = judge_node("n", {"imports": {}, "preload_ok": True, "registered": True, "calls": ok_calls},
                       ray_count=3, expected=expected, preload_expected=True)
    assert all(f.level == PROBLEM for f in found) and len(found) == 3
    assert judge_node("n", {"imports": {}, "preload_ok": False, "calls": {}}, ray_count=4, expected=expected,
                      preload_expected=True)[0].level == ERROR


def test_host_findings_and_left_behind() -> None:
    from conformance.run.left_behind import left_behind
    from conformance.run.preflight import host_findings

    limits = load_run_knobs()["preflight"]["host"]
    state = {"available_memory_mb": 100.0, "shm": {"total_mb": 1000.0, "used_mb": 900.0, "entries": ["a"]},
             "ray_processes": [{"pid": 5, "kind": "raylet", "session": "/tmp/ray/session_old"}]}
    messages = " ".join(f.message for f in host_findings(state, limits))
    assert "100 MB of memory" in messages and "/dev/shm already holds 900 MB" in messages and "1 Ray process" in messages
    assert "stop" not in messages and "none started by this run" in messages   # never advise stopping others' Ray
    clean = {"available_memory_mb": 1e6, "shm": {"total_mb": 1000.0, "used_mb": 0.0, "entries": []}, "ray_processes": []}
    assert host_findings(clean, limits) == []
    after = {"shm": {"used_mb": 50.0, "entries": ["a", "seg1", "theirs", "nobodys"],
                     "detail": {"seg1": {"bytes": 50 << 20, "uid": os.getuid(), "held": False},
                                "theirs": {"bytes": 70 << 20, "uid": os.getuid(), "held": True},
                                "nobodys": {"bytes": 3 << 20, "uid": os.getuid(), "held": False}}},
             "ray_processes": [{"pid": 7, "kind": "raylet", "session": "/tmp/ray/session_mine"},
                               {"pid": 8, "kind": "raylet", "session": "/tmp/ray/session_neighbour"}]}
    left = left_behind(clean | {"shm": {"used_mb": 0.0, "entries": ["a"]}}, after, ["/tmp/ray/session_mine"],
                       witnessed={"seg1"})
    assert [p["pid"] for p in left["ray_processes"]] == [7]
    # by the processes that held them: seg1 was seen held by this run; another job holds "theirs"
    assert left["shm_entries"] == ["seg1"] and left["shm_growth_mb"] == 50.0
    assert left["shm_unattributed"] == ["nobodys"] and left["shm_unattributed_mb"] == 3.0
    from conformance.report.guidance import left_behind_lines
    text = " ".join(left_behind_lines(left))
    assert "theirs" not in text and "not counted as this run's" in text


def test_left_on_the_host_sees_below_the_top_of_dev_shm_and_calls_folders_folders(tmp_path) -> None:
    """A transport staging into its own /dev/shm folder leaves a 1 MiB file from a killed source
    (seen held by the run while it lived) and an empty folder: the file is the run's, named with
    its size; folders are folders, never segments (process_owners.shm_entries walks the tree)."""
    from conformance.cluster import process_owners
    from conformance.report.guidance import left_behind_lines
    from conformance.run.left_behind import left_behind

    (tmp_path / "vendor" / "stage").mkdir(parents=True)
    (tmp_path / "vendor" / "stage" / "buf-7").write_bytes(b"x" * (1 << 20))
    (tmp_path / "emptyvendor").mkdir()
    (tmp_path / "top").write_bytes(b"y")
    entries = {e.name: e for e in process_owners.shm_entries(str(tmp_path))}
    assert set(entries) == {"vendor/", "vendor/stage/", "vendor/stage/buf-7", "emptyvendor/", "top"}
    assert entries["vendor/stage/buf-7"].bytes >= 1 << 20 and entries["vendor/"].folder and entries["vendor/"].bytes == 0
    detail = {e.name: {"bytes": e.bytes, "uid": e.uid, "held": False, "folder": e.folder} for e in entries.values()}
    before = {"shm": {"entries": ["top"]}, "ray_processes": []}
    after = {"shm": {"entries": sorted(entries), "detail": detail}, "ray_processes": []}
    left = left_behind(before, after, ["/tmp/ray/session_mine"], witnessed={"vendor/stage/buf-7"})
    assert left["shm_entries"] == ["vendor/stage/buf-7"] and left["shm_growth_mb"] == 1.0
    assert left["shm_unattributed"] == [] and set(left["shm_folders"]) == {"vendor/", "vendor/stage/"}
    assert left["shm_folders_unattributed"] == ["emptyvendor/"] and left["shm_folders_empty"] == ["emptyvendor/"]
    text = " ".join(left_behind_lines(left))
    assert "vendor/stage/buf-7 (1.0 MB)" in text and "emptyvendor/ (empty)" in text
    assert "segment(s) held by no process" not in text     # the empty folder is not a segment


def test_a_segment_held_one_folder_down_is_attributed_to_its_holder(tmp_path) -> None:
    from conformance.cluster import process_owners

    (tmp_path / "vendor").mkdir()
    path = tmp_path / "vendor" / "seg"
    path.write_bytes(b"z" * 8192)
    with open(path, "rb"):     # this process holds it open
        att = process_owners.attribute_now({os.getpid()}, str(tmp_path))
        assert "vendor/seg" in process_owners.held_by({os.getpid()}, str(tmp_path))
    assert att.ours.get("vendor/seg", 0) >= 8192 and "vendor/" not in att.orphan
