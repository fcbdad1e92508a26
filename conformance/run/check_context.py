"""The one context every check receives: the run, the check as the run loaded it, its metrics,
its cluster (through its shape mark only) and its scenario clock.

Each area subclasses `CheckContext` with what its checks add (the device variable, the
registered transport, the topology view, ...) and builds it in one fixture named `<area>_ctx`,
in the area's fixture module; a check function takes that one argument and nothing else
(tests/unit/test_check_context.py holds every check to it). So there is one way for a threshold
to reach check code, `ctx.param(name)`: the values this run loaded from the checklist, the same
ones the report records and `verify` re-judges with. And one way to a cluster, `ctx.cluster()`:
the shape the check's checklist entry names (`cluster:`; the shared cluster for `none`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, TypeVar

import pytest

from conformance.run.budget import Budget
from conformance.run.state import BUDGET_KEY, METRICS_KEY
from conformance.timing.clock import Clock

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

    from conformance.catalog.data import Check, SuiteData
    from conformance.catalog.manifest import Manifest
    from conformance.catalog.vendor_calls import HangRecord
    from conformance.cluster.manager import ClusterShape
    from conformance.report.judges import Verdict
    from conformance.timing.host_load import MachineryRecord

C = TypeVar("C", bound="CheckContext")


class RunView(Protocol):
    """What a check may see of its run (conformance.run.session.ConformanceRun)."""

    manifest: "Manifest"
    data: "SuiteData"
    ray_address: str | None
    hangs: "HangRecord"
    devices: dict[str, Any]
    config: pytest.Config
    default_timeout: float      # a check's budget when its entry names none (--conformance-timeout)
    setup_timeout: float
    machinery: "MachineryRecord"  # the run's record of Ray's machinery: what stretches its bounds

    def prepare(self) -> type[AcceleratorManager]: ...
    def cluster(self, shape: "ClusterShape", fresh: bool = False) -> Any: ...
    def fault_driver(self) -> Any: ...
    def publish(self, section: str, value: dict[str, Any]) -> None: ...
    def published(self, section: str) -> dict[str, Any] | None: ...


@dataclass
class CheckContext:
    """One check's context. Area contexts are subclasses built by `derive`."""

    run: RunView
    check: "Check"                      # its params are this run's thresholds: the only way they reach code
    metrics: dict[str, Any]             # lands in the check's `metrics` in report.json
    shape_name: str                     # the shape its checklist entry names ("shared" for none)
    budget: Budget                      # the one owner of its time: every wait goes through it
    marked: bool = False                # its checklist entry names a shape (a check of none may start none)
    _shape: "ClusterShape | None" = field(default=None, repr=False)
    _cluster: Any = field(default=None, repr=False)

    @classmethod
    def for_item(cls, item: pytest.Item, run: RunView) -> "CheckContext":
        """The context of the check `item` evidences (its one `check` mark; the registry lint
        has already refused an item without one)."""
        from conformance.cluster.manager import SHARED

        mark = item.get_closest_marker("check")
        if mark is None or not mark.args:
            raise pytest.UsageError(f"{item.nodeid}: a check needs @pytest.mark.check(ID)")
        check = run.data.checklist.by_id()[str(mark.args[0])]
        name = check.shape()
        metrics = item.stash.setdefault(METRICS_KEY, {})
        budget = item.stash.setdefault(BUDGET_KEY, Budget(check, metrics, run.machinery))
        return cls(run=run, check=check, metrics=metrics, shape_name=name or SHARED.name, budget=budget,
                   marked=name is not None)

    @classmethod
    def derive(cls: type[C], base: "CheckContext", **extra: Any) -> C:
        """An area's context from the base one, with the area's own fields in `extra`."""
        shared = {f.name: getattr(base, f.name) for f in fields(CheckContext)}
        return cls(**shared, **extra)

    # ------------------------------------------------------------------ the run
    @property
    def manifest(self) -> "Manifest":
        return self.run.manifest

    @property
    def check_id(self) -> str:
        return self.check.id

    def manager(self) -> type[AcceleratorManager]:
        """The vendor's AcceleratorManager, injected into Ray in this process (once)."""
        return self.run.prepare()

    # ------------------------------------------------------------------ thresholds
    def param(self, name: str) -> Any:
        """One threshold of this check as this run loaded it (a data error when it is missing)."""
        return self.check.param(name)

    # ------------------------------------------------------------------ the outcome
    def verdict(self) -> "Verdict":
        """What the check's judge (the checklist's `judge:`, conformance.report.judges) gives on
        the evidence recorded so far, under this run's params and manifest: the decision `verify`
        re-makes from report.json."""
        from conformance.report import judges

        return judges.judge(self.check, self.metrics, self.manifest.data, remote=bool(self.run.ray_address))

    def decide(self, detail: str = "", **evidence: Any) -> None:
        """Record `evidence` in the check's metrics and decide by its judge: the check fails with
        the judge's reason (and `detail`) unless the judge passes it. A check ends here, so its
        outcome is what verify recomputes from the same record."""
        from conformance.run.outcomes import REASON_LIMIT

        self.metrics.update(evidence)
        verdict = self.verdict()
        if verdict.outcome != "pass":
            reason = str(verdict.reason)
            room = REASON_LIMIT - len(detail) - 1   # the reason line is cut there: `detail` (advice) stays whole
            if detail and len(reason) > room > 0:
                reason = reason[:room] + "…"
            raise AssertionError(f"{reason}{detail}")

    def decide_per_node(self, by_node: Mapping[str, Mapping[str, Any]], alive: int | None = None,
                        **common: Any) -> None:
        """Decide a check that ran its scenario on each node (`--nodes all`): every node's evidence
        (`by_node`: node id -> the evidence the judge reads, e.g. tasks_run and tasks) is recorded
        under `per_node` (short ids), and where the judge reads goes the first node whose evidence
        fails it (else the first node's), so the verdict verify recomputes from the record is the
        worst node's; the reason names that node. `common`: evidence every node shares; `alive`: as `exercised` takes it."""
        from conformance.report.coverage import short_id
        from conformance.run.nodes import first_failing

        if not by_node:
            self.decide(**common)
            return
        worst = first_failing(by_node, lambda ev: self._verdict_on({**common, **ev}).outcome != "pass")
        chosen = worst if worst is not None else next(iter(by_node))
        self.metrics["per_node"] = {short_id(n): dict(ev) for n, ev in by_node.items()}
        self.exercised(list(by_node), alive)
        self.decide(f" (node {short_id(chosen)}, of {len(by_node)} node(s) run)" if worst is not None else "",
                    **common, **by_node[chosen])

    def _verdict_on(self, evidence: Mapping[str, Any]) -> "Verdict":
        """The judge's verdict on the metrics with `evidence` over them, recording nothing."""
        from conformance.report import judges

        return judges.judge(self.check, {**self.metrics, **evidence}, self.manifest.data,
                            remote=bool(self.run.ray_address))

    # ------------------------------------------------------------------ the nodes it used
    @property
    def node_mode(self) -> str:
        """The run's node mode (conformance.run.nodes: "sample", today's behaviour, or "all")."""
        from conformance.run.nodes import run_mode

        return run_mode(self.run)

    def exercised(self, node_ids: str | Iterable[object], alive: int | None = None) -> None:
        """Record the nodes (ids, full or short) this check used, with the count of alive nodes
        (`alive`; None: what this check read before, else Ray's view read once now): the one coverage record per check
        (conformance.report.coverage, "nodes: k of N" in the report). Calls add up."""
        from conformance.report.coverage import coverage_of
        from conformance.run.nodes import alive_nodes, record

        ids = [node_ids] if isinstance(node_ids, str) else list(node_ids)
        if alive is None:   # Ray's view is read once per check, not once per call
            before = coverage_of(self.metrics)
            alive = before[1] if before is not None else len(alive_nodes())
        record(self.metrics, ids, alive, self.node_mode)

    # ------------------------------------------------------------------ the cluster
    @property
    def shape(self) -> "ClusterShape":
        """The concrete shape the check's checklist entry names, resolved for this run; the check is not
        applicable when that shape cannot exist here (conformance.cluster.shapes)."""
        if self._shape is None:
            self._shape = resolve_shape(self.run, self.shape_name)
        return self._shape

    def cluster(self) -> Any:
        """The live cluster of the check's shape (started, or reused when one with the same
        parameters is up); for a shape the check starts afresh itself, the one it starts from."""
        if self._cluster is None:
            from conformance.cluster import shapes

            first = shapes.first_cluster(self.shape_name, self.shape, self.run.manifest, self.run.prepare(),
                                         self.run.ray_address, self.run.machinery, fault_driver=self.run.fault_driver)
            self._cluster = use_cluster(self.run, first)
        return self._cluster

    def use_cluster(self, shape: "ClusterShape", fresh: bool = False) -> Any:
        """A cluster of another shape the check moves to itself (a fresh start, a derived shape)."""
        self._cluster = use_cluster(self.run, shape, fresh=fresh)
        return self._cluster

    # ------------------------------------------------------------------ the clock
    def scenario(self, name: str, bound_s: float | None = None, *, param: str | None = None) -> Clock:
        """A bounded run of the plugin's steps of this check: every wait on it ends at its bound
        (the checklist's, never stretched), recorded in its budget (conformance.run.budget)."""
        return self.budget.scenario(name, bound_s, param=param)


