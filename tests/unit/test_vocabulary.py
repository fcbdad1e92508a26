"""One vocabulary (tiers/vocabulary.yaml): every loader rejects words it does not declare."""
from __future__ import annotations

import copy

import pytest
import yaml

from conformance.catalog import data
from conformance.errors import UserError

CHECK = {"id": "DP-001", "title": "dev", "area": "device", "level": "MUST", "requirement": "MUST do x.",
         "rationale": "because of y.", "since": "0.1.0", "tags": ["live"]}


def _checklist(**changes: object) -> dict:
    return {"schema_version": 1, "checks": [{**CHECK, **changes}]}


def test_shipped_data_uses_only_declared_words() -> None:
    suite = data.load_suite_data()
    vocab = data.load_vocabulary()
    assert {c.area for c in suite.checklist.checks} <= set(vocab.area_prefix)
    assert {t for c in suite.checklist.checks for t in c.tags} <= vocab.tags


@pytest.mark.parametrize("changes, message", [
    ({"tags": ["liev"]}, "checklist: DP-001.tags: unknown tag 'liev'"),
    ({"area": "devices"}, "checklist: DP-001.area: unknown area 'devices'"),
    ({"area": "transport"}, "checklist: DP-001.id: DP-001 is in area transport, whose ids start with TR-"),
    ({"level": "MAY"}, "checklist: DP-001.level: unknown level 'MAY'"),
])
def test_checklist_rejects_unknown_words(changes: dict, message: str) -> None:
    with pytest.raises(UserError) as err:
        data.parse_checklist(_checklist(**changes))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def _ladder(select: dict) -> dict:
    return {"schema_version": 1, "tiers": [{"name": "experimental", "summary": "s", "requires": [{"select": select}]}]}


@pytest.mark.parametrize("select, message", [
    ({"tags": ["device-recovry"]}, "unknown tag 'device-recovry'"),
    ({"areas": ["devise"]}, "unknown area 'devise'"),
    ({"areas": ["device"], "tags": ["stress"]}, "matches no active check"),
])
def test_ladder_rejects_unknown_words_and_empty_selectors(select: dict, message: str) -> None:
    checklist = data.parse_checklist(_checklist())
    with pytest.raises(UserError) as err:
        data.parse_ladder(_ladder(select), checklist=checklist)
    assert message in str(err.value) and str(err.value).startswith("tiers: experimental.requires[0].select")


def test_vocabulary_rejects_shared_prefix() -> None:
    doc = yaml.safe_load(data.vocabulary_path().read_text())
    bad = copy.deepcopy(doc)
    bad["areas"]["transport"]["prefix"] = "DP"
    with pytest.raises(UserError, match="share an id prefix"):
        data.parse_vocabulary(bad)


def test_ids_outside_every_areas_prefix_are_rejected_without_a_checklist() -> None:
    """The schemas only say 'two letters, a dash, three digits'; the prefixes come from the vocabulary."""
    with pytest.raises(UserError) as err:
        data.parse_ladder(_ladder({"ids": ["XX-001"]}))
    assert str(err.value).startswith("tiers: experimental.requires[0].select.ids: XX-001 has no area's prefix")
    assert "DP-" in str(err.value) and "\n" not in str(err.value)


def _run_knobs(tmp_path, mutate) -> str:
    doc = yaml.safe_load(data.run_knobs_path().read_text())
    mutate(doc)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError) as err:
        data._run_knobs_at(str(path))
    assert "\n" not in str(err.value)
    return str(err.value)


def test_run_knobs_checks_their_check_ids(tmp_path) -> None:
    assert "durations.checks: QQ-001 has no area's prefix" in _run_knobs(
        tmp_path, lambda d: d["durations"]["checks"].update({"QQ-001": 3}))


def test_the_area_registry_matches_the_vocabulary_both_ways() -> None:
    import dataclasses

    from conformance.areas import AREAS
    from conformance.catalog.area import registry_problems

    vocab = data.load_vocabulary()
    assert registry_problems(AREAS, vocab.area_prefix) == []
    missing = registry_problems(AREAS[:-1], vocab.area_prefix)
    assert missing == [f"tiers/vocabulary.yaml declares area {AREAS[-1].name!r}, but conformance.areas.AREAS has "
                       "no Area for it (conformance/areas/<name>/area.py)"]
    extra = dataclasses.replace(AREAS[0], name="networking", prefix="NW")
    assert "which tiers/vocabulary.yaml does not know" in registry_problems(AREAS + (extra,), vocab.area_prefix)[0]
    wrong = dataclasses.replace(AREAS[0], prefix="DX")
    assert registry_problems((wrong,) + AREAS[1:], vocab.area_prefix) == [
        "area 'device': prefix 'DX' in its Area, 'DP' in tiers/vocabulary.yaml"]
    bad_doc = dataclasses.replace(AREAS[0], doc="README.md")
    assert "doc must be a page under docs/" in registry_problems((bad_doc,) + AREAS[1:], vocab.area_prefix)[0]


