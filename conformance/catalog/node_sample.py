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
The sample size is release data (tiers/tiers.yaml `nodes.sample_size`, schemas/tiers.schema.json;
Ladder.knobs.nodes): the run reads its release's, verify the claimed release's (catalog.release_knobs).

Pure: no Ray, no I/O.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from conformance.catalog.labels import Vocabulary

SHORT_ID = 8          # node ids as the house records them (conformance.report.coverage.SHORT_ID)
SEED_BITS = 32        # a drawn seed is below 2**SEED_BITS (readable, and plenty for a sample)
# The checks whose scenario runs per node in waves, and the units of the resource a node must
# offer to hold it (DP-011 asks for 2): the checks the seed's choice, and `all`, apply to.
# The checks whose evidence is a pair of endpoints on two nodes: under `all`, a wave of pairs
# every node is in (`pair_wave`; conformance.run.nodes.ring_pairs).
PAIR_CHECKS = ("TR-006",)
PAIR_WAVE = "pair_wave"
SAMPLED_CHECKS: dict[str, float] = {"DP-008": 1, "DP-010": 1, "DP-011": 2, "DP-012": 1}  # knob: structure: units each scenario requests
# The recovery checks whose scenario kills a process on each node of the failure-domain choice
# (`per_domain`: sample_size nodes of every failure domain, under either mode), in one wave
# (conformance/checks/recovery/test_recovery_devices.py), and the devices a node must offer.
RECOVERY_CHECKS: dict[str, float] = {"FR-001": 1, "FR-002": 1, "FR-003": 1, "FR-004": 1, "FR-005": 1}  # knob: structure: a node whose devices its holders hold
DOMAIN_KINDS = ("interconnect", "slice", "rack", "zone")   # manifest topology.expected.domains (the schema's enum)


@dataclass(frozen=True)
class NodePolicy:
    """A release's tiers.yaml `nodes` (Ladder.knobs.nodes): how many device nodes `sample` picks."""

    sample_size: int


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


def sample_record(seed: int, size: int, mode: str = "sample") -> dict[str, Any]:
    """selection.nodes of a sampled run (and of an `all` run: its seed chooses the recovery
    scenarios' nodes per failure domain)."""
    return {"mode": mode, "seed": int(seed), "size": int(size)}


# ------------------------------------------------------------------ failure domains (recovery)

def failure_domain_keys(declared: object, describing: Callable[[str], list[str]],
                        every_domain_key: Sequence[str]) -> list[str]:
    """The label keys that say a node's failure domain: those describing each domain kind the
    manifest declares (topology.expected.domains: `declared`; `describing(field)` is the label
    vocabulary's keys_describing), else, when it declares none, every key the vocabulary marks a
    domain (`every_domain_key`): the labels the plugin sets say the domains either way."""
    kinds = [k for k in declared if k in DOMAIN_KINDS] if isinstance(declared, (list, tuple)) else []
    keys = [key for kind in kinds for key in describing(f"domains.{kind}")]
    return list(dict.fromkeys(keys or list(every_domain_key)))


def manifest_domain_keys(manifest: object, vocabulary: Vocabulary) -> list[str]:
    """failure_domain_keys of a manifest (its data, as the report embeds it) under the label
    vocabulary (tiers/labels.yaml): what the run and verify group nodes by."""
    topology = _map(_map(manifest).get("topology"))
    return failure_domain_keys(_map(topology.get("expected")).get("domains"), vocabulary.keys_describing,
                               [k.key for k in vocabulary.domain_keys()])


def domain_of(labels: object, keys: Sequence[str]) -> str:
    """A node's failure domain: "key=value,..." of the `keys` its labels carry, in their order
    ("" for a node that carries none: the unlabelled nodes are one domain)."""
    lab = labels if isinstance(labels, Mapping) else {}
    return ",".join(f"{k}={lab[k]}" for k in keys if isinstance(lab.get(k), str) and lab[k])


def node_domains(devices_nodes: object, units: float, keys: Sequence[str]) -> dict[str, str]:
    """Short id -> failure domain of a run's recorded nodes (environment.devices.nodes: node_id,
    count, labels) offering at least `units` devices."""
    out: dict[str, str] = {}
    for n in devices_nodes if isinstance(devices_nodes, list) else []:
        if isinstance(n, Mapping) and short(n.get("node_id")) in eligible([n], units):
            out[short(n["node_id"])] = domain_of(n.get("labels"), keys)
    return out


