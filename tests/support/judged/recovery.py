"""The recovery area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it: NPU, 4 devices per node, type NPU-X1,
transport NPUXFER on cpu). FAILING: check id -> records its judge must not pass, one per class of
lie: a pass beside evidence that shows a failure (views that disagree, an id held twice, a device
not the released one, a survivor that stopped answering, work on the wrong node), beside missing
evidence, with counts the release's params or the manifest cannot produce (rounds, devices per
node), step times over their params, and scenario bounds the release's params do not give.
tests/unit/test_judges.py holds every judge to both tables; tests/unit/test_judges_recovery.py
holds the subtle rules.
"""
from __future__ import annotations

import copy
from typing import Any

ENV = "NPU_VISIBLE_DEVICES"
IDS = ["0", "1", "2", "3"]
TYPE = "NPU-X1"


def holder(pid: int, dev: str, node: str = "abc123def456", restarted: bool | None = False) -> dict[str, Any]:
    """A holder record whose three views agree on one device."""
    return {"pid": pid, "node_id": node, "node": node, "assigned": [dev], "env_set": True, "env_value": dev,
            "manager_view": [dev], "restarted": restarted}


def on(role: str, pid: int, dev: str = "0", restarted: bool | None = False) -> dict[str, Any]:
    rec = holder(pid, dev, role, restarted)
    rec["node_id"] = f"{role}-id"
    return rec


def shipped(cid: str, name: str) -> float:
    """A param of `cid` as the shipped checklist sets it: evidence just over a bound follows the bound
    (a threshold edit is one edit: docs/architecture.md, "Change a threshold")."""
    from conformance.catalog import data

    return float(data.load_checklist().by_id()[cid].params[name])


def over(cid: str, name: str) -> float:
    """Evidence a second over `cid`'s shipped bound `name`: refused by the judge whatever value a
    release gives the param (the fixture keeps testing the bound, not a number that was once over it)."""
    return shipped(cid, name) + 1


def under(cid: str, name: str) -> float:
    """A watch a second shorter than `cid`'s shipped least `name` (at_least's refusal, as `over`)."""
    return shipped(cid, name) - 1


def scenario(name: str, bound: float, elapsed: float = 20.0) -> dict[str, Any]:
    return {name: {"bound_s": bound, "elapsed_s": elapsed, "outcome": "ok", "steps_s": {"done": elapsed}}}


def sig(devices: float = 4.0, role: str | None = "b") -> dict[str, Any]:
    """A node's signature; `role`: the node lab's role label (None: a node of the manifest's own)."""
    roles = {} if role is None else {"conformance.areas.recovery/node": role}
    return {"devices": devices, "types": [f"accelerator_type:{TYPE}"], "labels": {"ray.io/accelerator-type": TYPE, **roles}}


BEFORE = [holder(100 + i, d) for i, d in enumerate(IDS)]
SELECTOR = {"conformance.areas.recovery/pool": "x", "ray.io/accelerator-type": TYPE}
B_LABELS = {"conformance.areas.recovery/pool": "x", "ray.io/accelerator-type": TYPE}
VIEW = {"alive": False, "total_before": 12.0, "total_after": 8.0, "labelled_live_nodes": 0}
TRANSPORT = {"name": "NPUXFER", "one_sided": True, "can_abort": True, "devices": ["cpu"],
             "rdt_fetch_timeout_s": 5.0, "collective": False}
DIGEST = {"tensor": True, "dtype": "uint8", "shape": [1024], "nbytes": 1024, "sha256": "ab" * 32}


DOMAIN_KEY = "ray.io/accelerator-domain"
LAYOUT = {"head": {"devices": 4.0, "domains": {DOMAIN_KEY: "fab-a"}}, "b": {"devices": 4.0, "domains": {DOMAIN_KEY: "fab-b"}},
          "c": {"devices": 4.0, "domains": {DOMAIN_KEY: "fab-a"}}}


def moved(pid: int = 300) -> dict[str, Any]:
    return {"first": on("b", pid), "moved": on("c", pid + 1, "1", True), "moved_labels": B_LABELS, "moved_s": 4.2}