def test_a_test_outside_its_areas_folder_is_refused() -> None:
    from conformance.areas import AREAS
    from conformance.run.registry_lint import area_problems

    vocab = data.load_vocabulary().area_prefix
    ok = [("device/test_a.py::t", "DP-001", "device/test_a.py"), ("x.py::t", "TR-001", "")]
    assert area_problems(ok, AREAS, vocab) == []
    assert area_problems([("transport/test_a.py::t", "DP-001", "transport/test_a.py")], AREAS, vocab) == [
        "transport/test_a.py::t: evidences DP-001 of area device, so it belongs in conformance/checks/device/"]


def test_every_area_declares_what_the_suite_reads_and_it_resolves() -> None:
    """Each declared reference imports: a typo in an Area is found here, not in the middle of a run."""
    import importlib
    from pathlib import Path

    from conformance.areas import AREAS
    from conformance.catalog.area import load_ref

    root = Path(__file__).resolve().parents[2]
    for a in AREAS:
        importlib.import_module(a.package)
        importlib.import_module(a.checks)
        assert a.context is not None, a.name
        for ref in (a.context.opens, *a.context.kinds()):
            assert load_ref(ref), ref
        if a.shapes:
            assert load_ref(a.shapes + ":KINDS")
        for block in a.html:
            assert callable(load_ref(block.render))
        path, _, _ = a.doc.partition("#")
        assert (root / path).is_file(), a.doc


def test_checklist_command_offers_the_vocabularys_areas_and_levels() -> None:
    from conformance.cli.main import build_parser
    vocab = data.load_vocabulary()
    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith("checklist"))
    choices = {a.dest: a.choices for a in sub._actions if a.dest in ("area", "level")}
    assert choices == {"area": list(vocab.area_prefix), "level": list(vocab.levels)}


def _checklist_doc() -> dict:
    """A checklist of its own (not the shipped one): a recovery area param two checks share."""
    def check(cid: str, **extra: object) -> dict:
        return {"id": cid, "title": f"check {cid}", "area": "recovery", "level": "MUST",
                "requirement": "MUST be ready within 7 s.", "rationale": "because of y.", "since": "0.1.0", **extra}
    return {"schema_version": 1, "area_params": {"recovery": {"actor_ready_s": 7}},
            "checks": [check("FR-001", area_params=["actor_ready_s"]),
                       check("FR-002", area_params=["actor_ready_s"], params={"own_s": 3})]}


def test_a_shared_param_is_declared_once_per_area() -> None:
    doc = _checklist_doc()
    checklist = data.parse_checklist(doc)
    fr1, fr2 = checklist.by_id()["FR-001"], checklist.by_id()["FR-002"]
    assert fr1.params == {"actor_ready_s": 7} and fr1.shared == ("actor_ready_s",)
    assert fr2.params == {"own_s": 3, "actor_ready_s": 7}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: next(c for c in d["checks"] if c["id"] == "FR-001").setdefault("params", {}).update(actor_ready_s=90),
     "checklist: FR-001.params.actor_ready_s: area recovery declares it once in area_params.recovery; "
     "name it in FR-001.area_params instead"),
    (lambda d: next(c for c in d["checks"] if c["id"] == "FR-001")["area_params"].append("no_such_s"),
     "checklist: FR-001.area_params: no_such_s is not in area_params.recovery"),
    (lambda d: d["area_params"]["recovery"].update(unused_s=3),
     "checklist: area_params.recovery.unused_s: no active recovery check names it"),
    (lambda d: d["area_params"].update(networking={"x_s": 1}),
     "checklist: area_params.networking: unknown area"),
])
def test_shared_param_mistakes_are_one_line_naming_the_field(mutate, message) -> None:
    doc = _checklist_doc()
    mutate(doc)
    with pytest.raises(UserError) as err:
        data.parse_checklist(doc)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
