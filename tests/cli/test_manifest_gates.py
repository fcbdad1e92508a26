"""The field -> not_applicable map (schemas/manifest.schema.json, x-not-applicable-without) is
linted against the checks' code, so it cannot drift: what the code makes not applicable without
a manifest field is exactly what the map says, and validate-manifest names each such MUST."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conformance.catalog.data import load_suite_data
from conformance.catalog.datafiles import load_schema
from conformance.catalog.manifest_gates import load_gates, missing_lines

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "conformance" / "checks"
FIELD = re.compile(r"\b((?:accelerator|topology|transport|cluster)(?:\.[a-z_]+)+)")
# What makes a check not applicable without a field when no message in its own body names it:
# the fixture type it asks for, the helper it calls, the cluster shape it runs on. Each entry is
# checked below against the code that raises the not_applicable.
INDIRECT = {"UsageCtx": "transport", "TransferRecoveryCtx": "transport",
            "TransportCtx": "transport", "PerformanceCtx": "transport",
            "require_provider": "topology.provider", "cluster:host-without-device": "accelerator.hosts.without_device"}
INDIRECT_SOURCES = {"transport": ("conformance/rdt/registration.py", "the manifest declares no transport"),
                    "topology.provider": ("conformance/areas/topology/pytest_support.py", "declares no topology.provider"),
                    "accelerator.hosts.without_device": ("conformance/areas/device/shapes.py",
                                                         "declares no accelerator.hosts.without_device")}


def _not_applicable_strings(fn: ast.FunctionDef) -> list[str]:
    out = []
    for call in ast.walk(fn):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "not_applicable":
            out += [n.value for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


def derived_from_code() -> dict[str, set[str]]:
    """field -> check ids whose test ends not_applicable without it, read from conformance/checks
    (and the shape each runs on from the checklist's `cluster:`)."""
    by_id = load_suite_data().checklist.by_id()
    found: dict[str, set[str]] = {}
    for path in sorted(CHECKS.rglob("test_*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            marks = {getattr(d.func, "attr", ""): d.args[0].value for d in fn.decorator_list
                     if isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Constant)}
            cid = marks.get("check")
            if not cid:
                continue
            names = {n.id for a in fn.args.args if a.annotation is not None for n in ast.walk(a.annotation)
                     if isinstance(n, ast.Name)}
            names |= {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
            shape = by_id[cid].shape()
            if shape is not None:
                names.add(f"cluster:{shape}")
            fields = {INDIRECT[n] for n in names if n in INDIRECT}
            for text in _not_applicable_strings(fn):
                if "manifest" in text:
                    fields |= set(FIELD.findall(text))
            for f in fields:
                found.setdefault(f, set()).add(cid)
    return found


def test_the_map_is_what_the_code_does() -> None:
    checklist = load_suite_data().checklist
    claimed: dict[str, set[str]] = {}
    for g in load_gates(checklist):
        for f in g.fields:
            claimed.setdefault(f, set()).update(g.checks)
    # a gate's `unless` fields (what excuses the missing one) may be named in its message too
    excusing = {c["field"]: set(g.checks) for g in load_gates(checklist) for c in g.unless}
    derived = {f: ids - excusing.get(f, set()) for f, ids in derived_from_code().items()}
    derived = {f: ids for f, ids in derived.items() if ids}
    for field, ids in derived.items():
        assert field in claimed, f"{field}: checks {sorted(ids)} are not applicable without it; add it to the map"
        assert ids <= claimed[field], f"{field}: the map misses {sorted(ids - claimed[field])}"
    for field, ids in claimed.items():
        code = set().union(*(derived.get(f, set()) for f in [field]))
        # an all_missing gate (DP-018) names its first field in the message; the gate covers both
        siblings = [g for g in load_gates(checklist) if field in g.fields]
        code |= set().union(*(derived.get(f, set()) for g in siblings for f in g.fields))
        assert ids <= code, f"{field}: the map claims {sorted(ids - code)}, which the code does not make not applicable"


def test_every_field_is_a_manifest_field_and_every_indirect_gate_is_real() -> None:
    schema = load_schema("manifest")
    for g in load_gates(load_suite_data().checklist):
        assert g.checks and g.why
        for f in g.fields:
            node = schema
            for key in f.split("."):
                node = node["properties"][key]
    for path, phrase in INDIRECT_SOURCES.values():
        assert phrase in (ROOT / path).read_text(), f"{path} no longer says {phrase!r}: update INDIRECT"


def test_missing_lines_name_every_must() -> None:
    checklist = load_suite_data().checklist
    bare = {"accelerator": {"manager": "m:M", "resource_name": "X", "expected": {"devices_per_node": 1,
                                                                                 "accelerator_type": "x"}}}
    text = "\n".join(missing_lines(bare, checklist))
    for cid in ("DP-017", "DP-018", "DP-020", "DP-014", "TL-004", "TR-001", "FR-012"):
        assert cid in text
    assert "MUST DP-017" in text and "accelerator.hosts.library_error and accelerator.hosts.unknown_device" in text
    one = dict(bare, accelerator=dict(bare["accelerator"], hosts={"library_error": {"X": "1"}}))
    assert "DP-018" not in "\n".join(missing_lines(one, checklist))   # one fault overlay is enough


def test_validate_manifest_names_the_musts_a_missing_field_makes_not_applicable(tmp_path: Path) -> None:
    src = yaml.safe_load((ROOT / "conformance/simulated/manifest.yaml").read_text())
    src["accelerator"].pop("noset_env_var", None)
    src["accelerator"].pop("hosts", None)
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(src))
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "validate-manifest", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "manifest OK" in proc.stdout
    assert "without accelerator.hosts.without_device: not applicable: MUST DP-017" in proc.stdout
    assert "without accelerator.noset_env_var" in proc.stdout and "DP-020" in proc.stdout


def test_every_gate_field_is_in_the_readme_example_the_skeleton_and_the_guide() -> None:
    from conformance.catalog.manifest_gates import excused, has_field
    from conformance.cli.scaffold import skeleton_files

    gates = load_gates(load_suite_data().checklist)
    readme = (ROOT / "README.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", readme, re.S)]
    import textwrap
    blocks = [yaml.safe_load(textwrap.dedent(b)) for b in re.findall(r"^( *)```yaml\n(.*?)^\1```", readme, re.S | re.M)
              for b in [b[1]]] or blocks
    example = next(b for b in blocks if isinstance(b, dict) and "schema_version" in b)
    skeleton = yaml.safe_load(skeleton_files(vendor="V", product="P", resource="ACME", package="acme", topology=True,
                                             transport=True)["manifest.yaml"])
    guide = (ROOT / "docs" / "writing-a-plugin.md").read_text()
    for g in gates:
        for f in g.fields:
            assert has_field(example, f), f"README's example manifest lacks {f}"
            # a field the skeleton's own choices excuse (its transport moves host memory) is a comment there
            assert has_field(skeleton, f) or excused(skeleton, g), f"init's skeleton manifest lacks {f}"
            assert f"`{f}`" in guide, f"docs/writing-a-plugin.md does not explain {f}"
    from conformance.catalog.manifest_gates import gates_markdown
    assert gates_markdown(load_suite_data().checklist) in guide, "run `ray-conformance docs`"


