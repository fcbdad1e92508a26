"""Whose time each wait is, as the checklist declares it (`waits:`, conformance/catalog/declared_waits.py):
the loader's refusals, and verify holding a pass's recorded waits to the declaration of the release the
report names (held-out round 34's W3: plugin waits relabelled as Ray's; W4: every plugin wait dropped)."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import declared_waits
from conformance.catalog.data import Check, load_checklist
from conformance.errors import UserError
from conformance.signing.evidence import evidence_problems
from tests.support.example_report import EXAMPLE, example_checklist


def _check(**waits: Any) -> Check:
    return Check.from_dict({"id": "FR-001", "title": "t", "area": "recovery", "level": "MUST", "requirement": "r", "rationale": "r",
                            "since": "0.1.0", "params": {"actor_ready_s": 60, "device_release_s": 30}, "waits": waits})


def test_an_entry_is_a_param_of_the_check_or_unnamed() -> None:
    check = _check(plugin=["unnamed"], ray=["actor_ready_s", "unnamed"])
    assert check.waits == declared_waits.DeclaredWaits(plugin=("unnamed",), ray=("actor_ready_s", "unnamed"))
    with pytest.raises(UserError, match=r"FR-001\.waits\.ray: 'rejoin_s' is not one of the check's params"):
        _check(ray=["rejoin_s"])


def test_a_param_bounds_one_owners_waits() -> None:
    with pytest.raises(UserError, match=r"FR-001\.waits: actor_ready_s is declared for the plugin and for Ray"):
        _check(plugin=["actor_ready_s"], ray=["actor_ready_s"])


def _wait(owner: str, param: str | None = None, what: str = "w") -> dict[str, Any]:
    return {"owner": owner, "what": what, "bound_s": 1.0, "granted_s": 1.0, "took_s": 0.5, "verdict": "met",
            **({"param": param} if param else {})}


def test_a_pass_holds_each_wait_to_its_owner_and_bound() -> None:
    declared = declared_waits.DeclaredWaits(plugin=("scenario_bound_s",), ray=("all_bound_s", "unnamed"))
    honest = {"each": [_wait("plugin", "scenario_bound_s"), _wait("ray", "all_bound_s"), _wait("ray")], "count": 3}
    assert declared_waits.problems(honest, declared) == []
    kept_param = {"each": [_wait("plugin", "scenario_bound_s"), _wait("ray", "scenario_bound_s", "scenario")], "count": 2}
    assert declared_waits.problems(kept_param, declared) == [
        "the wait 'scenario' is Ray's, bounded by scenario_bound_s; the release declares Ray's waits of this check "
        "bounded by: all_bound_s, unnamed (checklist waits.ray)"]
    dropped = {"each": [_wait("ray")], "count": 1}
    assert "records no wait of the plugin's" in declared_waits.problems(dropped, declared)[0]
    assert declared_waits.problems(dropped, None) == []   # a release before the field


def _example() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return report


def _refusals(report: dict[str, Any]) -> list[str]:
    problems, _ = evidence_problems(report["checks"], example_checklist(), report.get("manifest") or {})
    return problems


def test_every_wait_the_example_records_is_declared() -> None:
    """The example (a real 2-node certification) under its own release: every check that recorded a
    wait declares its waits, and no pass contradicts the declaration."""
    checklist = example_checklist().by_id()
    if all(c.waits is None for c in checklist.values()):
        pytest.skip("reports/example was made under a release before `waits:` (make example after make release)")
    for entry in _example()["checks"]:
        waits = entry.get("metrics", {}).get("waits")
        if waits:
            assert checklist[entry["id"]].waits is not None, f"{entry['id']} records waits and declares none"
            if entry["outcome"] == "pass":
                assert declared_waits.problems(waits, checklist[entry["id"]].waits) == [], entry["id"]


@pytest.mark.parametrize("check_id,edit,expected", [
    # W4: every type's plugin wait dropped (the scenario ran past its bound on both)
    ("WL-001", "drop", "WL-001 claims pass but records no wait of the plugin's"),
    # W3: relabelled as Ray's, the param dropped (a wait naming none: the suite's nominal bounds)
    ("WL-001", "relabel", "WL-001 claims pass but records no wait of the plugin's"),
    # W3 on a recovery scenario (its one plugin wait)
    ("FR-001", "relabel", "FR-001 claims pass but records no wait of the plugin's"),
    # W3 keeping the param: a param bounds one owner's waits, so the relabelled wait itself is refused
    ("TR-019", "relabel-keep", "TR-019 claims pass but the wait 'concurrent-transfers"),
])
def test_verify_refuses_plugin_waits_dropped_or_relabelled(check_id: str, edit: str, expected: str) -> None:
    if example_checklist().by_id()[check_id].waits is None:
        pytest.skip("reports/example was made under a release before `waits:`")
    report = copy.deepcopy(_example())
    entry = next(c for c in report["checks"] if c["id"] == check_id)
    waits = entry["metrics"]["waits"]
    plugin = [w for w in waits["each"] if w["owner"] == "plugin"]
    assert plugin and entry["outcome"] == "pass"
    if edit == "drop":
        waits["each"] = [w for w in waits["each"] if w["owner"] != "plugin"]
        waits["count"] -= len(plugin)
    else:
        for w in plugin:
            w["owner"] = "ray"
            if edit == "relabel":
                w.pop("param", None)
    assert not any(expected in p for p in _refusals(_example()))
    assert any(expected in p for p in _refusals(report)), _refusals(report)


def test_every_timed_scenario_declares_plugin_waits_and_ray_may_name_none() -> None:
    """A check with a timed scenario declares the plugin's waits; every declaration lets Ray's waits
    name no param: a shared pool or node lab records its start in whichever check needs it first, and
    a selection or a shard changes which check that is (CC-007 records no start in a whole run)."""
    checks = load_checklist().active()
    for check in checks:
        if check.scenario is not None:
            assert check.waits is not None and check.waits.plugin, check.id
        if check.waits is not None:
            assert declared_waits.UNNAMED in check.waits.ray, check.id


def test_a_run_never_writes_a_pass_whose_waits_its_checklist_does_not_declare() -> None:
    """The run applies the rule to its own passes (report/results.aggregate): a wait the checklist does
    not declare is the suite's defect, an `error` in the run, never a pass verify then refuses."""
    from dataclasses import replace

    from conformance.report.results import TestRecord, aggregate

    checklist = load_checklist()
    check = replace(checklist.by_id()["TR-019"], judge=None)   # the waits alone: no judge's evidence to record
    assert check.waits is not None
    only = replace(checklist, checks=(check,))
    relabelled = {"each": [_wait("ray", "scenario_bound_s", "concurrent-transfers")], "count": 1}
    [entry] = aggregate([TestRecord("t::a", "TR-019", "pass", metrics={"waits": relabelled})], only)
    assert entry["outcome"] == "error"
    assert entry["reason"].startswith("this suite's defect, not the plugin's: the check passed but the wait "
                                      "'concurrent-transfers' is Ray's, bounded by scenario_bound_s")


