"""One vocabulary (tiers/vocabulary.yaml): every loader rejects words it does not declare."""
from __future__ import annotations

import copy

import pytest
import yaml

from conformance import data
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
