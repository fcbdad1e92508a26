"""What a recovery check receives: its CheckContext (run, check with its loaded bounds, metrics,
the cluster its checklist entry names), the area's per-run state, and what its kind of scenario works on.

The core's one fixture `recovery_ctx` gives a check the kind its cluster shape calls for (the area's
rule, Area.context in area.py), opened by conformance.areas.recovery.fixtures:

* `DeviceRecoveryCtx` (recovery-devices): the node whose devices the scenario holds and frees;
* `NodeRecoveryCtx`   (recovery-nodes): the node lab (roles head, b, c; kill, partition, rejoin);
* `TransferRecoveryCtx` (recovery-transfers, recovery-fetch-timeout): the registered transport and
  its fault-injecting twin, and the fetch timeout the cluster's workers run with;
* `RecoveryCtx` itself (recovery-restart): FR-006 starts its own fresh cluster.

Every bound is `ctx.param(name)`; the scenario's total bound is `ctx.bound()` (bounds.scenario_bound).
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from conformance.areas.recovery.area import RecoveryState
from conformance.areas.recovery.bounds import scenario_bound
from conformance.areas.recovery.devices import DeviceNode
from conformance.areas.recovery.scenario import scenario
from conformance.handles import Actor
from conformance.run.check_context import CheckContext
from conformance.timing.clock import Clock

if TYPE_CHECKING:
    from conformance.areas.recovery.nodes import NodeLab
    from conformance.areas.recovery.transfers import Pair
    from conformance.rdt.registration import TransportSetup
    from conformance.report.judges import Verdict


@dataclass
class RecoveryCtx(CheckContext):
    """A recovery check's context: the base, and the area's state for this run (in its stash)."""

    state: RecoveryState | None = None

    def bound(self) -> float:
        """The total bound of this check's scenario (the sum of its steps' bounds, its params)."""
        return scenario_bound(self.check)

    def timed(self, name: str, bound_s: float) -> AbstractContextManager[Clock]:
        """Run one scenario of this check under `bound_s`, recorded in its metrics and in the
        report's Recovery section whatever happens (conformance.areas.recovery.scenario)."""
        return scenario(self.run, self.metrics, self.check.id, name, bound_s, self.budget)

    def judge_now(self, clock: Clock, final: bool = True) -> None:
        """Inside the scenario, once its evidence is recorded: the evidence part of the check's
        judge (conformance.areas.recovery.judges) decides, so a finding fails the scenario with
        the judge's reason; `decide()` after the scenario gives the whole judge's verdict. Midway
        (`final` False) only a finding fails it: evidence still to come is no error yet."""
        verdict = self._evidence_verdict()
        if verdict is not None and (verdict.outcome == "fail" or (final and verdict.outcome != "pass")):
            raise clock.fail(str(verdict.reason))

    def decide(self, detail: str = "", **evidence: Any) -> None:
        """As every check decides; a reason that names the transport's fault-injecting twin
        (`<NAME>_RECOVERY`, in Ray's own errors) says what that name is, so a vendor reading its
        report does not look for a transport it never wrote (docs/recovery.md)."""
        self.metrics.update(evidence)
        setup: "TransportSetup | None" = getattr(self, "setup", None)   # a transfer check's (TransferRecoveryCtx)
        if setup is not None and setup.fault_name in str(self.verdict().reason):
            detail += (f" ({setup.fault_name} is the suite's fault-injecting twin of {setup.config.name}: "
                       "the vendor's class, registered a second time so faults can be armed; docs/recovery.md)")
        super().decide(detail)

    def _evidence_verdict(self) -> "Verdict | None":
        from conformance.areas.recovery.judges import evidence_verdict
        from conformance.report.judges import judge_for

        j = judge_for(self.check)
        if j is None:
            return None
        return evidence_verdict(j, self.check.id, self.metrics, self.check.params, self.manifest.data)


@dataclass
class DeviceRecoveryCtx(RecoveryCtx):
    """A device scenario's context: the nodes it works on, the run's seed's choice per failure
    domain (conformance.areas.recovery.devices.chosen_device_nodes). A check whose scenario runs
    on each of them in one wave (conformance.catalog.node_sample.RECOVERY_CHECKS) reads `nodes`;
    the others read `node`, the first of them."""

    devs: tuple[DeviceNode, ...] = ()

    @property
    def node(self) -> DeviceNode:
        assert self.devs, "recovery_ctx sets the nodes of a device scenario"
        return self.devs[0]

    @property
    def nodes(self) -> tuple[DeviceNode, ...]:
        assert self.devs, "recovery_ctx sets the nodes of a device scenario"
        return self.devs

    def judge_nodes_now(self, clock: Clock, by_node: dict[str, dict[str, Any]], final: bool = True) -> None:
        """judge_now on each node's evidence (over the check's own metrics): a finding on any node
        fails the scenario naming the node."""
        top = self.metrics
        for node, evidence in by_node.items():
            self.metrics = {**top, **evidence}
            try:
                verdict = self._evidence_verdict()
            finally:
                self.metrics = top
            if verdict is not None and (verdict.outcome == "fail" or (final and verdict.outcome != "pass")):
                raise clock.fail(f"node {node[:8]}: {verdict.reason}")


@dataclass
class NodeRecoveryCtx(RecoveryCtx):
    """A node scenario's context: the node shape's cluster by role."""

    node_lab: "NodeLab | None" = None

    @property
    def lab(self) -> "NodeLab":
        assert self.node_lab is not None, "recovery_ctx sets the lab of a node scenario"
        return self.node_lab


