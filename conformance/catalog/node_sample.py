"""Which nodes a run's per-node checks use, as a pure function anyone can recompute (issue 48).

`run --nodes sample` (the default) runs the per-node scenarios of the visibility checks
(SAMPLED_CHECKS) on a sample of the device nodes chosen at random: the run draws a seed (or takes
`--node-seed`), records it with the sample size in the report's selection (`selection.nodes`:
{"mode": "sample", "seed": S, "size": K}) and runs each check on `choose(eligible nodes, S, K)`.
`verify` recomputes the same choice from the recorded seed and the run's own list of its nodes
(environment.devices.nodes) and refuses a report whose exercised nodes are another set, so a
vendor cannot pick the good nodes and call them a sample. `--nodes all` runs them on every
eligible node; there a check whose per-node record misses a node of that list fails the same line.

The choice ranks each node by sha256("<seed>:<short id>") and takes the first K: no library's
random stream (whose algorithm may change between versions) decides what a signed report claims.
The sample size is a run knob (tiers/run.yaml `nodes.sample_size`, schemas/run.schema.json), read
by the run and by verify alike.

Pure: no Ray, no I/O.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

SHORT_ID = 8          # node ids as the house records them (conformance.report.coverage.SHORT_ID)
SEED_BITS = 32        # a drawn seed is below 2**SEED_BITS (readable, and plenty for a sample)
# The checks whose scenario runs per node in waves, and the units of the resource a node must
# offer to hold it (DP-011 asks for 2): the checks the seed's choice, and `all`, apply to.
# The checks whose evidence is a pair of endpoints on two nodes: under `all`, a wave of pairs
# every node is in (`pair_wave`; conformance.run.nodes.ring_pairs).
PAIR_CHECKS = ("TR-006",)
PAIR_WAVE = "pair_wave"
SAMPLED_CHECKS: dict[str, float] = {"DP-008": 1, "DP-010": 1, "DP-011": 2, "DP-012": 1}  # knob: structure: units each scenario requests


@dataclass(frozen=True)
class NodePolicy:
    """tiers/run.yaml `nodes`: how many device nodes `sample` picks."""

    sample_size: int


def node_policy(knobs: Mapping[str, Any]) -> NodePolicy:
    """The policy of the run knobs (conformance.catalog.data.load_run_knobs(), schema-validated)."""
    n = knobs["nodes"]
    return NodePolicy(int(n["sample_size"]))


def new_seed() -> int:
    """A fresh seed for a run that was given none."""
    return secrets.randbelow(2 ** SEED_BITS)


def shard_seed(manifest_sha256: str) -> int:
    """The seed of a sharded run given none (`run --shard I/N` without --node-seed): derived from the
    manifest's digest, so every shard of the run records the same seed and `merge` (which requires
    one seed across shards) takes them; --node-seed chooses another."""
    return int(hashlib.sha256(f"node-seed:{manifest_sha256}".encode()).hexdigest()[:8], 16)


def parse_seed(value: object, field: str = "--node-seed") -> int | None:
    """A seed a command line gives (None: none given); ValueError naming the field otherwise."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) >= 2 ** SEED_BITS:
        raise ValueError(f"{field}: expected a whole number 0 <= seed < {2 ** SEED_BITS}, got {text[:40]!r}")
    return int(text)


def short(node_id: object) -> str:
    return str(node_id)[:SHORT_ID]


def _rank(seed: int, node: str) -> str:
    return hashlib.sha256(f"{seed}:{node}".encode()).hexdigest()


def choose(node_ids: Iterable[Any], seed: int, size: int) -> list[str]:
    """The sample: the `size` nodes (short ids, sorted) of `node_ids` that rank first under `seed`
    (all of them when there are no more). The same inputs give the same nodes, in any order."""
    nodes = sorted({short(n) for n in node_ids if n})
    return sorted(sorted(nodes, key=lambda n: _rank(seed, n))[:max(0, int(size))])


def eligible(devices_nodes: object, units: float) -> list[str]:
    """Short ids of a run's recorded nodes (environment.devices.nodes: [{node_id, count}, ...])
    offering at least `units` devices; [] for a record that is not a list of such entries."""
    out: list[str] = []
    for n in devices_nodes if isinstance(devices_nodes, list) else []:
        if not isinstance(n, Mapping):
            continue
        node, count = n.get("node_id"), n.get("count")
        if isinstance(node, str) and isinstance(count, (int, float)) and not isinstance(count, bool) and count >= units:
            out.append(short(node))
    return sorted(set(out))


def sample_record(seed: int, size: int) -> dict[str, Any]:
    """selection.nodes of a sampled run."""
    return {"mode": "sample", "seed": int(seed), "size": int(size)}


def _map(value: object) -> Mapping[str, Any]:
    """`value` when it is an object, else {} (a hostile report is a problem, never an exception)."""
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _coverage(check: Mapping[str, Any]) -> list[str] | None:
    metrics = check.get("metrics")
    record = metrics.get("node_coverage") if isinstance(metrics, Mapping) else None
    nodes = record.get("nodes") if isinstance(record, Mapping) else None
    return sorted(map(str, nodes)) if isinstance(nodes, list) else None


def _per_node(check: Mapping[str, Any]) -> list[str] | None:
    metrics = check.get("metrics")
    record = metrics.get("per_node") if isinstance(metrics, Mapping) else None
    return sorted(map(str, record)) if isinstance(record, Mapping) else None


def choice_problems(report: Mapping[str, Any], policy: NodePolicy) -> tuple[list[str], str]:
    """Why the report's per-node checks did not exercise the nodes its node mode gives, and what
    held when nothing is wrong (problems, summary). A check that did not pass is left alone (it
    may have failed before reaching a node); a report without a seed (a release before the
    seeded sample) or without its node list has nothing to recompute from."""
    record = _map(_map(report.get("selection")).get("nodes"))
    mode = record.get("mode")
    listed = _map(_map(report.get("environment")).get("devices")).get("nodes")
    if mode not in ("sample", "all"):
        return [], "no node mode recorded (a report of a release before run --nodes)"
    if "shards" in _map(report.get("selection")):
        return [], "a merged report: each shard's own nodes line held its checks to its own cluster's nodes"
    if not isinstance(listed, list) or not listed:
        return [], "the run records no list of its nodes (environment.devices.nodes): nothing to recompute"
    problems: list[str] = []
    seed: Any = record.get("seed")
    if mode == "sample":
        if seed is None:
            return [], "a sample without a recorded seed (a release before the seeded sample)"
        size = record.get("size")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** SEED_BITS:
            return [f"selection.nodes.seed is {str(seed)[:40]!r}; expected a whole number below 2**{SEED_BITS}"], ""
        if size != policy.sample_size:
            problems.append(f"selection.nodes.size is {str(size)[:20]!r}; the release's run knobs fix "
                            f"{policy.sample_size} (tiers/run.yaml nodes.sample_size)")
    checked = 0
    for check in report.get("checks") or []:
        if not isinstance(check, Mapping) or check.get("id") not in SAMPLED_CHECKS or check.get("outcome") != "pass":
            continue
        cid = str(check["id"])
        pool = eligible(listed, SAMPLED_CHECKS[cid])
        want = choose(pool, int(seed), policy.sample_size) if mode == "sample" else pool
        covered, per_node = _coverage(check), _per_node(check)
        checked += 1
        if covered is None or per_node is None:
            problems.append(f"{cid} records no per-node evidence (metrics.node_coverage and metrics.per_node) in a "
                            f"run whose selection.nodes says {mode}")
            continue
        if covered != want or per_node != want:
            what = (f"seed {seed}'s choice of {policy.sample_size} among {len(pool)} node(s)" if mode == "sample"
                    else f"every node of environment.devices.nodes offering {SAMPLED_CHECKS[cid]:g} device(s)")
            missing = sorted(set(want) - set(per_node))
            problems.append(f"{cid} exercised nodes {covered[:8]} (per_node {per_node[:8]}); {what} is {want[:8]}"
                            + (f": node(s) {missing[:8]} missing from per_node" if missing else ""))
    if mode == "all":
        wave_problems, waves = pair_wave_problems(report.get("checks") or [], eligible(listed, 1))
        problems += wave_problems
        checked += waves
    summary = (f"{checked} per-node check(s) exercised " + (f"seed {seed}'s choice of {policy.sample_size} node(s)"
                                                             if mode == "sample" else "every device node"))
    return problems, summary


def pair_wave_problems(checks: object, nodes: list[str]) -> tuple[list[str], int]:
    """Under `all`, each passed pair check (PAIR_CHECKS) ran, on every device type it exercised, a
    wave of endpoint pairs (metrics `pair_wave`, conformance.run.nodes.ring_pairs) in which each of
    `nodes` (the run's device nodes) is an endpoint: (problems, how many checks were held)."""
    problems: list[str] = []
    held = 0
    for check in checks if isinstance(checks, list) else []:
        if not isinstance(check, Mapping) or check.get("id") not in PAIR_CHECKS or check.get("outcome") != "pass":
            continue
        metrics = _map(check.get("metrics"))
        types = _items(metrics.get("devices"))
        held += 1
        for d in types:
            record = _map(metrics.get(d)) if len(types) > 1 else metrics
            pairs = _map(record.get(PAIR_WAVE)).get("pairs")
            if not isinstance(pairs, list):
                problems.append(f"{check['id']} on {str(d)[:20]} records no {PAIR_WAVE} in a run whose selection.nodes says all")
                continue
            ends = {str(n) for pr in pairs if isinstance(pr, list) for n in pr}
            missing = sorted(set(nodes) - ends)
            if missing:
                problems.append(f"{check['id']} on {str(d)[:20]}: node(s) {missing[:8]} of environment.devices.nodes are "
                                "in no pair of its wave")
    return problems, held