PASSING: dict[str, dict[str, Any]] = {
    "FR-001": {"devices_on_node": 4, "env_var": ENV, "universe": IDS, "before": BEFORE, "release_s": 0.8,
               "reuse_s": 1.5, "new": holder(200, "0"), "scenarios": scenario("kill-holder-then-reuse", 150)},
    "FR-002": {"devices_on_node": 4, "env_var": ENV, "universe": IDS, "before": BEFORE, "crash_error": "ActorDiedError",
               "crash_error_s": 0.4, "release_s": 0.8, "reuse_s": 1.5, "new": holder(200, "0"),
               "scenarios": scenario("crash-holder-then-reuse", 150)},
    "FR-003": {"devices_on_node": 4, "env_var": ENV, "universe": IDS, "before": BEFORE,
               "restarts": [{"cause": "crash", "restart_s": 2.0, "holder": holder(201, "0", restarted=True)},
                            {"cause": "kill", "restart_s": 2.5, "holder": holder(202, "0", restarted=True)}],
               "scenarios": scenario("crash-and-kill-restartable-holder", 210)},
    "FR-004": {"devices_on_node": 4, "env_var": ENV, "universe": IDS, "before": BEFORE, "restarts": 6,
               "round_s": [1.3, 2.0, 2.0],
               "rounds": [{"cause": "kill", "victims": [0, 2], "round_s": 1.3,
                           "holders": [holder(200, "2"), BEFORE[1], holder(202, "0"), BEFORE[3]]},
                          {"cause": "crash", "victims": [1, 3], "round_s": 2.0,
                           "holders": [holder(200, "2"), holder(211, "1"), holder(202, "0"), holder(213, "3")]},
                          {"cause": "kill", "victims": [0, 2], "round_s": 2.0,
                           "holders": [holder(220, "0"), holder(211, "1"), holder(222, "2"), holder(213, "3")]}],
               "scenarios": scenario("3-rounds-of-kills-and-crashes", 330)},
    "FR-005": {"devices_on_node": 4, "env_var": ENV, "others": BEFORE[1:], "crashed": holder(150, "0", restarted=None),
               "result": holder(151, "0", restarted=None), "attempts": 2, "retry_done_s": 3.0,
               "scenarios": scenario("task-worker-crash-then-retry", 150)},
    # the manifest's two nodes, each with its 4 devices (a real run records every node: FR-006 counts them),
    # no role labels: the recovery-restart shape starts the manifest's own nodes, as environment.devices
    # describes them (verify holds the two equal: same_measurement.restart_signature_problems)
    "FR-006": {"restart_s": 12.5, "before": [sig(4.0, None), sig(4.0, None)], "after": [sig(4.0, None), sig(4.0, None)],
               "env_var": ENV,
               "holder": holder(400, "0"), "holder_s": 1.0, "scenarios": scenario("shutdown-then-fresh-start", 180)},
    "FR-007": {"node_b_devices": 4, "env_var": ENV, "gone_s": 1.2, "view_after": VIEW,
               "in_flight_call_error": "ActorDiedError", "call_failed_s": 1.5, "survivors_watched_s": 5.2,
               "survivors": {"head": {"before": on("head", 500), "after": on("head", 500)},
                             "c": {"before": on("c", 501), "after": on("c", 501)}},
               "scenarios": scenario("hard-kill-node-b", 185)},
    "FR-008": {"node_b_devices": 4, "env_var": ENV, "selector": SELECTOR, "gone_s": 1.2, "view_after": VIEW,
               "actor": moved(300), "task": moved(310), "scenarios": scenario("reschedule-pool-work-from-b-to-c", 300)},
    "FR-009": {"node_b_devices": 4, "env_var": ENV,
               "selector": {"conformance.areas.recovery/node": "b", "ray.io/accelerator-type": TYPE},
               "first": on("b", 600), "gone_s": 1.1,
               "window": {"ran_on": None, "failed": None, "watched_s": 5.1, "transient_errors": []},
               "back": on("b", 601, "0", True), "back_labels": {"conformance.areas.recovery/node": "b",
                                                               "ray.io/accelerator-type": TYPE},
               "ran_after_rejoin_s": 8.0, "scenarios": scenario("pin-to-b-kill-b-wait-then-rejoin", 165)},
    "FR-010": {"node_b_devices": 4, "env_var": ENV, "placed": {"0": "b", "1": "c"}, "lost": 0, "gone_s": 1.0,
               "pg_states_seen": ["CREATED", "RESCHEDULING"], "new_node": "head", "pg_rescheduled_s": 0.6,
               "moved": on("head", 701, "2", True), "moved_s": 2.0, "survivor_before": on("c", 702),
               "survivor_after": on("c", 702), "scenarios": scenario("strict-spread-bundle-on-b-lost", 300)},
    "FR-011": {"node_b_devices": 4, "env_var": ENV, "before": [sig()], "after": [sig()], "gone_s": 1.0,
               "alive_s": 6.0, "rejoin_s": 7.0, "holder": on("b", 800),
               "scenarios": scenario("kill-b-then-rejoin", 160)},
    "FR-012": {"transport": TRANSPORT, "devices": ["cpu"], "bytes": 1024, "result": "error",
               "error": "RayTaskError: the source died", "result_s": 5.4, "sent": DIGEST,
               "recovered": {"how": "same receiver", "bitexact": True, "s": 0.5},
               "killed_source_files_held": 1, "left_by_killed_source": 0, "left_files": [],
               "scenarios": scenario("source-dies-before-fetch", 305)},
    "FR-013": {"transport": TRANSPORT, "devices": ["cpu"], "bytes": 8 << 20, "result": "data", "result_s": 6.0,
               "sent": DIGEST, "got": copy.deepcopy(DIGEST), "receive_began_before_kill": True,
               "recovered": {"how": "same receiver", "bitexact": True, "s": 0.5},
               "killed_source_files_held": 0, "left_by_killed_source": 0, "left_files": [],
               "scenarios": scenario("source-dies-during-transfer", 309)},
    "FR-014": {"transport": TRANSPORT, "devices": ["cpu"], "result": "error", "result_s": 5.2,
               "error": "RayTaskError: fetch timed out", "abort_calls": {"receiver": 1},
               "abort_seen_s": 0.7, "abort_failed": [], "alive_after_abort": {"receiver": True},
               "transferred_again": ["forward", "backward"], "scenarios": scenario("receive-held-past-fetch-timeout", 275)},
    "FR-015": {"transport": TRANSPORT, "devices": ["cpu"], "sent": DIGEST, "error_s": 0.3,
               "error": "InjectedReceiveError: injected", "alive": {"sender": True, "receiver": True},
               "again": copy.deepcopy(DIGEST), "again_s": 0.4, "new_transfer": True,
               "scenarios": scenario("receive-raises", 240)},
    "FR-016": {"transport": TRANSPORT, "devices": ["cpu"],
               "restarts": {"source": {"old_pid": 10, "new_pid": 11, "restart_s": 2.0, "transferred": True},
                            "receiver": {"old_pid": 12, "new_pid": 13, "restart_s": 2.0, "transferred": True}},
               "scenarios": scenario("restart-then-transfer", 330)},
    "FR-017": {"node_b_devices": 4, "env_var": ENV, "selector": SELECTOR, "declared_dead_s": 3.0, "view_after": VIEW,
               "actor": moved(900), "healed_watch": {"watched_s": 5.1, "old_node_back": False},
               "rejoined": {"new_id": True, "before": [sig()], "after": [sig()]}, "rejoin_s": 9.0,
               "scenarios": scenario("partition-b-heal-restart", 315)},
    "FR-018": {"transport": TRANSPORT, "devices": ["cpu"], "result": "error", "error": "RayTaskError: peer gone",
               "result_s": 40.0, "sent": DIGEST, "recovered": {"how": "same receiver", "bitexact": True, "s": 0.6},
               "scenarios": scenario("transfer-from-a-partitioned-node", 300)},
    # the demo's layout: head and c in one domain, b in another; the group packs on head and c
    "FR-019": {"key": DOMAIN_KEY, "layout": LAYOUT, "placed": {"0": "head", "1": "c"}, "victim": "c", "lost": 1,
               "domain": "fab-a", "filled": [], "outside": ["b"], "victim_devices": 4, "gone_s": 1.0,
               "view_after": VIEW, "window": {"lost_on": None, "lost_on_domain": None, "watched_s": 5.2,
                                              "states": ["RESCHEDULING"]},
               "rejoined": {"new_node": True, "devices": 4.0, "domains": {DOMAIN_KEY: "fab-a"}},
               "after": {"state": "CREATED", "placed": {"0": "head", "1": "c"},
                         "domains": {"0": "fab-a", "1": "fab-a"}},
               "scenarios": scenario("pack-in-one-domain-lose-a-node-rejoin", 275)},
}