def per_domain(domains: Mapping[str, str], seed: int, size: int) -> list[str]:
    """The recovery scenarios' nodes (short ids, sorted): `size` nodes of every failure domain
    (`domains`: short id -> domain), each domain's chosen by `choose` under `seed`; at least one
    per domain whatever the size, so no domain goes unexercised."""
    groups: dict[str, list[str]] = {}
    for node, domain in domains.items():
        groups.setdefault(domain, []).append(node)
    return sorted(n for nodes in groups.values() for n in choose(nodes, seed, max(1, int(size))))


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


def choice_problems(report: Mapping[str, Any], policy: NodePolicy,
                    domain_keys: Sequence[str] | None = None) -> tuple[list[str], str]:
    """Why the report's per-node checks did not exercise the nodes its node mode gives, and what
    held when nothing is wrong (problems, summary). A check that did not pass is left alone (it
    may have failed before reaching a node); a report without a seed (a release before the
    seeded sample) or without its node list has nothing to recompute from. With `domain_keys`
    (failure_domain_keys of the report's manifest), the recovery checks (RECOVERY_CHECKS) are
    held to the seed's choice per failure domain too (recovery_problems)."""
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
            problems.append(f"selection.nodes.size is {str(size)[:20]!r}; the release fixes "
                            f"{policy.sample_size} (its tiers/tiers.yaml nodes.sample_size)")
    elif "size" in record and record.get("size") != policy.sample_size:
        problems.append(f"selection.nodes.size is {str(record.get('size'))[:20]!r}; the release fixes "
                        f"{policy.sample_size} (its tiers/tiers.yaml nodes.sample_size)")
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
    if domain_keys is not None:
        recovery, held, note = recovery_problems(report.get("checks") or [], listed, seed, policy, domain_keys)
        problems += recovery
        summary += f"; {held} recovery check(s) {note}" if held else f"; {note}"
    return problems, summary


def recovery_problems(checks: object, listed: object, seed: object, policy: NodePolicy,
                      keys: Sequence[str]) -> tuple[list[str], int, str]:
    """Each passed recovery check of RECOVERY_CHECKS ran its scenario on the seed's choice of
    policy.sample_size node(s) per failure domain (per_domain over node_domains of the run's node
    list, `listed`), each of them with its own record (metrics.per_node) and in the check's
    coverage: (problems, how many checks were held, what held). Without a seed (an `all` run of a
    release before the seed was recorded there) there is nothing to recompute from."""
    if seed is None:
        return [], 0, "not held to a failure-domain choice: the run records no seed (a release before it did)"
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** SEED_BITS:
        return [f"selection.nodes.seed is {str(seed)[:40]!r}; expected a whole number below 2**{SEED_BITS}"], 0, ""
    problems: list[str] = []
    held = 0
    for check in checks if isinstance(checks, list) else []:
        if not isinstance(check, Mapping) or check.get("id") not in RECOVERY_CHECKS or check.get("outcome") != "pass":
            continue
        cid = str(check["id"])
        domains = node_domains(listed, RECOVERY_CHECKS[cid], keys)
        want = per_domain(domains, seed, policy.sample_size)
        covered, per_node = _coverage(check), _per_node(check)
        held += 1
        if covered is None or per_node is None:
            problems.append(f"{cid} records no per-node scenario evidence (metrics.node_coverage and metrics.per_node)")
            continue
        if covered != want or per_node != want:
            missing = sorted(set(want) - set(per_node))
            problems.append(f"{cid} ran its scenario on nodes {per_node[:8]} (coverage {covered[:8]}); seed {seed}'s "
                            f"choice of {policy.sample_size} per failure domain among {len(domains)} node(s) in "
                            f"{len(set(domains.values()))} domain(s) is {want[:8]}"
                            + (f": node(s) {missing[:8]} have no scenario record" if missing else ""))
    return problems, held, (f"ran on seed {seed}'s choice of {policy.sample_size} node(s) per failure domain "
                            f"({', '.join(keys[:4]) or 'no domain keys'})")


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
