"""The collective area's pure parts: expected results, judging, config, contract, capabilities."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.catalog.capabilities import (
    CERTIFIED,
    NOT_CERTIFIED,
    NOT_DECLARED,
    compute_capabilities,
    load_profiles,
    verify_claim,
)
from conformance.catalog.data import load_checklist
from conformance.catalog.manifest import load_manifest
from conformance.catalog.manifest_view import ManifestView
from conformance.collective import programs
from conformance.collective.config import ALL_OPS, collective_config
from conformance.collective.report import render


def test_expected_results_follow_rays_semantics() -> None:
    ws, n = 3, 4
    rows = [programs.values(5, r, n) for r in range(ws)]
    step = {"op": "allreduce", "reduce": "PRODUCT", "n": n, "seed": 5}
    assert programs.expected(step, 1, ws) == [a * b * c for a, b, c in zip(*rows)]
    red = {"op": "reduce", "reduce": "MIN", "root": 2, "n": n, "seed": 5}
    assert programs.expected(red, 2, ws) == [min(col) for col in zip(*rows)]
    assert programs.expected(red, 0, ws) is None          # non-root contents are not specified
    assert programs.expected({"op": "broadcast", "root": 2, "n": n, "seed": 5}, 0, ws) == rows[2]
    assert programs.expected({"op": "allgather", "n": n, "seed": 5}, 1, ws) == rows
    rs = programs.expected({"op": "reducescatter", "reduce": "SUM", "n": n, "seed": 5}, 1, ws)
    assert rs == [sum(col) for col in zip(*(programs.scatter_input(5, r, n, ws)[1] for r in range(ws)))]


def test_every_result_is_exact_in_the_narrowest_dtypes() -> None:
    """Products over three ranks stay <= 125 (int8, bfloat16 hold them exactly)."""
    for seed in range(20):
        step = {"op": "allreduce", "reduce": "PRODUCT", "n": 8, "seed": seed}
        assert max(programs.expected(step, 0, 3)) <= 125


def test_judge_names_a_result_not_written_in_place() -> None:
    steps = [{"op": "allreduce", "reduce": "SUM", "dtype": "float32", "lib": "torch", "n": 2, "seed": 0}]
    mine = [programs.values(0, r, 2) for r in range(2)]
    outs = [[{"values": mine[r], "input": mine[r], "dtype": "float32", "type": "torch"}] for r in range(2)]
    problems = programs.judge(steps, outs, 2)
    assert problems and "not written in place" in problems[0]


def test_judge_does_not_call_a_broadcast_sender_not_written_in_place() -> None:
    """A backend that broadcasts from rank 0 instead of the root leaves rank 0's tensor as it was,
    as a sender's is: the hint says it was taken as the root, never "not written in place"."""
    steps = [{"op": "broadcast", "root": 1, "dtype": "float32", "lib": "torch", "n": 2, "seed": 0}]
    mine = [programs.values(0, r, 2) for r in range(2)]
    outs = [[{"values": mine[0], "input": mine[r], "dtype": "float32", "type": "torch"}] for r in range(2)]
    problems = programs.judge(steps, outs, 2)
    assert len(problems) == 2 and all("not written in place" not in p for p in problems)
    assert "rank 0's tensor still holds its own input, as a root's does: the backend took it as the root " \
           "instead of rank 1" in problems[0]


def test_wrong_values_name_the_requirement_that_broke_not_a_cause() -> None:
    for cid in ("CC-004", "CC-005", "CC-007"):
        text = programs.wrong_results(cid, ["allreduce SUM: rank 1 holds [3], expected [4]"])
        assert f"({cid}: " in text and text.endswith("rank 1 holds [3], expected [4]")
        assert "not isolated" not in text and "op ordering" not in text