def resolve_shape(run: RunView, name: str) -> "ClusterShape":
    """The shape `name` for this run; n/a when it cannot exist here, a start error when the
    vendor call it needs is known to hang."""
    from conformance.catalog.vendor_calls import KnownHang, VendorHang
    from conformance.cluster import shapes
    from conformance.cluster.manager import ClusterStartError
    from conformance.report.results import not_applicable

    # Resolving a shape asks the manager as Ray does at a node start: a call known to hang fails
    # it at once, and one found hanging here is recorded for every later shape.
    known = None if run.ray_address else run.hangs.blocks_node_start()
    if known is not None:
        raise ClusterStartError(f"cluster {name!r} not started: {known.reason()}")
    manager = run.prepare()
    try:
        return shapes.for_run(name, run.manifest, manager, run.ray_address, run.machinery,
                              fault_driver=run.fault_driver)
    except shapes.ShapeNotApplicable as exc:
        not_applicable(str(exc))
        raise  # not reached: not_applicable raises
    except VendorHang as exc:
        run.hangs.add(KnownHang(exc.method, f"shape {name!r}", exc.bound_s))
        raise ClusterStartError(f"cluster {name!r} not started: {exc}") from None


def use_cluster(run: RunView, shape: "ClusterShape", fresh: bool = False) -> Any:
    """run.cluster(shape), its start error without the chained traceback."""
    from conformance.cluster.manager import ClusterStartError

    try:
        return run.cluster(shape, fresh=fresh)
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
