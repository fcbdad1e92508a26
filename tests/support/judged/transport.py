"""The transport area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it; its transport declares no devices, so the
host's, "cpu", is the one type and each check's evidence is flat). FAILING: check id -> records
its judge must not pass (each a way the check's evidence shows a failure, or a lie about it).
tests/unit/test_judges.py holds every judge to both tables; tests/unit/test_judges_transport.py
holds the rules one by one (several declared device types among them).
"""
from __future__ import annotations

import copy
from typing import Any

from conformance.areas.transport import judges as J
from conformance.rdt.payloads import ALL_DTYPES, CONTAINERS, SHAPES, VIEW_DTYPES, VIEWS

ONE = {"devices": ["cpu"]}
CAP = {"env": "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES", "value": "4KiB", "bytes": 4096}   # the run's size knob (as PF's)


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def _step(what: str, expect: str = "data", took: float = 0.5, bound: float = 30.0, **more: Any) -> dict[str, Any]:
    return {"step": what, "expect": expect, "bound_s": bound, "took_s": took, "ok": True, **more}


def _scenario(steps: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {**ONE, "transport": {"name": "NPUXFER", "one_sided": True, "can_abort": True}, "steps": steps,
            "step_count": len(steps), "scenario": {"elapsed_s": 20.0, "excluded_s": 4.0, "bound_s": 244.0},
            "waits": {"each": [{"owner": "plugin", "what": "scenario", "bound_s": 240.0, "granted_s": 244.0, "took_s": 20.0,
                                "verdict": "met", "param": "scenario_bound_s", "excluded_s": 4.0},
                               {"owner": "ray", "what": "2 peer actor(s) to start", "bound_s": 60.0, "granted_s": 60.0,
                                "took_s": 4.2, "verdict": "met", "factor": 1.0}], "count": 2},
            # the warm pool's tally and the give-back (judges/handover.py, from handover_bound_s's release on)
            "warm_pool": {"lent": 1, "born": 1},
            "handover": [{"returned": 1, "stopped": 1, "leaks": [], "took_s": 0.2, "bound_s": 27.1,
                          "why_stopped": ["gone: ActorDiedError"]}], **more}


TR001 = {**ONE, "cases": len(ALL_DTYPES) * len(SHAPES), "wrong": 0, "dtypes": list(ALL_DTYPES), "shapes": list(SHAPES),
         "unsupported_by_device": {}, "core_dtypes_unsupported": []}
TR005 = {**ONE, "cases": len(ALL_DTYPES) + J.METADATA_EXTRA_CASES, "wrong": 0, "dtypes": list(ALL_DTYPES)}
TR010 = {**ONE, "one_sided": True, "transfers": J.SIDEDNESS_TRANSFERS, "sends": {},
         "receives_per_object": [1] * J.SIDEDNESS_TRANSFERS, "receives_on_destination": J.SIDEDNESS_TRANSFERS, "raised": []}
TR011_OBJECT = {"on_source": 1, "elsewhere": 0, "tensor_meta": [[[2, 3], "torch.float32"]],
                "tensors": [[[2, 3], "torch.float32"]], "tensor_device": "cpu", "tensor_devices": ["cpu"],
                "receive_started_first": False}
TR011 = {**ONE, "cases": len(J.EXTRACT_CASES), "stray": 0, "transfer_errors": [],
         "objects": [{"case": c, **TR011_OBJECT} for c in J.EXTRACT_CASES]}
TR012 = {**ONE, "freed_objects": J.GC_OBJECTS, "gc_per_object": [1] * J.GC_OBJECTS, "gc_calls_on_source": J.GC_OBJECTS,
         "gc_raised": [], "gc_elsewhere": 0, "still_held": 0, "leftover_bound_s": 10, "left_behind": []}
TR015 = _scenario([_step(J.RECEIVER_KILLED, "error", error="ActorDiedError: the actor died"),
                   *[_step(f"{phase}: {x}") for phase in J.RECOVERY_PHASES
                     for x in ("the same object sent to a new receiver", "a new object to the new receiver")],
                   _step(J.RECEIVER_DIED, "error", error="ActorDiedError: the actor died")],
                  before_error_s=1.0, during_error_s=1.5, during_bytes=64 << 20)
TR016 = _scenario([_step(s, "error", error="RayTaskError(ValueError): conformance-app-error-1", carries="conformance-app-error")
                   if i < 3 else _step(s) for i, s in enumerate(J.PRODUCER_ERROR_STEPS)],
                  retried_attempts=J.RETRY_ATTEMPTS, objects_after_retry=1)
TR017 = _scenario([_step(s, bound=15.0 if s.startswith("the source to free") else 60.0) for s in J.OWNERSHIP_STEPS]
                  + [_step(f"{J.LATER_OBJECT}{k} from the same source", bound=60.0) for k in range(3)])
TR018 = _scenario([_step(s, bound=60.0) for s in J.USER_REF_STEPS + J.BORROWER_STEPS],
                  exercised=["chain of three", "own ref", "tensorless return", "borrowers"])
TR019 = _scenario([_step(J.BUSY_SENDER_STEP, took=0.4, bound=5.0)], transfers=100, actors=4, payload_bytes=65536,
                  all_done_s=12.0, all_bound_s=60.0, wrong=0, completed_out_of_order=True, busy_sender_transfer_s=0.4)
TR020 = _scenario([_step(J.FETCH_STEPS[0], bound=60.0),
                   *[_step(s, "error", took=1.1, bound=3.0, error="GetTimeoutError: Get timed out", carries="GetTimeoutError")
                     for s in J.USER_TIMEOUT_GETS],
                   _step(J.FETCH_STEPS[3], bound=60.0), _step(J.FETCH_STEPS[4], "either", took=2.0, bound=15.0)],
                  fetched=4, fetch_wrong=0, user_timeout_took_s=[1.1, 1.1], plain_receiver="error", plain_receiver_s=2.0,
                  plain_receiver_error="ValueError: the actor has no tensor transport")

PASSING: dict[str, dict[str, Any]] = {
    "TR-001": TR001,
    "TR-002": {**ONE, "cases": len(VIEWS) * len(VIEW_DTYPES), "wrong": 0, "views": list(VIEWS), "dtypes": list(VIEW_DTYPES)},
    "TR-003": {**ONE, "cases": len(CONTAINERS), "wrong": 0, "containers": [f"container/{c}" for c in CONTAINERS]},
    "TR-004": {**ONE, "max_bytes": 256 << 20, "cases": 1, "wrong": 0, "bytes": 256 << 20},   # the release's size
    "TR-005": TR005,
    "TR-006": {**ONE, "cases": J.CROSS_NODE_CASES, "wrong": 0, "nodes": ["a1b2c3d4", "e5f6a7b8"], "errors": []},
    "TR-007": {**ONE, "cases": 12, "wrong": 0, "endpoints": 3, "bytes_in_flight": 5111808},
    "TR-008": {**ONE, "cases": 5, "wrong": 0, "endpoints": 3, "errors": [],
               "receives": [*J.SAME_REF_RECEIVES, J.ANOTHER_CONSUMER]},
    "TR-009": {**ONE, "cases": 3, "wrong": 0, "one_sided": True,
               "driver": {J.DRIVER_GET: J.RETURNED, J.DRIVER_GET_STORE: J.RETURNED, J.DRIVER_PUT: "bit-exact"}},
    "TR-010": TR010,
    "TR-011": TR011,
    "TR-012": TR012,
    "TR-013": {**ONE, "payload_bytes": 16 << 20, "transfers_per_round": 12, "rounds": 5,
               "growth_per_round_bytes": {"source.held_bytes": [0, 4096, 0, 0, 0], "destination.held_bytes": [0, 0, 0, 0, 0],
                                          "node.cluster_shm_bytes": [0, 0, 0, 0, 0]}},
    "TR-014": (TR014 := {**ONE, "actor_has_transport_max_latency_s": 0.01, "actor_has_transport_latency_s": 0.002,
                         "latencies_s": [0.001, 0.002, 0.01], "answers_checked": 4, "outsider_answer": "None"}),
    "TR-015": TR015,
    "TR-016": TR016,
    "TR-017": TR017,
    "TR-018": TR018,
    "TR-019": TR019,
    "TR-020": TR020,
}


def _failing_step(base: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out["steps"][index].update(changes)
    return out


def _without(base: dict[str, Any], key: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.pop(key, None)
    return out


def _unsupported(base: dict[str, Any], why: dict[str, str]) -> dict[str, Any]:
    """TR-001's record with the dtypes of `why` moved into unsupported_by_device, the count recounted."""
    dtypes = [x for x in base["dtypes"] if x not in why]
    return _with(base, dtypes=dtypes, unsupported_by_device=why, cases=len(dtypes) * len(base["shapes"]))


def _growth(series: dict[str, list[int]]) -> dict[str, Any]:
    """TR-013's passing record with these series in place of its own."""
    return _with(PASSING["TR-013"], growth_per_round_bytes={**PASSING["TR-013"]["growth_per_round_bytes"], **series})


FAILING: dict[str, list[dict[str, Any]]] = {
    "TR-001": [_with(TR001, wrong=3, failures=["float16/odd-7: sha256 differs"]),          # bytes differ
               _with(TR001, cases=len(SHAPES), dtypes=["float32"]),                        # dtypes dropped, none said unsupported
               _with(TR001, cases=8, shapes=["0-d"]),                                      # shape classes dropped
               _with(TR001, devices=["npu"]),                                              # a type the manifest never declared
               _with(TR001, devices=[]),                                                   # nothing exercised
               _unsupported(TR001, {"int16": "not supported here"}),                         # unsupported on the host
               _with(_unsupported(TR001, {"int16": "TypeError: no"}), devices=["npu"]),      # (and undeclared)
               _unsupported(TR001, {"int16": "TypeError: no"})],                            # on the host, in the probe's form
    "TR-002": [_with(PASSING["TR-002"], wrong=1), _with(PASSING["TR-002"], cases=4, views=["transpose"])],
    "TR-003": [_with(PASSING["TR-003"], wrong=2), _with(PASSING["TR-003"], cases=1, containers=["container/list-mixed"])],
    "TR-004": [_with(PASSING["TR-004"], wrong=1), _with(PASSING["TR-004"], bytes=1 << 20),   # a smaller tensor than the run's
               _with(PASSING["TR-004"], max_bytes=4096, bytes=4096),                            # capped, no knob recorded
               _with(PASSING["TR-004"], max_bytes=1024, bytes=1024, size_cap=CAP),              # smaller than the knob recorded
               _with(PASSING["TR-004"], max_bytes=4096, bytes=4096, size_cap={**CAP, "bytes": 1 << 20}),   # not adding up
               _with(PASSING["TR-004"], max_bytes=4096, bytes=4096, size_cap={**CAP, "env": "ELSEWHERE"})],
    "TR-005": [_with(TR005, wrong=1), _with(TR005, cases=3)],
    "TR-006": [_with(PASSING["TR-006"], nodes=["a1b2c3d4", "a1b2c3d4"]),                    # both endpoints on one node
               _with(PASSING["TR-006"], wrong=1, errors=["consumer: ActorDiedError"])],
    "TR-007": [_with(PASSING["TR-007"], wrong=12, errors=["12 concurrent transfers: no result within 60s"]),
               _with(PASSING["TR-007"], cases=6),                                           # fewer in flight than every pair twice
               _with(PASSING["TR-007"], cases=4, endpoints=2)],                             # fewer endpoints than the node gives
    "TR-008": [_with(PASSING["TR-008"], wrong=1), _with(PASSING["TR-008"], cases=2, receives=["first", "second (same consumer)"])],
    "TR-009": [_with(PASSING["TR-009"], driver={J.DRIVER_GET: "returned wrong data: sha", J.DRIVER_GET_STORE: J.RETURNED,
                                                J.DRIVER_PUT: "bit-exact"}),                  # wrong=0 beside wrong data
               _with(PASSING["TR-009"], one_sided=False)],                                   # a two-sided transport's get returned
    "TR-010": [_with(TR010, sends={"0": 4}), _with(TR010, raised=["recv_multiple_tensors on endpoint 1 raised X"]),
               _with(TR010, transfers=1, receives_per_object=[1])],
    "TR-011": [_with(TR011, objects=[{"case": c, **TR011_OBJECT, "tensor_meta": [[[3, 2], "torch.float32"]]}
                                     for c in J.EXTRACT_CASES]),
               _with(TR011, cases=1, objects=[{"case": J.EXTRACT_CASES[0], **TR011_OBJECT}])],
    "TR-012": [_with(TR012, gc_per_object=[1] * 6 + [0]), _with(TR012, left_behind=["/dev/shm/staging-1"]),
               _with(TR012, leftover_bound_s=1000), _with(TR012, gc_raised=["RuntimeError: boom"])],
    "TR-013": [{"payload_bytes": 1 << 20, "transfers_per_round": 12, "rounds": 5,
                "growth_per_round_bytes": {"source.rss_bytes": [12 << 20, 12 << 20, 12 << 20, 0, 12 << 20]}},
               _growth({"source.held_bytes": [0, 0, 0, 512 << 20, 512 << 20]}),              # a leak of the last rounds only
               _growth({"node.cluster_shm_bytes": [0, 70 << 20, 70 << 20, 70 << 20, -10 << 20]}),   # kept, given back once
               _with(PASSING["TR-013"], growth_per_round_bytes={"source.held_bytes": [0] * 5}),   # probes left out
               _growth({"source.device_used_bytes": [0] * 5}),                               # one end's device probe
               _with(PASSING["TR-013"], payload_bytes=4096),                                 # a tiny payload judges a tiny leak
               _with(PASSING["TR-013"], payload_bytes=1 << 20),                              # 1 MiB without the knob recorded
               _without(PASSING["TR-013"], "devices")],                                      # no types: nothing to hold
    "TR-014": [{"actor_has_transport_max_latency_s": 2.5},
               _with(TR014, latencies_s=[0.001, 0.002, 25.0]),                      # the summary not its samples' max
               _without(TR014, "latencies_s")],                                      # the samples dropped

    "TR-015": [_with(TR015, failure="[receiver-dies] the same object sent to a new receiver: failed"),
               _failing_step(TR015, 0, took_s=45.0),                                        # an error after its bound
               _failing_step(TR015, 0, bound_s=500.0, took_s=45.0),                          # a bound the release does not have
               _with(TR015, steps=TR015["steps"][:1], step_count=1),                       # steps dropped
               # "abort not supported" claimed beside the steps only a transport that can abort runs
               _with(TR015, transport={"name": "NPUXFER", "one_sided": True, "can_abort": False},
                     steps=[*TR015["steps"], *[_step(f"{phase}: a transfer between new actors") for phase in J.RECOVERY_PHASES]],
                     step_count=len(TR015["steps"]) + 2),
               _with(TR015, transport={"name": "NPUXFER", "one_sided": True})],             # can_abort dropped
    "TR-016": [_with(TR016, retried_attempts=3), _failing_step(TR016, 0, error="RayTaskError: something else")],
    "TR-017": [_with(TR017, steps=TR017["steps"][:-1], step_count=len(TR017["steps"]) - 1),   # a later object fewer
               _with(TR017, scenario={"elapsed_s": 900.0, "excluded_s": 900.0, "bound_s": 1140.0}),
               _with(TR017, steps=[{**x, "bound_s": 60.0} for x in TR017["steps"]])],          # a free step at the step bound
    "TR-018": [_with(TR018, steps=TR018["steps"][:4], step_count=4),                         # borrowers never ran
               _with(TR018, transport={"name": "NPUXFER", "one_sided": False, "can_abort": True}),   # two-sided beside borrowers
               _with(TR018, scenario={"elapsed_s": 300.0, "excluded_s": 0.0, "bound_s": 240.0})],
    "TR-019": [_with(TR019, wrong=3), _with(TR019, transfers=10), _with(TR019, all_bound_s=10000.0, all_done_s=5000.0),
               _with(TR019, payload_bytes=1)],                                               # a payload the params do not give
    "TR-020": [_with(TR020, fetch_wrong=1), _with(TR020, user_timeout_took_s=[1.1, 9.0]),
               _with(TR020, plain_receiver_s=59.0),
               # the fail-fast step recorded under the step bound (held-out X08)
               _with(TR020, steps=[*TR020["steps"][:-1], {**TR020["steps"][-1], "bound_s": 60.0, "took_s": 54.0}])],
}
