"""Which nodes a run's per-node checks cover (`ray-conformance run --nodes all|sample`), and the one
way a check records the nodes it exercised.

  sample  (the default) the visibility checks' per-node scenarios (DP-008/010/011/012) run on a
          sample of the device nodes chosen with the run's seed (drawn, or `--node-seed`), the
          size the release fixes (tiers/tiers.yaml nodes.sample_size; conformance.catalog.node_sample,
          which verify recomputes); the other per-node checks run where their scenario puts them:
          a transport pair on the nodes its pool picked, a node-recovery scenario on its roles' nodes;
          the checks whose scenario already spans the cluster (DP-006, DP-007, DP-009, the
          topology collection) still cover every alive node.
  all     the checks whose scenario is per node (the device visibility probes; the topology
          collection already is) run it on every alive node that can hold it, in waves the cluster
          takes at once: one probe per node submitted together and gathered with one bounded get,
          the cluster's view read once per wave (never a node-by-node round trip, never
          `ray.nodes()` polled in a loop).

Under either mode the recovery scenarios that kill a process on a node (FR-001..FR-005) run on
the seed's choice of `nodes.sample_size` nodes per failure domain (`domain_choice`; the seed is
drawn or `--node-seed` under `all` too, and recorded), all of them in one wave.

The mode goes into the report's selection (`selection.nodes`, conformance.catalog.selection) beside
the command line that gave it (`--conformance-nodes=`), both signed with the report. Whatever the
mode, each per-node check records which nodes it used (`ctx.exercised(...)`:
conformance.report.coverage's record, shown per check as "nodes: k of N").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, MutableMapping, Sequence

from conformance.catalog.node_sample import choose, eligible, node_domains, per_domain, sample_record
from conformance.catalog.selection import NODE_MODES, NODES_OPTION
from conformance.report.coverage import COVERAGE, SHORT_ID, merged

MODES = NODE_MODES                  # the modes, default first (the selection record checks them)
SAMPLE, ALL = MODES
OPTION = NODES_OPTION.rstrip("=")   # the pytest option `ray-conformance run --nodes` forwards

if TYPE_CHECKING:
    from ray import ObjectRef


def parse_mode(value: object, field: str = "--nodes") -> str:
    """The node mode a command line names (None: the default, SAMPLE); ValueError naming the field
    and the choices otherwise."""
    if value is None or value == "":
        return SAMPLE
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise ValueError(f"{field}: unknown node mode {str(value)[:40]!r}; expected one of {', '.join(MODES)}")
    return mode


def selection_nodes(mode: str, seed: int | None = None, size: int | None = None) -> dict[str, Any]:
    """The report's `selection.nodes` for a run in `mode`, with its seed and size when it has them
    (conformance.catalog.node_sample, which verify recomputes the choices with): a sample's choose
    its nodes, and under either mode the recovery scenarios' nodes per failure domain."""
    if seed is not None and size is not None:
        return sample_record(seed, size, mode)
    return {"mode": mode}


def run_seed(run: object) -> int | None:
    """The node seed of a run (ConformanceRun.node_seed; None for a stand-in without one)."""
    seed = getattr(run, "node_seed", None)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def sampled(recorded: object, alive: Sequence[Mapping[str, Any]], resource: str, units: float, seed: int,
            size: int) -> list[str]:
    """The sample's nodes (full ids) for a check asking `units` of `resource`: the seed's choice
    among the run's recorded nodes (environment.devices.nodes, `recorded`; verify recomputes it
    from the same list), mapped onto Ray's view `alive` (a recorded node no longer alive is left
    out, so the check's record shows the sample it could run). Without a recorded list (a run
    object that has none), the choice is among the alive nodes holding the units."""
    pool = eligible(recorded, units) if recorded else [n[:SHORT_ID] for n in holding(alive, resource, units)]
    chosen = set(choose(pool, seed, size))
    return [str(n["NodeID"]) for n in alive if str(n["NodeID"])[:SHORT_ID] in chosen]