def _raw_with_waits(value: object) -> dict[str, Any]:
    """The current checklist's document with FR-001's `waits:` replaced."""
    from conformance.catalog import datafiles
    from conformance.catalog.data import checklist_path

    raw: dict[str, Any] = copy.deepcopy(datafiles.read_yaml_or_json(checklist_path(), what="checklist"))
    next(c for c in raw["checks"] if c["id"] == "FR-001")["waits"] = value
    return raw


@pytest.mark.parametrize("value", ["plugin", {}, {"plugin": "unnamed"}, {"plugin": []}, {"host": ["unnamed"]},
                                   {"ray": ["Unnamed!"]}, {"ray": ["unnamed", "unnamed"]}, {"ray": [3]}])
def test_the_schema_refuses_a_malformed_declaration_in_one_line(value: object) -> None:
    from conformance.catalog.data import parse_checklist

    with pytest.raises(UserError, match="waits") as exc:
        parse_checklist(_raw_with_waits(value))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("ray, named", [(["no_such_s"], "FR-001.waits.ray: 'no_such_s' is not one of the check's params"),
                                        (["no_such_s\x1b[2J"], "waits.ray[0]: 'no_such_s\\x1b[2J' is not the expected form")])
def test_a_hostile_declaration_ends_the_command_in_one_line_exit_2(tmp_path: Path, ray: list[str], named: str) -> None:
    """Through the command: a data folder whose checklist declares a wait by a param the check lacks
    (or by a string no param can be) is refused in one line naming the field, exit 2, no traceback,
    nothing of the string printed raw."""
    import os
    import shutil
    import subprocess
    import sys

    import yaml

    from conformance.catalog.datafiles import data_root

    root = tmp_path / "data"
    for folder in ("tiers", "schemas"):   # the data the command reads, nothing else of the checkout
        shutil.copytree(data_root() / folder, root / folder)
    path = root / "tiers" / "checklist.yaml"
    doc = yaml.safe_load(path.read_text())
    next(c for c in doc["checks"] if c["id"] == "FR-001")["waits"] = {"plugin": ["unnamed"], "ray": ray}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {**os.environ, "CONFORMANCE_DATA_DIR": str(root)}
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "checklist"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 2, proc.stdout[-500:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr
