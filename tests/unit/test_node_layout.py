"""The node lab's setup (conformance.areas.recovery.nodes.restore_layout): a node an earlier check
killed starts again and registers, and every device is free, as waits on Ray's machinery through
the check's budget (issue 42: the setup rejoin was held to the plugin's unstretched rejoin_s, and a
loaded CI host failed FR-009 on it). A stand-in for the cluster view (which roles are alive, the
devices free) and fake worker-start samples: what is checked is whose time the waits are, how far
they stretch and what the check's record says, not Ray (the teeth rows run the real node lab)."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.areas.recovery import nodes
from conformance.catalog.data import Check
from conformance.cluster.faults import ROLES
from conformance.run import machinery, release
from conformance.run.budget import Budget
from conformance.timing import host_load
from conformance.timing.host_load import MachineryRecord
from conformance.timing.owned import wait_problems
from conformance.timing.waits import BoundRanOut

NOMINAL = host_load.NOMINAL_S["worker_start"]
PARAMS = {"rejoin_s": 0.3, "device_release_s": 0.3}


class View:
    """The node lab as restore_layout uses it: a role started again is alive `registers_s` after
    its start (a raylet starting and registering), the others as given."""

    resource = "SIM"

    def __init__(self, alive: tuple[str, ...], registers_s: float) -> None:
        self.up = {r: 0.0 for r in alive}
        self.registers_s = registers_s
        self.starts: list[str] = []
        self.ids: dict[str, int] = {}

    def missing(self) -> list[str]:
        now = time.monotonic()
        return [r for r in ROLES if not (r in self.up and now >= self.up[r])]

    def start(self, roles: list[str]) -> None:
        self.starts += roles
        self.up.update({r: time.monotonic() + self.registers_s for r in roles})
        self.ids = {r: self.starts.count(r) for r in self.starts}

    def seen(self, roles: list[str]) -> str:
        return "; ".join(f"{r}: 0 live and {1 + self.starts.count(r)} dead node(s) labelled {r}" for r in roles)

    def without_devices(self) -> list[str]:
        return []

    def alive(self) -> dict[str, dict[str, Any]]:
        """Live nodes by role; a node's id counts the starts of its role before it."""
        now = time.monotonic()
        return {r: {"NodeID": f"{r}-{self.ids.get(r, 0)}"} for r, at in self.up.items() if now >= at}

    def rejoin(self, role: str) -> None:
        self.start([role])


@pytest.fixture(autouse=True)
def all_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release, "available", lambda resource, node_id=None: 4.0)
    monkeypatch.setattr(release, "total", lambda resource, node_id=None: 4.0)


def setup_of(rec: MachineryRecord) -> tuple[Any, dict[str, Any]]:
    """A node check's context as its fixture's setup has it: the budget, not yet active."""
    check = Check(id="FR-009", title="t", area="recovery", level="MUST", requirement="r", rationale="r",
                  since="0.1.0", params=dict(PARAMS))
    metrics: dict[str, Any] = {}
    return SimpleNamespace(budget=Budget(check, metrics, rec)), metrics


def sample(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    def fake(timeout_s: float, *, machinery: MachineryRecord) -> float:
        machinery.note("worker_start", seconds)
        return seconds
    monkeypatch.setattr(machinery, "measure_worker_start", fake)


def test_the_setup_rejoin_is_rays_machinery_stretched_by_the_runs_factor_and_recorded() -> None:
    """The node registers 0.35 s after its start: past the nominal 0.3 s rejoin_s (the old setup failed the
    check there), within it stretched x2 by the run's measured worker start."""
    rec = MachineryRecord()
    rec.note("worker_start", NOMINAL * 2)
    ctx, metrics = setup_of(rec)
    lab = View(alive=("head", "c"), registers_s=0.35)
    nodes.restore_layout(ctx, lab)
    assert lab.starts == ["b"]
    rejoin, free = metrics["waits"]["each"]
    assert (rejoin["owner"], rejoin["param"], rejoin["bound_s"], rejoin["factor"], rejoin["verdict"]) == \
        ("ray", "rejoin_s", 0.3, 2.0, "met")
    assert rejoin["granted_s"] == pytest.approx(0.6) and 0.35 <= rejoin["took_s"] <= rejoin["granted_s"]
    assert (free["owner"], free["param"], free["granted_s"], free["verdict"]) == ("ray", "device_release_s", 0.6, "met")
    assert wait_problems(metrics["waits"], PARAMS, passed=True) == []


def test_a_resample_waits_longer_and_never_starts_the_role_a_second_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rejoin runs out of its unstretched bound; the fresh sample says the host is x4 slower
    now: the wait goes on for the difference, polling only (one node for role b)."""
    rec = MachineryRecord()
    sample(monkeypatch, NOMINAL * 4)
    ctx, metrics = setup_of(rec)
    lab = View(alive=("head", "c"), registers_s=0.6)
    nodes.restore_layout(ctx, lab)
    assert lab.starts == ["b"]
    rejoin = metrics["waits"]["each"][0]
    assert (rejoin["param"], rejoin["factor"], rejoin["verdict"]) == ("rejoin_s", 4.0, "met")
    assert rejoin["granted_s"] == pytest.approx(1.2)


def test_a_node_that_does_not_come_on_a_host_as_fast_as_assumed_is_left_to_the_plugin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's start runs the plugin's detection (runs_plugin_code): when a fresh sample says
    the host did its part, the wait's end reaches the check, naming what the view showed then and
    before the start (here one more dead node labelled b: the started node registered and died)."""
    rec = MachineryRecord()
    sample(monkeypatch, NOMINAL / 2)
    ctx, metrics = setup_of(rec)
    lab = View(alive=("head", "c"), registers_s=60.0)
    with pytest.raises(BoundRanOut, match=r"node\(s\) b, started again, to register: not within 0s; last seen: "
                                          r"b: 0 live and 2 dead .*\(before the start: b: 0 live and 1 dead"):
        nodes.restore_layout(ctx, lab)
    assert lab.starts == ["b"]
    [rejoin] = metrics["waits"]["each"]
    assert (rejoin["owner"], rejoin["param"], rejoin["verdict"]) == ("ray", "rejoin_s", "ran out")


def test_a_full_layout_waits_only_for_its_devices() -> None:
    ctx, metrics = setup_of(MachineryRecord())
    lab = View(alive=ROLES, registers_s=0.0)
    nodes.restore_layout(ctx, lab)
    assert lab.starts == []
    assert [w["param"] for w in metrics["waits"]["each"]] == ["device_release_s"]


def test_an_in_scenario_rejoin_is_rays_time_left_out_of_the_scenario_and_recorded() -> None:
    """FR-009/011/017 start node b again inside their scenario: its registration (0.35 s, past the
    nominal 0.3 s rejoin_s, within it stretched x2) is a recorded wait on Ray's machinery, left out
    of the plugin's scenario, whose record keeps verify's rule (granted = bound + excluded)."""
    rec = MachineryRecord()
    rec.note("worker_start", NOMINAL * 2)
    ctx, metrics = setup_of(rec)
    clock = ctx.budget.scenario("kill-b-then-rejoin", 0.5)
    lab = View(alive=("head", "c"), registers_s=0.35)
    node, took = nodes.rejoined(ctx.budget, clock, lab, "b")
    clock.mark("registered")
    assert lab.starts == ["b"] and node == {"NodeID": "b-1"} and 0.35 <= took < 0.6
    scenario, rejoin = metrics["waits"]["each"]
    assert (rejoin["owner"], rejoin["param"], rejoin["factor"], rejoin["verdict"]) == ("ray", "rejoin_s", 2.0, "met")
    assert scenario["excluded_s"] == pytest.approx(took, abs=0.01)
    assert scenario["granted_s"] == pytest.approx(0.5 + scenario["excluded_s"], abs=0.002)
    assert wait_problems(metrics["waits"], PARAMS, passed=True, plugin_bound_s=0.5) == []


def test_a_rejoin_waits_for_a_node_other_than_the_one_it_replaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """FR-017's healed host joins as a new node: a live node of the role under the old id is not it.
    On a host a fresh sample says did its part, the wait's end reaches the check (the node's start
    runs the plugin's detection), naming what the view showed."""
    class OldStays(View):
        def rejoin(self, role: str) -> None:   # the driver's start did not take: the old node still shows
            self.starts.append(role)

    sample(monkeypatch, NOMINAL / 2)
    ctx, metrics = setup_of(MachineryRecord())
    clock = ctx.budget.scenario("partition-b-heal-restart", 5.0)
    lab = OldStays(alive=("head", "b", "c"), registers_s=0.0)
    with pytest.raises(BoundRanOut, match=r"node b, started again, to register: not within 0s; last seen: b: "):
        nodes.rejoined(ctx.budget, clock, lab, "b", replaces="b-0")
    assert lab.starts == ["b"] and metrics["waits"]["each"][1]["verdict"] == "ran out"
    assert nodes.rejoined(ctx.budget, clock, View(alive=("head", "c"), registers_s=0.0), "b", replaces="b-0")[0] == \
        {"NodeID": "b-1"}
