"""Issue 43, the transport's traits (one_sided: is_one_sided(), can_abort: can_abort_transport()):
what the vendor's class returned, recorded in the evidence, and judges branch on them (a failure
excused because "abort not supported"). The class: a trait flipped in the evidence to make a
judge lenient. Held to Ray's for a built-in the manifest names, to the evidence of the branch
that ran (the steps, the aborts Ray made), and in verify to every other record of it. Pure.
"""
from __future__ import annotations

import copy
from typing import Any

from judged import MANIFEST, PASSING
from judged import recovery as rc
from judged import transport as tr

from conformance.catalog.data import load_checklist
from conformance.rdt.config import BUILTIN_TRAITS, builtin_traits
from conformance.report import judges
from conformance.signing.evidence import transport_trait_problems

CHECKLIST = load_checklist()
CHECKS = CHECKLIST.by_id()


def verdict(cid: str, metrics: dict[str, Any], man: dict[str, Any] | None = None) -> judges.Verdict:
    return judges.judge(CHECKS[cid], metrics, MANIFEST if man is None else man)


def builtin(name: str) -> dict[str, Any]:
    man = copy.deepcopy(MANIFEST)
    man["transport"] = {"name": name, "devices": ["cpu"]}
    return man


def test_rays_builtins_fix_both_traits_and_a_vendors_own_declares_none() -> None:
    assert builtin_traits(builtin("nixl")) == {"one_sided": True, "can_abort": True}
    assert builtin_traits(builtin("GLOO")) == {"one_sided": False, "can_abort": False}
    assert builtin_traits({"transport": {"name": "NIXL", "manager": "pkg.mod:Mine"}}) is None
    assert builtin_traits(MANIFEST) is None and builtin_traits({}) is None
    assert set(BUILTIN_TRAITS) == {"GLOO", "NCCL", "NIXL", "CUDA_IPC"}


def test_tr015_can_abort_is_held_to_the_steps_that_ran_and_to_a_builtins() -> None:
    assert verdict("TR-015", PASSING["TR-015"]).outcome == "pass"
    flipped = tr.FAILING["TR-015"][-2]   # can_abort False beside the source-kept steps
    v = verdict("TR-015", flipped)
    assert v.outcome == "fail" and "the record says can_abort is False" in str(v.reason), v
    assert "the same object sent to a new receiver" in str(v.reason)
    assert verdict("TR-015", tr.FAILING["TR-015"][-1]).outcome == "error"   # the trait dropped
    # CUDA_IPC cannot abort: a record that says it can is not Ray's class
    v = verdict("TR-015", PASSING["TR-015"], builtin("CUDA_IPC"))
    assert v.outcome == "fail" and "Ray's built-in CUDA_IPC returns False" in str(v.reason), v
    assert verdict("TR-015", PASSING["TR-015"], builtin("NIXL")).outcome == "pass"


def test_tr018_one_sided_false_beside_the_borrowers_that_only_a_one_sided_transport_runs() -> None:
    assert verdict("TR-018", PASSING["TR-018"]).outcome == "pass"
    v = verdict("TR-018", tr.FAILING["TR-018"][1])
    assert v.outcome == "fail" and "the record says one_sided is False" in str(v.reason), v
    # a two-sided record without borrowers is a two-sided run's
    two_sided = copy.deepcopy(tr.FAILING["TR-018"][1])
    two_sided["steps"] = [s for s in two_sided["steps"] if not s["step"].startswith(tr.J.BORROWER_STEPS)]
    two_sided["step_count"] = len(two_sided["steps"])
    assert verdict("TR-018", two_sided).outcome == "pass"
    assert verdict("TR-018", two_sided, builtin("NIXL")).outcome == "fail"   # NIXL is one-sided


def test_fr014_an_abort_observed_contradicts_can_abort_false() -> None:
    assert verdict("FR-014", PASSING["FR-014"]).outcome == "pass"
    excused = rc.FAILING["FR-014"][-2]
    v = verdict("FR-014", excused)
    assert v.outcome == "fail" and "records an abort Ray made" in str(v.reason), v
    assert verdict("FR-014", rc.FAILING["FR-014"][-1]).outcome == "error"   # can_abort dropped: never "cannot"
    # the honest branch of a transport that cannot abort passes; the actors killed beside True do not
    cannot = rc.but("FR-014", transport={**rc.TRANSPORT, "can_abort": False}, abort_calls=None, abort_seen_s=None,
                    abort_failed=None, alive_after_abort=None, actors_killed_s=1.0, transferred_again=["new pair"])
    assert verdict("FR-014", cannot).outcome == "pass"
    v = verdict("FR-014", rc.but("FR-014", actors_killed_s=1.0))
    assert v.outcome == "fail" and "records Ray killing both actors" in str(v.reason), v


def test_every_recovery_transfer_check_holds_a_builtins_traits() -> None:
    gloo = builtin("GLOO")
    for cid in ("FR-012", "FR-014", "FR-015"):
        v = verdict(cid, PASSING[cid], gloo)
        assert v.outcome == "fail" and "Ray's built-in GLOO returns False" in str(v.reason), (cid, v)


def _report(**flips: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    checks = [{"id": cid, "outcome": "pass", "metrics": copy.deepcopy(PASSING[cid])}
              for cid in ("TR-010", "TR-015", "TR-018", "FR-014")]
    for c in checks:   # one transport: the recovery records say what the transport records say
        t = c["metrics"].get("transport")
        if isinstance(t, dict):
            t.update(one_sided=True, can_abort=True)
    for cid, (path, value) in flips.items():
        metrics = next(c for c in checks if c["id"] == cid.replace("_", "-"))["metrics"]
        *keys, last = path.split(".")
        for k in keys:
            metrics = metrics[k]
        metrics[last] = value
    sections = {"Transport": {"data": {"transport": {"name": "NPUXFER", "one_sided": True, "can_abort": True}}}}
    return checks, sections


def test_verify_holds_every_record_of_a_trait_to_the_others() -> None:
    checks, sections = _report()
    assert transport_trait_problems(checks, sections, CHECKLIST) == []
    # can_abort flipped in the one check whose judge it makes lenient
    checks, sections = _report(FR_014=("transport.can_abort", False))
    assert transport_trait_problems(checks, sections, CHECKLIST) == [
        "FR-014 transport.can_abort is False but the report's Transport section says True: the transport's "
        "can_abort is one answer of its class"]
    # one_sided flipped everywhere but in TR-010, whose judge holds it to the calls Ray made
    checks, sections = _report(TR_015=("transport.one_sided", False), TR_018=("transport.one_sided", False),
                               FR_014=("transport.one_sided", False))
    sections["Transport"]["data"]["transport"]["one_sided"] = False
    found = transport_trait_problems(checks, sections, CHECKLIST)
    assert found == ["TR-010 one_sided is True but the report's Transport section says False: the transport's "
                     "one_sided is one answer of its class"], found
    # without the section, the first record is the reference; a trait that is not a bool is no answer
    checks, _ = _report(TR_018=("transport.can_abort", "no"))
    found = transport_trait_problems(checks, {}, CHECKLIST)
    assert len(found) == 1 and found[0].startswith("TR-018 transport.can_abort is 'no' but TR-015 transport.can_abort")
    # another area's one_sided (CC-011: the collective backend's transport) is not the manifest's transport's
    checks, sections = _report()
    checks.append({"id": "CC-011", "outcome": "pass", "metrics": {"one_sided": False}})
    assert transport_trait_problems(checks, sections, CHECKLIST) == []