def test_op_matrix_covers_every_reduce_op_and_a_non_zero_root() -> None:
    steps = programs.op_matrix(3, ["float32", "bfloat16"], ["torch", "numpy"], ["allreduce", "reduce", "broadcast"], 4)
    assert {s["reduce"] for s in steps if s["op"] == "allreduce"} == {"SUM", "PRODUCT", "MIN", "MAX"}
    assert all(s["root"] == 2 for s in steps if "root" in s)
    assert not [s for s in steps if s.get("lib") == "numpy" and s["dtype"] == "bfloat16"]


def test_collective_config_defaults_and_builtin() -> None:
    m = load_manifest("builtin:simulated-collective")
    cfg = collective_config(m)
    assert cfg is not None and cfg.backend == "SIMCOLL" and not cfg.builtin and cfg.claims("sendrecv")
    bare = {**m.data, "collective": {"backend": "gloo"}}
    gloo = collective_config(SimpleNamespace(view=ManifestView.from_json(bare)))
    assert gloo is not None and gloo.builtin and gloo.ray_backend == "gloo" and gloo.dtypes == ("float32",)
    assert gloo.ops == ALL_OPS and gloo.devices == gloo.rdt_devices == ("cpu",) and gloo.requires_device
    without = {k: v for k, v in m.data.items() if k != "collective"}
    assert collective_config(SimpleNamespace(view=ManifestView.from_json(without))) is None


def test_contract_finds_the_constructor_ray_cannot_call() -> None:
    import broken_collective

    from conformance.areas.collective.contract import contract_problems
    from conformance.simulated.collective import SimCollGroup

    assert contract_problems(SimCollGroup, builtin=False) == []
    assert any("constructor" in p for p in contract_problems(broken_collective.ExtraInitArg, builtin=False))
    assert contract_problems(object, builtin=False)[0].endswith("raises TypeError)")


def test_section_renderer_sanitises_and_tabulates() -> None:
    text = render({"backend": "X\x1b[31m", "group_class": "a:B", "checks": {"CC-004": "ok"},
                   "bandwidth": [{"op": "allreduce", "world_size": 2, "bytes": 1024, "algbw_gbps": 1.5,
                                  "busbw_gbps": 1.5, "host_copy_gbps": 9.0}]})
    assert "\x1b" not in text and "| allreduce | 2 | 1024 |" in text


@pytest.fixture(scope="module")
def checklist():  # type: ignore[no-untyped-def]
    return load_checklist()


def _results(checklist, fail: str | None = None, area_outcome: dict | None = None):  # type: ignore[no-untyped-def]
    out = []
    for c in checklist.active():
        outcome = (area_outcome or {}).get(c.area, "pass")
        out.append({"id": c.id, "outcome": "fail" if c.id == fail else outcome})
    return out


def test_undeclared_collective_is_not_declared_and_costs_nothing(checklist) -> None:  # type: ignore[no-untyped-def]
    caps = {c["name"]: c for c in compute_capabilities(
        _results(checklist, area_outcome={"collective": "not_applicable"}), checklist, load_profiles(),
        {"transport": {"name": "X"}})}
    assert caps["collective"]["state"] == NOT_DECLARED and caps["collective"]["blocking"] == []
    assert caps["device"]["state"] == caps["transport"]["state"] == CERTIFIED


def test_declared_collective_failing_a_must_is_not_certified(checklist) -> None:  # type: ignore[no-untyped-def]
    caps = {c["name"]: c for c in compute_capabilities(_results(checklist, fail="CC-004"), checklist,
                                                        load_profiles(), {"collective": {"backend": "B"}})}
    assert caps["collective"]["state"] == NOT_CERTIFIED
    assert caps["collective"]["blocking"] == [{"id": "CC-004", "outcome": "fail"}]


