"""FR-019's Ray side: a placement group's bundles by node, and the waits on Ray's machinery the
scenario makes (a node registering again, a group Ray can place by the labels), each through
the check's budget (conformance.run.budget: stretched by the run's measurement, a fresh sample
before blaming, recorded in metrics.waits) and left out of the scenario's own bound."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from conformance.timing.waits import polled

if TYPE_CHECKING:
    from ray.util.placement_group import PlacementGroup

    from conformance.run.budget import Budget
    from conformance.timing.clock import Clock

T = TypeVar("T")


def table(pg: PlacementGroup) -> dict[str, Any]:
    from ray.util.placement_group import placement_group_table

    return dict(placement_group_table(pg))


def bundle_nodes(tab: dict[str, Any], alive: set[str]) -> dict[int, str]:
    """Bundle index -> node id, for the bundles Ray's table places on a live node (a lost bundle
    is either absent from the table or still names its dead node)."""
    mapping = tab.get("bundles_to_node_id") or {}
    return {int(i): str(n) for i, n in mapping.items() if n and str(n) in alive}


def alive_ids() -> set[str]:
    import ray

    return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}


def await_ray(budget: Budget, clock: Clock, probe: Callable[[], T | None], what: str, param: str,
              runs_plugin_code: bool = False, begin: Callable[[], Any] | None = None,
              explain: Callable[[], str] | None = None) -> T:
    """`probe()`'s first truthy value, polled as a wait on Ray's machinery bounded by the check's
    `param` (Budget.ray; `runs_plugin_code` when what is awaited also runs the plugin's code, a
    node starting: then a host that did its part leaves the failure to the plugin), after
    `begin()` (once: what sets Ray's machinery going, a node added); `explain()` says what was last
    seen when it runs out. Its time is left out of the scenario's bound (`clock`)."""
    with clock.left_out():
        return budget.ray(polled(probe, what, begin=begin, explain=explain), what, param=param,
                          runs_plugin_code=runs_plugin_code)
