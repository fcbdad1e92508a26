"""`ray-conformance ray-compat` against real Ray source, without a cluster and without a download:
the installed Ray 2.60 (compatible for the simulated accelerator), a patched copy of it whose
AcceleratorManager lost a method the plugin overrides (incompatible, that method named), a plugin
importing a Ray symbol that does not exist (named), and a version pip cannot get (exit 23).

The patched copy is the installed tree with every entry a symlink except the folders down to the
one file that changes, which is copied and edited: nothing of the installed Ray is touched.
Ray 2.59 (the window's oldest) is tests/certify/test_wheel_install.py's, read from the vendor venv
that test installs it in, so nothing is downloaded twice.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from conformance.cli.main import main
from conformance.exit_codes import Exit

ROOT = Path(__file__).resolve().parents[2]
SIMULATED = ROOT / "conformance" / "simulated"


def site_packages() -> Path:
    spec = importlib.util.find_spec("ray")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]).parent


def patched_ray(into: Path, relpath: str, edit: Callable[[str], str]) -> Path:
    """A site-packages holding the installed ray, with `relpath` (under ray/) copied and edited."""
    src, dst = site_packages() / "ray", into / "ray"
    parts = Path(relpath).parts
    for part in parts:
        dst.mkdir(parents=True)
        for entry in src.iterdir():
            if entry.name != part:
                (dst / entry.name).symlink_to(entry)
        src, dst = src / part, dst / part
    text = src.read_text()
    edited = edit(text)
    assert edited != text, f"the edit changed nothing in {relpath}"
    dst.write_text(edited)
    return into


def test_the_installed_ray_is_compatible_for_the_simulated_accelerator() -> None:
    """The real command line, as CI runs it: exit 0 and the one compatible line."""
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "ray-compat", "--ray", str(site_packages()),
                           "--manifest", str(SIMULATED / "manifest-2node.yaml")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == int(Exit.OK), proc.stdout + proc.stderr
    assert proc.stderr == ""
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("compatible: every interface the plugin and the suite use holds in Ray 2.60")
    assert "overrides" in last and "Not a certification" in last


def test_the_one_node_manifest_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ray-compat", "--ray", str(site_packages() / "ray"), "--manifest", "builtin:simulated",
                 "--format", "json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == int(Exit.OK) and answer["verdict"] == "compatible" and answer["breaks"] == []
    assert answer["held"]["overrides"] >= 9 and answer["held"]["options"] == 3


def test_a_ray_whose_accelerator_manager_renamed_a_method_the_plugin_overrides(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = patched_ray(tmp_path / "site", "_private/accelerators/accelerator.py",
                       lambda t: t.replace("def get_current_node_num_accelerators(", "def get_current_node_device_count("))
    code = main(["ray-compat", "--ray", str(site), "--manifest", str(SIMULATED / "manifest.yaml")])
    out = capsys.readouterr().out
    assert code == int(Exit.BELOW_TIER), out
    removed = [ln for ln in out.splitlines() if "plugin removed-method" in ln]
    assert len(removed) == 1, out
    assert removed[0].startswith("INCOMPATIBLE plugin removed-method AcceleratorManager.get_current_node_num_accelerators: "
                                 "SimAccManager.get_current_node_num_accelerators overrides")
    assert "new in Ray 2.60.0's AcceleratorManager: get_current_node_device_count" in removed[0]
    assert "INCOMPATIBLE plugin abstract AcceleratorManager.get_current_node_device_count" in out
    # the suite's device checks call it too (on the vendor's class)
    assert "INCOMPATIBLE suite removed-method AcceleratorManager.get_current_node_num_accelerators" in out
    assert out.strip().splitlines()[-1].startswith("incompatible: ")


def test_a_plugin_importing_a_ray_symbol_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin = tmp_path / "plugin" / "acme_accel"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("")
    manager = (SIMULATED / "manager.py").read_text().replace(
        "from ray._private.accelerators.accelerator import AcceleratorManager",
        "from ray._private.accelerators.accelerator import AcceleratorManager, get_visible_accelerator_ids")
    (plugin / "manager.py").write_text(manager)
    manifest = (SIMULATED / "manifest.yaml").read_text() \
        .replace("python_path: []", "python_path: [plugin]") \
        .replace("conformance.simulated.manager:SimAccManager", "acme_accel.manager:SimAccManager")
    (tmp_path / "manifest.yaml").write_text(manifest)
    code = main(["ray-compat", "--ray", str(site_packages()), "--manifest", str(tmp_path / "manifest.yaml")])
    out = capsys.readouterr().out
    assert code == int(Exit.BELOW_TIER), out
    [line] = [ln for ln in out.splitlines() if ln.startswith("INCOMPATIBLE")]
    assert line.startswith("INCOMPATIBLE plugin missing-symbol "
                           "ray._private.accelerators.accelerator.get_visible_accelerator_ids: ")
    assert line.endswith(f"[{plugin / 'manager.py'}:27]")


def test_a_ray_pip_cannot_get_is_exit_23_with_pips_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """No index, an empty folder of links: pip answers at once, offline, the way it does for a
    version that was never published."""
    (tmp_path / "links").mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    code = main(["ray-compat", "--ray", "9.9.9", "--manifest", "builtin:simulated", "--download-dir", str(tmp_path / "dl")])
    err = capsys.readouterr().err
    assert code == int(Exit.CANNOT_INSTALL), err
    assert err.splitlines() == ["ray-compat: pip download ray==9.9.9 (no dependencies) ...",
                                "ray-conformance: ray-compat: cannot install Ray 9.9.9: "
                                "ERROR: No matching distribution found for ray==9.9.9"]


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ray-compat", "--ray", "nightly", "--manifest", "builtin:simulated"])
    err = capsys.readouterr().err
    assert code == int(Exit.USAGE) and err.count("\n") == 1
    assert err.startswith("ray-conformance: error: --ray: 'nightly' is not a file or folder here, nor a Ray version")


def test_the_documented_nightly_workflow_parses_and_its_command_is_valid() -> None:
    import re

    import yaml

    from conformance.cli.main import build_parser

    text = (ROOT / "docs" / "ci.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "ray-compat" in b]
    steps = yaml.safe_load(block)["jobs"]["ray-compat"]["steps"]
    script = next(s["run"] for s in steps if "ray-conformance ray-compat" in s.get("run", ""))
    line = next(ln for ln in script.splitlines() if "ray-conformance ray-compat" in ln)
    argv = line.split("ray-conformance ", 1)[1].split(">")[0].replace('"$TARGET"', "2.61.0").split()
    args = build_parser().parse_args(argv)
    assert args.format == "json" and args.ray == "2.61.0"
    for code in (0, 1, 23):
        assert f"{code})" in script     # each verdict has its own answer
    assert "never by this check" in text