def test_a_backend_without_rdt_transport_is_certified_for_its_declared_scope(checklist) -> None:  # type: ignore[no-untyped-def]
    """CC-011/CC-012 are not applicable without collective.rdt_transport: out of the profile's
    declared scope (named, never counted as passed), so such a backend can be certified; declared,
    they are required like every other collective MUST."""
    from conformance.report.build import capabilities_line
    rdt = {c.id for c in checklist.active() if c.area == "collective" and "transport" in c.tags}
    assert rdt == {"CC-011", "CC-012"}
    results = [{**r, "outcome": "not_applicable"} if r["id"] in rdt else r for r in _results(checklist)]
    caps = {c["name"]: c for c in compute_capabilities(results, checklist, load_profiles(),
                                                        {"collective": {"backend": "B"}})}
    assert caps["collective"]["state"] == CERTIFIED and not set(caps["collective"]["required_checks"]) & rdt
    assert caps["collective"]["out_of_scope"] == [{"id": "CC-011", "declared_by": "collective.rdt_transport"},
                                                  {"id": "CC-012", "declared_by": "collective.rdt_transport"}]
    line = capabilities_line({"capabilities": list(caps.values())})
    assert "collective **certified** (out of its declared scope: CC-011, CC-012; declaring collective.rdt\\_transport brings them in)" in line
    declared = {c["name"]: c for c in compute_capabilities(results, checklist, load_profiles(),
                                                           {"collective": {"backend": "B", "rdt_transport": "m:T"}})}
    assert declared["collective"]["state"] == NOT_CERTIFIED and "out_of_scope" not in declared["collective"]
    assert {b["id"] for b in declared["collective"]["blocking"]} == rdt


def test_verify_recomputes_capabilities(checklist) -> None:  # type: ignore[no-untyped-def]
    results = _results(checklist, fail="CC-009")
    manifest = {"collective": {"backend": "B"}}
    honest = compute_capabilities(results, checklist, load_profiles(), manifest)
    assert verify_claim({"checks": results, "manifest": manifest, "capabilities": honest}, checklist)[0]
    forged = [{**c, "state": CERTIFIED} for c in honest]
    ok, detail = verify_claim({"checks": results, "manifest": manifest, "capabilities": forged}, checklist)
    assert not ok and "collective" in detail
    assert verify_claim({"checks": results, "manifest": manifest}, checklist)[0]   # older report


def test_verify_recomputes_what_a_profile_leaves_out_of_scope(checklist) -> None:  # type: ignore[no-untyped-def]
    """out_of_scope is compared by value: a claim naming other checks (or another field) out of
    scope is refused, not only one that drops the key (the trust table's perturbation caught it)."""
    results, manifest = _results(checklist), {"collective": {"backend": "B"}}
    honest = compute_capabilities(results, checklist, load_profiles(), manifest)
    collective = next(c for c in honest if c["name"] == "collective")
    forged = [{**c, "out_of_scope": [{**c["out_of_scope"][0], "id": "CC-001"}, *c["out_of_scope"][1:]]}
              if c is collective else c for c in honest]
    ok, detail = verify_claim({"checks": results, "manifest": manifest, "capabilities": forged}, checklist)
    assert not ok and "out of scope" in detail and "CC-001" in detail


def test_judge_names_a_device_tensor_left_off_the_members_visible_device() -> None:
    """A member's device tensor must stay on its current device (the one Ray made visible to it)."""
    steps = [{"op": "allreduce", "reduce": "SUM", "dtype": "float32", "lib": "torch", "device": "dev", "n": 2, "seed": 0}]
    want = programs.expected(steps[0], 0, 2)
    mine = [programs.values(0, r, 2) for r in range(2)]
    outs = [[{"values": want, "input": mine[r], "dtype": "float32", "type": "torch", "device": "dev",
              "device_index": 0, "current_index": r}] for r in range(2)]
    problems = programs.judge(steps, outs, 2)
    assert len(problems) == 1 and "rank 1's tensor is on dev:0, not on the member's current dev:1" in problems[0]


