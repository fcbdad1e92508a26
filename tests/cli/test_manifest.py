"""Manifest validation: every bad manifest is one line naming the field, exit 2, no traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.catalog.manifest import check_manifest
from conformance.cli.main import main
from suite_runner import SIM_MANIFEST, sim_manifest


def write(tmp_path: Path, data, name="m.yaml") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


def without(d: dict, *path: str) -> dict:
    node = d
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return d


CASES = {
    "missing field": (lambda: without(sim_manifest(), "accelerator", "manager"), "accelerator: 'manager' is a required property"),
    "wrong type": (lambda: {**sim_manifest(), "cluster": {"nodes": "two"}}, "cluster.nodes: 'two' is not of type 'integer'"),
    "unknown key": (lambda: {**sim_manifest(), "colour": "red"}, "Additional properties are not allowed ('colour'"),
    "bad import ref": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"], "manager": "no colon"}},
                       "accelerator.manager: 'no colon' is not a reference 'package.module:Name'"),
    "misspelt topology provider": (lambda: {**sim_manifest(), "topology": {"provider": "conformance.simulated.topology:describe_nod"}},
                                   "topology.provider: module 'conformance.simulated.topology' has no attribute 'describe_nod'"),
    "unimportable topology provider": (lambda: {**sim_manifest(), "topology": {"provider": "conformance.simulated.topolgy:describe_node"}},
                                       "topology.provider: cannot import module 'conformance.simulated.topolgy'"),
    "topology provider not a function": (lambda: {**sim_manifest(), "topology": {"provider": "conformance.simulated.topology:HOST_GBPS"}},
                                         "topology.provider: conformance.simulated.topology:HOST_GBPS is not a function"),
    "transport not a transport": (lambda: {**sim_manifest(), "transport": {"name": "MYX", "manager": "pathlib:Path"}},
                                  "transport.manager: pathlib:Path is not a TensorTransportManager subclass"),
    "expected count contradicts the manager": (
        lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                    "expected": {"devices_per_node": 8, "accelerator_type": "SIMACC-X1"}}},
        "accelerator.expected.devices_per_node: 8, but get_current_node_num_accelerators() reports 4 here"),
    "expected type contradicts the manager": (
        lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                    "expected": {"devices_per_node": 4, "accelerator_type": "SIMACC-X9"}}},
        "accelerator.expected.accelerator_type: 'SIMACC-X9', but get_current_node_accelerator_type() reports 'SIMACC-X1'"),
    "env key not a variable name": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                                                "env": {"1BAD": "x"}}},
                                    "accelerator.env: key '1BAD' is not a name of letters, digits and _"),
    "unimportable module": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                                        "manager": "no_such_pkg.mod:Cls"}},
                            "accelerator.manager: cannot import module 'no_such_pkg.mod'"),
    "missing attribute": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                                      "manager": "conformance.simulated.manager:Nope"}},
                          "accelerator.manager: module 'conformance.simulated.manager' has no attribute 'Nope'"),
    "not a manager": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                                  "manager": "pathlib:Path"}},
                      "accelerator.manager: pathlib:Path is not an AcceleratorManager subclass"),
    "resource mismatch": (lambda: {**sim_manifest(), "accelerator": {**sim_manifest()["accelerator"],
                                                                      "resource_name": "GPU"}},
                          "accelerator.resource_name: 'GPU' does not equal"),
    "yaml syntax": (lambda: "schema_version: 1\nvendor: [unclosed\n", "invalid YAML at line"),
    "not a mapping": (lambda: "- a\n- b\n", "expected a mapping at the top level"),
    "missing python_path folder": (lambda: {**sim_manifest(), "plugin": {"python_path": ["nowhere"]}},
                                   "plugin.python_path: folder not found: nowhere"),
    "custom transport without manager": (lambda: {**sim_manifest(), "transport": {"name": "MYX"}},
                                         "transport.manager: required for custom transport 'MYX'"),
    "collective RDT transport not a reference": (
        lambda: {**sim_manifest(), "collective": {"backend": "SIMCOLL", "rdt_transport": "no colon here"}},
        "collective.rdt_transport: 'no colon here' is not a reference"),
    "collective RDT device type malformed": (
        lambda: {**sim_manifest(), "collective": {"backend": "SIMCOLL", "rdt_devices": ["CUDA!!"]}},
        "collective.rdt_devices[0]: 'CUDA!!' is not the expected form"),
    # names the SIG reads (issue 30): an invisible character, a Latin word with a Cyrillic letter
    "vendor with an invisible character": (lambda: {**sim_manifest(), "vendor": sim_manifest()["vendor"] + "\u034f"},
                                           "manifest.vendor has character(s) that print as nothing or as a plain "
                                           "space: U+034F COMBINING GRAPHEME JOINER"),
    "product with a braille blank": (lambda: {**sim_manifest(), "product": "X1\u2800"},
                                     "manifest.product has character(s) that print as nothing"),
    "product word mixing scripts": (lambda: {**sim_manifest(), "product": "N\u0420U X1"},
                                    "mixes scripts (CYRILLIC, LATIN)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_manifest_one_line_exit_2(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make, expected = CASES[case]
    path = write(tmp_path, make())
    assert main(["validate-manifest", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("ray-conformance: error: manifest: ")
    assert expected in err, err
    assert "^" not in err and "$'" not in err, f"raw regular expression in the message: {err}"


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate-manifest", str(tmp_path / "absent.yaml")]) == 2
    assert "manifest: file not found" in capsys.readouterr().err


def test_json_manifest_accepted(tmp_path: Path) -> None:
    import json
    path = tmp_path / "m.json"
    path.write_text(json.dumps(sim_manifest()))
    assert check_manifest(path).resource_name == "SIMACC"


def test_bundled_manifest_valid() -> None:
    m = check_manifest(SIM_MANIFEST)
    assert m.product_slug == "simacc-x1"


def test_run_with_bad_manifest_has_no_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, {**sim_manifest(), "colour": "red"})
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip().count("\n") == 0 and "colour" in proc.stderr
    assert not (tmp_path / "reports").exists()


def test_run_rejects_unknown_required_tier(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--manifest", str(SIM_MANIFEST), "--require-tier", "platinum"]) == 2
    assert "--require-tier: unknown tier 'platinum'" in capsys.readouterr().err