def domain_choice(run: object, alive: Sequence[Mapping[str, Any]], resource: str, units: float,
                  keys: Sequence[str]) -> list[str] | None:
    """The recovery scenarios' nodes (full ids, in Ray's order): the run's seed's choice of its
    sample size per failure domain (conformance.catalog.node_sample.per_domain, domains by the
    label `keys`) among the run's recorded nodes (environment.devices.nodes, which verify
    recomputes it from), mapped onto Ray's view `alive` (one read); without a recorded list, among
    the alive nodes holding `units`. None for a run without a seed (a stand-in)."""
    seed = run_seed(run)
    if seed is None:
        return None
    recorded = (getattr(run, "devices", None) or {}).get("nodes")
    listed = recorded if recorded else [{"node_id": str(n["NodeID"]), "labels": n.get("Labels") or {},
                                         "count": float((n.get("Resources") or {}).get(resource, 0))} for n in alive]
    size = getattr(run, "node_sample_size", 1)
    chosen = set(per_domain(node_domains(listed, units, keys), seed, size if isinstance(size, int) else 1))
    return [str(n["NodeID"]) for n in alive if str(n["NodeID"])[:SHORT_ID] in chosen]


def run_mode(run: object) -> str:
    """The node mode of a run (conformance.run.session.ConformanceRun.nodes; SAMPLE for a run
    object that has none, e.g. a test's stand-in)."""
    mode = getattr(run, "nodes", SAMPLE)
    return mode if mode in MODES else SAMPLE


# ------------------------------------------------------------------ the cluster's view, once

def alive_nodes() -> list[dict[str, Any]]:
    """Ray's view of the alive nodes, read once (a wave reads it once and works from the copy)."""
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def holding(nodes: Iterable[Mapping[str, Any]], resource: str, units: float = 1) -> list[str]:
    """The ids of `nodes` (one read of the view) offering at least `units` of `resource`."""
    return [str(n["NodeID"]) for n in nodes if float((n.get("Resources") or {}).get(resource, 0)) >= units]


# ------------------------------------------------------------------ the record

def record(metrics: MutableMapping[str, Any], node_ids: Iterable[Any], alive: int, mode: str) -> None:
    """Add `node_ids` (full or short) to a check's coverage record in `metrics` (one key, COVERAGE)."""
    metrics[COVERAGE] = merged(metrics.get(COVERAGE), node_ids, alive, mode)


def node_of(state: object) -> str | None:
    """The node id a probe's answer names (conformance.cluster.probes.visible_state's `node_id`)."""
    return str(state["node_id"]) if isinstance(state, Mapping) and state.get("node_id") else None


# ------------------------------------------------------------------ waves

def pinned(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def wave(submit: Callable[[str], Iterable[ObjectRef[Any]]], node_ids: Sequence[str],
         get: Callable[[list[ObjectRef[Any]], str], Iterable[Any]], what: str) -> dict[str, Any]:
    """One wave: `submit(node_id)` for every node (each returns a list of refs; nothing waits
    between submissions), then one bounded `get` (a check's `ctx.budget.get(refs, bound, what)`
    partial: get(refs, what)) over all of them. Returns node id -> its results, in submission order."""
    refs: dict[str, list[ObjectRef[Any]]] = {nid: list(submit(nid)) for nid in node_ids}
    flat = [r for rs in refs.values() for r in rs]
    results = list(get(flat, what)) if flat else []
    out: dict[str, Any] = {}
    i = 0
    for nid, rs in refs.items():
        out[nid] = results[i:i + len(rs)]
        i += len(rs)
    return out


def first_failing(by_node: Mapping[str, Mapping[str, Any]], failing: Callable[[Mapping[str, Any]], object]) -> str | None:
    """The first node (in order) whose evidence `failing(evidence)` says fails; None when none does.
    A check that ran per node records that node's evidence where its judge reads (the release's
    judge judges one node's record), so the verdict verify recomputes is the worst node's."""
    for nid, evidence in by_node.items():
        if failing(evidence):
            return nid
    return None


def ring_pairs(node_ids: Sequence[str]) -> list[tuple[str, str]]:
    """One wave of endpoint pairs in which every node is an endpoint (a transport check's pairs
    under `--nodes all`): (n0, n1), (n2, n3), ..., and with an odd count (n_last, n0); each pair two
    different nodes, ceil(N/2) pairs; [] with fewer than two nodes. Disjoint but for that last pair,
    so at most one node's endpoint takes part in two of the wave's transfers."""
    nodes = list(dict.fromkeys(node_ids))
    if len(nodes) < 2:
        return []
    pairs = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2:
        pairs.append((nodes[-1], nodes[0]))
    return pairs