def test_a_reason_names_each_broken_op_before_the_line_is_cut() -> None:
    """Two ops broken on a device (every rank's allreduce left as its input, one rank's
    reducescatter on another device index): CC-004's reason line, cut as a report cuts it,
    still names both, though the allreduce alone fails every rank in every reduce op first."""
    from conformance.run.outcomes import first_line

    ws = 3
    steps = programs.op_matrix(ws, ["float32"], ["torch"], ["allreduce", "reducescatter"], 4, devices=["dev"])

    def held(step: dict, rank: int) -> dict:
        mine = (programs.values(step["seed"], rank, 4) if step["op"] == "allreduce" else [0] * 4)
        got = mine if step["op"] == "allreduce" else programs.expected(step, rank, ws)
        return {"values": got, "input": mine, "dtype": "float32", "type": "torch", "device": "dev",
                "device_index": 1 if step["op"] == "reducescatter" and rank == 2 else 0, "current_index": 0}

    found = programs.judge(steps, [[held(s, r) for s in steps] for r in range(ws)], ws)
    assert len(found) == 4 * ws + 4 and found[0].startswith("allreduce")   # step order: allreduce first
    reason = first_line(programs.wrong_results("CC-004", programs.each_op_first(found)[:6]))
    assert "not written in place" in reason
    assert "rank 2's tensor is on dev:1, not on the member's current dev:0" in reason
    assert sorted(programs.each_op_first(found)) == sorted(found)   # reordered, nothing lost


def test_members_hold_units_only_for_a_device_type_and_where_the_nodes_have_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.collective import context
    from conformance.report.results import NOT_APPLICABLE_PREFIX

    state = context.CollectiveContext.__new__(context.CollectiveContext)
    state.resource = "ACC"
    state.config = SimpleNamespace(devices=("cpu",))  # type: ignore[assignment]  # a stub: only devices is read
    assert not state.member_units
    state.config = SimpleNamespace(devices=("cpu", "dev"))  # type: ignore[assignment]
    assert state.member_units
    monkeypatch.setattr(context, "node_units", lambda resource: [("n0", 2), ("n1", 1)])
    state.need_units(3, "the block declares dev")     # round-robin: 2 on n0, 1 on n1
    with pytest.raises(pytest.skip.Exception) as exc:
        state.need_units(4, "the block declares dev")  # 2 on n1, which has 1
    assert str(exc.value.msg).startswith(NOT_APPLICABLE_PREFIX) and "one ACC unit" in str(exc.value.msg)
    monkeypatch.setattr(context, "node_units", lambda resource: [])
    with pytest.raises(pytest.skip.Exception, match="none per node"):
        state.need_units(1, "RDT on dev")


def test_barriers_repeat_each_entered_late_by_another_rank() -> None:
    steps = [s for s in programs.op_matrix(3, ["float32"], ["torch"], ["barrier"], 4, barriers=3) if s["op"] == "barrier"]
    assert [(s["delay_rank"], s["nth"], s["of"]) for s in steps] == [(2, 1, 3), (0, 2, 3), (1, 3, 3)]


def test_a_barrier_left_before_every_rank_entered_is_named_by_the_logs_count_not_clocks() -> None:
    """Issue 45: a barrier whose arrivals never reset holds the group the first time only; from the
    second on the ranks that were not late leave at once. The log's count says so whatever the
    members' clocks read (here they claim the opposite)."""
    steps = programs.op_matrix(3, ["float32"], ["torch"], ["barrier"], 4, barriers=2)
    held = [{"entered": 0.0, "left": 1.0, "entered_by_exit": 3} for _ in range(3)]
    ran_ahead = [{"entered": 0.0, "left": 1.0, "entered_by_exit": 2}, {"entered": 0.0, "left": 1.0, "entered_by_exit": 2},
                 {"entered": 0.0, "left": 1.0, "entered_by_exit": 3}]
    outputs = [[held[r], ran_ahead[r]] for r in range(3)]
    problems = programs.judge(steps, outputs, 3)
    assert len(problems) == 1 and problems[0].startswith("barrier 2 of 2: rank(s) [0, 1] left the barrier before every rank had entered it (rank 0")
    assert programs.judge(steps, [[held[r], held[r]] for r in range(3)], 3) == []