def but(cid: str, **changes: Any) -> dict[str, Any]:
    """PASSING[cid] with `changes` (a value None drops the metric)."""
    out = copy.deepcopy(PASSING[cid])
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def at(cid: str, path: str, value: Any, **more: Any) -> dict[str, Any]:
    """PASSING[cid] with one nested value replaced (path "a.b.0.c"), and the top-level keys in `more`."""
    out = copy.deepcopy(PASSING[cid])
    node: Any = out
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    out.update(more)
    return out


def _lost_scenario(cid: str, bound: float) -> dict[str, Any]:
    name = next(iter(PASSING[cid]["scenarios"]))
    return at(cid, f"scenarios.{name}.bound_s", bound)


_DISAGREE = {**holder(200, "0"), "env_value": "1"}           # the variable names another device than Ray
_TWICE = holder(200, "1")                                   # the released device is not the one reused: 1 held twice

FAILING: dict[str, list[dict[str, Any]]] = {
    "FR-001": [but("FR-001", new=_DISAGREE), but("FR-001", new=_TWICE), but("FR-001", release_s=over("FR-001", "device_release_s")),
               but("FR-001", devices_on_node=2, universe=IDS[:2], before=BEFORE[:2]),   # not the manifest's 4
               but("FR-001", new=None), but("FR-001", scenarios=None), _lost_scenario("FR-001", 900.0),
               but("FR-001", new=holder(101, "0"))],                                  # an old holder's process
    "FR-002": [but("FR-002", crash_error="returned normally"), but("FR-002", crash_error_s=over("FR-002", "device_release_s")),
               but("FR-002", new={**holder(200, "0"), "env_value": ""}), but("FR-002", reuse_s=over("FR-002", "actor_ready_s"))],
    "FR-003": [at("FR-003", "restarts.1.holder", holder(202, "1", restarted=True)),        # 1 held twice
               at("FR-003", "restarts.0.holder", holder(100, "0", restarted=True)),        # the old process
               but("FR-003", restarts=PASSING["FR-003"]["restarts"][:1]),                  # the kill never done
               at("FR-003", "restarts.0.restart_s", over("FR-003", "actor_ready_s")),
               at("FR-003", "restarts.1.holder", holder(202, "0", restarted=False))],
    "FR-004": [but("FR-004", rounds=PASSING["FR-004"]["rounds"][:1], round_s=[1.3], restarts=2),
               at("FR-004", "rounds.1.holders.1", holder(211, "2")),                       # 2 held twice
               # the first round over its bound, round_s its rounds' own times (only the bound is broken)
               at("FR-004", "rounds.0.round_s", over("FR-004", "stress_round_s"),
                  round_s=[over("FR-004", "stress_round_s"), *PASSING["FR-004"]["round_s"][1:]]),
               but("FR-004", round_s=[1.0, 1.0, 1.0]),                                     # not the rounds' own
               at("FR-004", "rounds.1.holders.0", holder(230, "2")),                       # a non-victim moved
               but("FR-004", rounds=None)],
    "FR-006": [but("FR-006", restart_s=over("FR-006", "restart_cluster_s")), but("FR-006", after=[sig(3.0, "head")]),
               but("FR-006", before=[sig(2.0, "head")], after=[sig(2.0, "head")]),         # not the manifest's 4
               but("FR-006", holder={**holder(400, "0"), "manager_view": ["3"]}), but("FR-006", holder=None)],
    "FR-005": [but("FR-005", result=holder(151, "1")), but("FR-005", attempts=1), but("FR-005", retry_done_s=over("FR-005", "actor_ready_s")),
               but("FR-005", result={**holder(151, "0"), "env_set": False})],
    "FR-007": [at("FR-007", "survivors.c.after", "ActorDiedError: the actor died"),
               at("FR-007", "survivors.head.after", on("head", 999)),
               but("FR-007", survivors={"head": PASSING["FR-007"]["survivors"]["head"]}),   # a survivor dropped
               but("FR-007", view_after={**VIEW, "total_after": 12.0}),
               but("FR-007", view_after={**VIEW, "labelled_live_nodes": 1}),
               but("FR-007", in_flight_call_error="returned normally"),
               but("FR-007", survivors_watched_s=under("FR-007", "survivor_watch_s")),
               but("FR-007", gone_s=over("FR-007", "node_gone_s"))],
    "FR-008": [at("FR-008", "actor.moved", on("head", 301, "1", True)),
               at("FR-008", "actor.moved_labels", {"ray.io/accelerator-type": TYPE}),
               at("FR-008", "actor.moved", {**on("c", 301, "1", True), "env_value": "2"}),
               but("FR-008", task=None), but("FR-008", selector={"conformance.areas.recovery/pool": "x"}),
               at("FR-008", "actor.moved_s", over("FR-008", "reschedule_s"))],
    "FR-009": [at("FR-009", "window.ran_on", "c"), at("FR-009", "window.failed", "ActorDiedError: gone"),
               at("FR-009", "window.watched_s", under("FR-009", "pending_window_s")), at("FR-009", "back", on("c", 601)),
               at("FR-009", "back", {**on("b", 601), "env_value": ""})],
    "FR-010": [but("FR-010", survivor_after=on("c", 703)), but("FR-010", new_node="c"),
               but("FR-010", moved=on("c", 701, "2", True)), but("FR-010", pg_states_seen=["RESCHEDULING"]),
               but("FR-010", placed={"0": "b", "1": "head"})],
    "FR-011": [but("FR-011", after=[sig(0.0)]), but("FR-011", holder=on("c", 800)),
               but("FR-011", before=[sig(2.0)], after=[sig(2.0)], node_b_devices=2), but("FR-011", alive_s=over("FR-011", "rejoin_s"))],
    "FR-012": [but("FR-012", left_by_killed_source=1), but("FR-012", result="data", got={**DIGEST, "sha256": "0" * 64}),
               but("FR-012", result_s=TRANSPORT["rdt_fetch_timeout_s"] + over("FR-012", "transfer_error_s")),   # the fetch bound
               but("FR-012", recovered={"how": "receiver died", "bitexact": None}),
               but("FR-012", transport={**TRANSPORT, "name": "OTHER"}),
               but("FR-012", transport={**TRANSPORT, "collective": True}),   # a trait not the manifest's transport's
               but("FR-012", devices=None)],
    "FR-013": [but("FR-013", got={**DIGEST, "nbytes": 10}), but("FR-013", recovered=None),
               but("FR-013", left_by_killed_source=2)],
    "FR-014": [but("FR-014", result="data", error=None), but("FR-014", abort_calls={"receiver": 0}),
               but("FR-014", abort_failed=["receiver: RuntimeError: boom"]),
               but("FR-014", alive_after_abort={"receiver": False}),
               # two-sided: Ray aborts both sides, and both must have seen it and lived
               but("FR-014", transport={**TRANSPORT, "one_sided": False}),
               but("FR-014", transferred_again=["forward"]),
               # an abort that raised, excused as "abort not supported": the abort Ray made is still recorded
               but("FR-014", transport={**TRANSPORT, "can_abort": False}, abort_failed=["receiver: RuntimeError: boom"],
                   actors_killed_s=1.0, transferred_again=["new pair"]),
               but("FR-014", transport={k: v for k, v in TRANSPORT.items() if k != "can_abort"})],   # the trait dropped
    "FR-015": [but("FR-015", error="RayTaskError: not found in RDT object store after 5.0s"),
               but("FR-015", again={"error": "ObjectLostError"}), but("FR-015", alive={"sender": True, "receiver": False}),
               but("FR-015", new_transfer=False)],
    "FR-016": [at("FR-016", "restarts.source.new_pid", 10), at("FR-016", "restarts.receiver.transferred", False),
               but("FR-016", restarts={"source": PASSING["FR-016"]["restarts"]["source"]})],
    "FR-017": [but("FR-017", declared_dead_s=over("FR-017", "dead_within_s")), but("FR-017", healed_watch={"watched_s": 5.1, "old_node_back": True}),
               but("FR-017", rejoined={"new_id": False, "before": [sig()], "after": [sig()]}),
               at("FR-017", "actor.moved", on("head", 901, "1", True))],
    "FR-018": [but("FR-018", result_s=over("FR-018", "transfer_end_s")), but("FR-018", result="data", got={**DIGEST, "sha256": "1" * 64}),
               but("FR-018", recovered={"how": "new pair", "bitexact": True, "s": 0.5})],
    "FR-019": [at("FR-019", "rejoined.domains", {DOMAIN_KEY: "fab-default"}),           # a stale domain on restart
               at("FR-019", "rejoined.domains", {}),                                      # no domain on restart
               at("FR-019", "window.lost_on", "b"),                                       # packed across domains
               at("FR-019", "after.domains.1", "fab-b"),
               at("FR-019", "after.placed", {"0": "head", "1": "b"}),
               at("FR-019", "window.watched_s", 1.0),                                     # a window cut short
               at("FR-019", "rejoined.devices", 0.0),
               but("FR-019", victim="b", lost=0),                                         # not the plan's victim
               but("FR-019", placed={"0": "head", "1": "b"}),                             # a group across domains
               but("FR-019", key="ray.io/tpu-slice-name"),
               but("FR-019", gone_s=over("FR-019", "node_gone_s")), but("FR-019", after=None),
               but("FR-019", scenarios=scenario("pack-in-one-domain-lose-a-node-rejoin", 900))],
}