def test_validate_manifest_refuses_a_collective_block_naming_what_does_not_exist(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The collective block's group_class, register and rdt_transport are imported and checked
    (a name that does not exist is one line, exit 2), and the summary names the backend."""
    from conformance.cli.main import main
    src = yaml.safe_load((ROOT / "conformance/simulated/manifest-collective.yaml").read_text())
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(src))
    assert main(["validate-manifest", str(good)]) == 0
    assert "collective SIMCOLL (conformance.simulated.collective:SimCollGroup, RDT over it)" in capsys.readouterr().out
    for field, ref, needle in (("group_class", "conformance.simulated.collective:NoSuchGroup", "collective.group_class"),
                               ("register", "conformance.simulated.collective:no_such_register", "collective.register"),
                               ("group_class", "conformance.simulated.collective:register", "not a ray.util.collective BaseGroup")):
        bad = tmp_path / f"bad-{field}.yaml"
        bad.write_text(yaml.safe_dump({**src, "collective": {**src["collective"], field: ref}}))
        rc = main(["validate-manifest", str(bad)])
        err = capsys.readouterr().err
        assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_validate_manifest_warns_of_a_device_transport_without_a_link_and_says_what_the_shape_reaches(
        capsys) -> None:  # type: ignore[no-untyped-def]
    """A device transport without transport.expected.link_bandwidth_gbps: PF-002 not applicable,
    named after "manifest OK"; and what a suite-started cluster of the manifest's shape can reach,
    computed from the ladder (FR-017/FR-018 can never pass there: the SHOULD misses left)."""
    from conformance.catalog.ladder import shape_limits, should_slack
    from conformance.cli.main import main

    assert main(["validate-manifest", str(ROOT / "tests/manifests/simxfer-device.yaml")]) == 0
    out = capsys.readouterr().out
    assert "without transport.expected.link_bandwidth_gbps: not applicable: MUST PF-002" in out
    assert "PF-002 cannot: the manifest leaves out transport.expected.link_bandwidth_gbps" in out
    assert "reach: at most no tier on a cluster the suite starts (1 node(s)" in out

    assert main(["validate-manifest", str(ROOT / "conformance/simulated/manifest-2node.yaml")]) == 0
    out = capsys.readouterr().out
    assert "PF-002" not in out                       # its transport declares the link
    data = load_suite_data()
    stable = next(t for t in data.ladder.tiers if t["name"] == "stable")
    share = next(c for c in stable["conditions"] if c["kind"] == "should_share")
    limits = shape_limits(data.ladder.shape_policy, None, {"partition_faults": False})
    slack = should_slack(data.checklist, data.ladder, stable, share, limits, {})
    assert "reach: at most stable on a cluster the suite starts (2 node(s), 4 device(s) per node" in out
    assert f"{slack['misses_allowed']} more SHOULD miss" in out
    assert "FR-017, FR-018 cannot: needs a fault driver that can partition a node" in out


def test_a_gate_unless_condition_excuses_the_missing_field() -> None:
    from conformance.catalog.manifest_gates import missing

    [gate] = [g for g in load_gates(load_suite_data().checklist) if g.checks == ("PF-002",)]
    device = {"transport": {"name": "X", "devices": ["npu"]}}
    assert missing(device, [gate]) == [gate]
    for excused in ({"transport": {"name": "X"}}, {"transport": {"name": "X", "devices": ["cpu"]}},
                    {**device, "topology": {"expected": {"links": [{"min_bandwidth_gbps": 1}]}}},
                    {"transport": {"name": "X", "devices": ["npu"], "expected": {"link_bandwidth_gbps": 9}}}):
        assert missing(excused, [gate]) == [], excused