def test_a_barrier_without_a_log_is_judged_by_the_members_clocks() -> None:
    step = {"op": "barrier", "delay_rank": 1, "delay_s": 0.3}
    early = [{"entered": 0.0, "left": 0.01, "entered_by_exit": None}, {"entered": 0.3, "left": 0.31, "entered_by_exit": None}]
    assert programs.barrier_problems(step, early, 2) == [
        "barrier: rank(s) [0] left the barrier before every rank had entered it (rank 1 entered late; a barrier must "
        "hold every member until all have entered, every time)"]


def test_cc008_growth_says_where_retention_usually_hides() -> None:
    """A member whose held memory grows fails CC-008 with where to look first: per-group state and
    the allocator arenas of reader threads (what a backend written outside the project kept)."""
    from conformance.checks.collective.test_collective_groups import memory_left_behind

    held = iter([[100.0, 100.0], [100.0, 140.0], [100.0, 180.0]])
    backend = SimpleNamespace(pool=lambda: ["a", "b"], group_name=lambda s: s, create=lambda *a: None,
                              destroy=lambda *a: None,
                              ask=lambda members, method, *a, **k: [True, True] if method == "payload_allreduce"
                              else next(held))
    params = {"op_bound_s": 5, "leak_cycles": 3, "leak_payload_mib": 40, "leak_warmup_cycles": 1, "max_growth_mib": 16}
    ctx = SimpleNamespace(backend=backend, param=params.__getitem__, metrics={})
    [problem] = memory_left_behind(ctx)   # type: ignore[arg-type]
    assert problem.startswith("the host memory member 1 holds") and "grew by 80 MiB" in problem
    assert "allocator arenas of the backend's reader threads" in problem and "malloc_trim" in problem


def test_every_call_into_the_backend_is_recorded_as_the_plugins_wait_under_its_param(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: each op lands in the check's metrics.waits (owner plugin, the param that bounds it,
    what it took), whether or not Ray started actors inside it, so verify holds a pass to its bound
    and the bound to the release's; an op that hangs is recorded as ran out."""
    from conformance import leftovers
    from conformance.collective import context
    from conformance.timing.owned import RECORDER, Wait, wait_problems

    state = context.CollectiveContext.__new__(context.CollectiveContext)
    state.discard = lambda members: None  # type: ignore[method-assign]  # the pool is not what is tested
    member = SimpleNamespace(_actor_id=SimpleNamespace(hex=lambda: "a1"))
    monkeypatch.setattr(leftovers, "starting_actors", lambda ids: [])
    kept: list[Wait] = []
    token = RECORDER.set(kept.append)
    try:
        monkeypatch.setattr(context, "bounded", lambda refs, timeout_s, what: ["ok"])
        assert state.op([member], ["ref"], 60.0, "2 op(s) in group of 1", param="op_bound_s") == ["ok"]

        def hangs(refs: object, timeout_s: float, what: str) -> object:
            raise context.Hang(f"{what}: no answer")
        monkeypatch.setattr(context, "bounded", hangs)
        monkeypatch.setattr(context, "BIRTH_CHECK_S", 0.01)
        with pytest.raises(context.Hang):
            state.op([member], ["ref"], 0.02, "round 1 in group g", param="op_bound_s")
    finally:
        RECORDER.reset(token)
    met, ran_out = (w.as_json() for w in kept)
    assert (met["owner"], met["param"], met["verdict"], met["bound_s"]) == ("plugin", "op_bound_s", "met", 60.0)
    assert met["took_s"] < 1.0 and ran_out["verdict"] == "ran out"
    waits = {"each": [met], "count": 1}
    assert wait_problems(waits, {"op_bound_s": 60}, passed=True) == []
    assert wait_problems(waits, {"op_bound_s": 30}, passed=True) == [
        "wait '2 op(s) in group of 1' records bound_s 60, the release's op_bound_s is 30"]
    assert wait_problems({"each": [ran_out], "count": 1}, {"op_bound_s": 0.02}, passed=True) != []