@dataclass
class TransferRecoveryCtx(RecoveryCtx):
    """A transfer scenario's context: the registered transport (and its fault-injecting twin),
    the resource its peers hold, and the RDT fetch timeout the cluster's workers run with."""

    setup: "TransportSetup | None" = None
    fetch_timeout_s: float = 0.0
    partition_driver: Any = None    # FR-018: the fault driver that can partition a node
    device: str = ""                # the device type the scenario moves tensors on now (each_device)
    _check_metrics: dict[str, Any] | None = None   # the check's own metrics while each_device runs

    @property
    def x(self) -> "TransportSetup":
        assert self.setup is not None, "recovery_ctx registers the transport of a transfer scenario"
        return self.setup

    def each_device(self, run_one: Callable[[str], None], units_per_node: int = 2) -> None:
        """Run the check's scenario on each device type the transport declares
        (conformance.rdt.each_device): the recovery path of a transport differs per type (which
        buffers an abort frees, what a dead source leaves on the device). Not applicable on a
        type whose peers the cluster cannot place (`units_per_node` units of the resource on a
        node: a pair shares one)."""
        from conformance.rdt.accelerator_rule import peers_reason
        from conformance.rdt.device import is_host
        from conformance.rdt.each_device import on_each_device
        from conformance.run.fixtures import not_applicable

        def one(device: str, first: bool) -> None:
            self.device = device
            if not is_host(device) and not _node_with_units(self.resource, units_per_node):
                not_applicable(peers_reason(device, units_per_node, self.resource))
            run_one(device)

        self._check_metrics = self.metrics
        try:
            on_each_device(self, self.x.config.devices, one)
        finally:
            self._check_metrics = None

    def _evidence_verdict(self) -> "Verdict | None":
        """The judge's findings on the device type the scenario is on (its evidence, beside the
        check's own: the transport, the fetch timeout)."""
        from conformance.areas.recovery.judges import PER_TYPE
        from conformance.report.judges import ERROR, FAIL, PASS, MissingEvidence, Verdict, judge_for

        j = judge_for(self.check)
        if j is None or j.name not in PER_TYPE:
            return super()._evidence_verdict()
        top = self._check_metrics if self._check_metrics is not None else self.metrics
        try:
            found = PER_TYPE[j.name](self.metrics, top, self.check.params, self.device or "cpu")
        except MissingEvidence as exc:
            return Verdict(ERROR, f"{self.check.id}: {exc}")
        return Verdict(FAIL, "; ".join(found[:6])) if found else Verdict(PASS)

    def timed(self, name: str, bound_s: float) -> AbstractContextManager[Clock]:
        """The scenario on the device type it is on: with more than one declared type its name
        says which, and every scenario is recorded in the check's own metrics (where verify
        judges them), not in the type's."""
        if self._check_metrics is None:
            return super().timed(name, bound_s)
        if len(self.x.config.devices) > 1:
            name = f"{name} on {self.device}"
        return scenario(self.run, self._check_metrics, self.check.id, name, bound_s, self.budget)

    @property
    def resource(self) -> str:
        """The resource the peers hold (the manifest's)."""
        return str(self.manifest.resource_name)

    @property
    def error_bound_s(self) -> float:
        """A failed transfer must surface within Ray's fetch timeout plus transfer_error_s."""
        return self.fetch_timeout_s + float(self.param("transfer_error_s"))

    def bound(self) -> float:
        """The scenario's bound, stretched when an existing cluster has a longer fetch timeout
        than the transfer shape's (FR-012..016; FR-018's partition bound is its own params)."""
        return super().bound() + max(self.fetch_timeout_s - float(self.param("rdt_fetch_timeout_s")), 0.0)

    def pair(self, clock: Clock, **options: Any) -> "Pair":
        """A source and a receiver, answering within actor_ready_s."""
        from conformance.areas.recovery.transfers import start_pair
        return start_pair(clock, self.x, self.resource, float(self.param("actor_ready_s")), self.device or self.x.device,
                          self.budget.machinery, self.exercised, **options)

    def peers(self, clock: Clock, n: int, **options: Any) -> list[Any]:
        """n endpoints, answering within actor_ready_s (no collective group)."""
        from conformance.areas.recovery.transfers import start_peers
        return start_peers(clock, self.x, self.resource, n, float(self.param("actor_ready_s")),
                           self.device or self.x.device, self.budget.machinery, self.exercised, **options)

    def produce(self, clock: Clock, src: Actor, nbytes: int, seed: int) -> Any:
        """The producer's object, existing within transfer_error_s."""
        from conformance.areas.recovery.transfers import produce
        return produce(clock, self.x, src, nbytes, seed, float(self.param("transfer_error_s")))

    def roundtrip(self, clock: Clock, src: Actor, dst: Actor, nbytes: int, seed: int, what: str) -> None:
        """A transfer that must work: bit-exact within transfer_error_s."""
        from conformance.areas.recovery.transfers import roundtrip
        roundtrip(clock, self.x, src, dst, nbytes, seed, what, float(self.param("transfer_error_s")))


def _node_with_units(resource: str, n: int) -> bool:
    """Whether an alive node offers at least `n` units of `resource`."""
    import ray

    return any(node.get("Alive") and node.get("Resources", {}).get(resource, 0) >= n for node in ray.nodes())
