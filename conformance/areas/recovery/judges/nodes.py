"""Node recovery (FR-007..FR-011, FR-017, FR-019): a dead, lost, rejoined or partitioned node, and a
group packed in one domain when a node of it dies. FR-019 reads the release's own label vocabulary
(tiers/labels.yaml: its packing keys, read once), the one input beyond the evidence.
"""
from __future__ import annotations

from typing import Mapping

from conformance.areas.recovery import domains
from conformance.areas.recovery.audit import holder_problems
from conformance.areas.recovery.judges.common import (
    Findings,
    M,
    _Wrong,
    actor_error,
    assigned,
    at_least,
    device_count,
    env_var,
    guarded,
    labels_match,
    left_to_ray,
    on_node,
    pid,
    record,
    recovery_rule,
    selector_of,
    signature_findings,
    signatures,
    view_after_loss,
    within,
)
from conformance.catalog.labels import load_vocabulary
from conformance.report.judges import (
    MissingEvidence,
    Verdict,
    number,
    param_value,
)


# ------------------------------------------------------------------------------------- nodes
@recovery_rule("FR-007", needs=("node_b_devices", "gone_s", "view_after", "in_flight_call_error", "call_failed_s",
                                "survivors", "survivors_watched_s"),
               params=("node_gone_s", "survivor_watch_s", "actor_ready_s"))
@guarded
def dead_node_left_view_survivors_kept(m: M, p: M, manifest: M) -> Verdict:
    """Node b killed hard: gone from the view (its devices and labels) within node_gone_s, the call
    in flight on it failed with an actor error within node_gone_s, and the holders on the head and
    node c kept their process and devices while watched for survivor_watch_s."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    view_after_loss(m, "view_after", devices, out)
    actor_error(m, "in_flight_call_error", out, "the call in flight on node b")
    within(m, "call_failed_s", p, "node_gone_s", out, "the call in flight on node b failing")
    survivors = record(m, "survivors")
    if sorted(survivors) != ["c", "head"]:
        out.append(f"survivors records nodes {sorted(survivors)}, expected head and c")
    for role, seen in survivors.items():
        seen = seen if isinstance(seen, Mapping) else {}
        old, now = record(seen, "before"), seen.get("after")
        if not isinstance(now, Mapping):
            out.append(f"holder on node {role} stopped answering after node b died ({str(now)[:120]})")
            continue
        on_node(old, role, out, f"holder on node {role}")
        on_node(now, role, out, f"holder on node {role} after node b died")
        if (pid(old, role), assigned(old)) != (pid(now, role), assigned(now)):
            out.append(f"holder on node {role}: was pid {old.get('pid')} with {assigned(old)}, now pid "
                       f"{now.get('pid')} with {assigned(now)}: disturbed by another node's death")
        out.extend(holder_problems(dict(now), env, 1, None, f"holder on node {role}"))
    if not out:   # the watch ends early when a survivor is disturbed
        at_least(m, "survivors_watched_s", p, "survivor_watch_s", out, "the watch of the survivors")
    return out.verdict("node b left the view with its devices and labels; the survivors kept their processes "
                       "and devices")


def _moved_to_c(m: M, p: M, name: str, selector: Mapping[str, str], env: str | None, out: list[str],
                bound: str, label: str) -> None:
    """A piece of pool work (`label`) that started on b and ran again on c (the only surviving match)."""
    work = record(m, name)
    first, moved = record(work, "first"), record(work, "moved")
    on_node(first, "b", out, f"{label} before node b was lost")
    on_node(moved, "c", out, label)
    labels = record(work, "moved_labels")
    if not labels_match(labels, selector):
        out.append(f"{label} ran on a node with labels {labels}, which do not match its selector {selector}")
    if pid(moved, name) == pid(first, name):
        out.append(f"{label} answers from its old process")
    within(work, "moved_s", p, bound, out, f"{label} running again")
    out.extend(holder_problems(dict(moved), env, 1, None, label))


@recovery_rule("FR-008", needs=("node_b_devices", "selector", "gone_s", "view_after", "actor"),
               params=("reschedule_s", "node_gone_s", "actor_ready_s", "device_release_s", "rejoin_s"))
@guarded
def pool_work_moved_to_matching_survivor(m: M, p: M, manifest: M) -> Verdict:
    """The restartable actor (and, with a device to spare on b, the retried task) placed on b by a
    selector with the accelerator type ran again within reschedule_s on node c, the only surviving
    node matching it, holding one device with agreeing views."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    view_after_loss(m, "view_after", devices, out)
    _moved_to_c(m, p, "actor", selector, env, out, "reschedule_s", "pool actor")
    if devices >= 2:   # knob: structure: the task needs a device beside the actor's (as the check)
        _moved_to_c(m, p, "task", selector, env, out, "reschedule_s", "pool task")
    return out.verdict("the pool work ran again on node c, the surviving node matching its selector")


@recovery_rule("FR-009", needs=("node_b_devices", "selector", "first", "gone_s", "window", "back", "back_labels",
                                "ran_after_rejoin_s"),
               params=("pending_window_s", "rejoin_s", "node_gone_s", "actor_ready_s", "view_settle_s"))
@guarded
def pinned_work_waited_for_rejoin(m: M, p: M, manifest: M) -> Verdict:
    """The actor only node b matched neither ran elsewhere nor failed while watched for
    pending_window_s after b died, then ran on the rejoined b within rejoin_s once b had registered
    (its registration is Ray's machinery, left out: registered_s), views agreeing."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    if selector.get("conformance.areas.recovery/node") != "b":
        out.append(f"the selector {selector} does not pin the work to node b")
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    first = record(m, "first")
    on_node(first, "b", out, "the pinned actor before node b died")
    window = record(m, "window")
    at_least(window, "watched_s", p, "pending_window_s", out, "the pending window")
    if window.get("ran_on") is not None:
        out.append(f"the actor pinned to node b by label ran on node {window.get('ran_on')!r} while no node "
                   f"matched {selector}")
    if window.get("failed") is not None:
        out.append(f"the actor whose only matching node died failed with {window.get('failed')!r} instead of "
                   "waiting for a matching node")
    if out:
        return out.verdict("")   # what came after a failed window judges nothing more
    back = record(m, "back")
    on_node(back, "b", out, "the actor after the rejoin")
    if not labels_match(record(m, "back_labels"), selector):
        out.append(f"after the rejoin the actor ran on a node with labels {m.get('back_labels')}, not matching {selector}")
    if pid(back, "back") == pid(first, "first"):
        out.append("after the rejoin the actor answers from its old process")
    within(m, "ran_after_rejoin_s", p, "rejoin_s", out, "the pending actor running on the rejoined node",
           extra=left_to_ray(m, p, out))
    out.extend(holder_problems(back, env, 1, None, "actor after the rejoin"))
    return out.verdict("the pinned actor waited while no node matched and ran on the rejoined node b")


@recovery_rule("FR-010", needs=("node_b_devices", "placed", "lost", "gone_s", "pg_states_seen", "new_node",
                                "pg_rescheduled_s", "moved", "moved_s", "survivor_before", "survivor_after"),
               params=("pg_reschedule_s", "node_gone_s", "actor_ready_s", "device_release_s", "rejoin_s"))
@guarded
def lost_bundle_placed_again_survivor_kept(m: M, p: M, manifest: M) -> Verdict:
    """The STRICT_SPREAD group's bundle on b was placed again (group CREATED) within
    pg_reschedule_s on another live node than the kept bundle's, its actor answered there within
    pg_reschedule_s holding one device, and the kept bundle's actor kept its process and device."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    placed, lost = record(m, "placed"), number(m, "lost")
    if sorted(str(v) for v in placed.values()) != ["b", "c"] or lost not in (0, 1):
        out.append(f"the bundles were placed on {placed} (lost bundle {lost:g}), not one on b and one on c")
        return out.verdict("")
    lost_i, kept_i = int(lost), 1 - int(lost)
    if placed.get(str(lost_i)) != "b":
        out.append(f"the lost bundle {lost_i} was placed on {placed.get(str(lost_i))!r}, not on node b")
    new_node = m.get("new_node")
    if new_node in ("b", placed.get(str(kept_i))) or not isinstance(new_node, str):
        out.append(f"the lost bundle was placed again on {new_node!r}: not another live node than the kept "
                   f"bundle's {placed.get(str(kept_i))!r} (STRICT_SPREAD)")
    if "CREATED" not in (m.get("pg_states_seen") or []):
        out.append(f"the group was never seen CREATED again (states {m.get('pg_states_seen')})")
    within(m, "pg_rescheduled_s", p, "pg_reschedule_s", out, "the lost bundle being placed again")
    within(m, "moved_s", p, "pg_reschedule_s", out, "the lost bundle's actor running again")
    moved = record(m, "moved")
    if moved.get("node") != new_node:
        out.append(f"the lost bundle's actor runs on {moved.get('node')!r}, not on its bundle's new node {new_node!r}")
    out.extend(holder_problems(moved, env, 1, None, "lost bundle's actor"))
    old, now = record(m, "survivor_before"), record(m, "survivor_after")
    if (pid(old, "survivor"), assigned(old)) != (pid(now, "survivor"), assigned(now)):
        out.append("the actor in the surviving bundle was restarted or changed device: "
                   f"{assigned(old)} (pid {old.get('pid')}) -> {assigned(now)} (pid {now.get('pid')})")
    return out.verdict(f"the lost bundle was placed again on {new_node}; the kept bundle's actor kept its device")


@recovery_rule("FR-011", needs=("node_b_devices", "before", "after", "gone_s", "alive_s", "rejoin_s", "holder"),
               params=("rejoin_s", "view_settle_s", "actor_ready_s", "node_gone_s", "device_release_s"))
@guarded
def rejoined_node_advertises_as_before(m: M, p: M, manifest: M) -> Verdict:
    """The killed node b, added again, was alive within rejoin_s and advertised its devices, type
    and labels as before within view_settle_s more; a holder selecting it started there. The node's
    start and registration is Ray's machinery (registered_s: stretched on a loaded host, judged
    as its recorded wait), left out of both figures; what it advertises is the plugin's."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    before, after = signatures(m, "before"), signatures(m, "after")
    if before != after:
        out.append(f"the rejoined node b advertises {after}; before it died: {before}")
    out.extend(signature_findings(before, manifest, "node b before it died"))
    registered = left_to_ray(m, p, out)
    within(m, "alive_s", p, "rejoin_s", out, "the rejoined node b being alive", extra=registered)
    within(m, "rejoin_s", p, "rejoin_s", out, "the rejoined node b advertising as before",
           extra=param_value(p, "view_settle_s") + registered)
    holder = record(m, "holder")
    on_node(holder, "b", out, "the holder selecting the rejoined node")
    out.extend(holder_problems(holder, env, 1, None, "actor on the rejoined node"))
    return out.verdict("the rejoined node b advertises its devices, type and labels as before")


@recovery_rule("FR-017", needs=("node_b_devices", "selector", "declared_dead_s", "view_after", "actor",
                                "healed_watch", "rejoined", "rejoin_s"),
               params=("dead_within_s", "reschedule_s", "healed_watch_s", "rejoin_s"))
@guarded
def partitioned_node_replaced_and_rejoined_new(m: M, p: M, manifest: M) -> Verdict:
    """Node b partitioned: dead in the view within dead_within_s (devices and labels gone), its
    pool actor ran again on c within reschedule_s, the old node stayed dead for healed_watch_s
    after the link came back, and the restarted host joined as a new node advertising as before
    within rejoin_s (its registration, Ray's machinery, left out: registered_s)."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    within(m, "declared_dead_s", p, "dead_within_s", out, "the partitioned node b being declared dead")
    view_after_loss(m, "view_after", devices, out)
    _moved_to_c(m, p, "actor", selector, env, out, "reschedule_s", "pool actor after the partition")
    if out:
        return out.verdict("")   # the partition was not handled: what came after judges nothing more
    watch = record(m, "healed_watch")
    at_least(watch, "watched_s", p, "healed_watch_s", out, "the watch of the healed node")
    if watch.get("old_node_back") is not False:
        out.append("node b is alive again under its old id after the partition healed")
    rejoined = record(m, "rejoined")
    if rejoined.get("new_id") is not True:
        out.append("the healed host did not join as a new node (its old node id)")
    before, after = signatures(rejoined, "before"), signatures(rejoined, "after")
    if before != after:
        out.append(f"the healed host advertises {after}; before the partition: {before}")
    out.extend(signature_findings(before, manifest, "node b before the partition"))
    within(m, "rejoin_s", p, "rejoin_s", out, "the healed host joining as a new node", extra=left_to_ray(m, p, out))
    return out.verdict("the partitioned node was replaced; the healed host joined as a new node")


@recovery_rule("FR-019", needs=("key", "layout", "placed", "victim", "lost", "domain", "filled", "outside",
                                "victim_devices", "gone_s", "view_after", "window", "rejoined", "after"),
               params=("pending_window_s", "pg_reschedule_s", "rejoin_s", "node_gone_s", "actor_ready_s",
                       "device_release_s"))
@guarded
def packed_group_waits_for_its_domain(m: M, p: M, manifest: M) -> Verdict:
    """A group of two one-device bundles packed by topology_strategy (STRICT_PACK on the first
    packing label a node carries, one bundle per node) on two nodes of one domain; the killable one
    died with the domain's other nodes full: the lost bundle stayed pending for pending_window_s
    (never on a node of another value), the node came back with its devices and the same value of
    the label, and the group was CREATED again with its bundles where they were. The plan (which
    node dies, which are filled) is rebuilt from the recorded layout (conformance.areas.recovery.domains)."""
    out = Findings()
    layout = record(m, "layout")
    for role, node in layout.items():
        if not isinstance(node, Mapping) or not isinstance(node.get("domains"), Mapping):
            raise MissingEvidence(f"metric layout.{role} is not a node's devices and domain labels")
        number(node, "devices")
    keys = [k.key for k in load_vocabulary().packing_keys()]
    why = domains.why_not_applicable(layout, keys)
    if why:
        raise MissingEvidence(f"the recorded layout makes no scenario: {why}")
    key = domains.packing_key(layout, keys)
    if m.get("key") != key:
        raise _Wrong(f"records packing key {m.get('key')!r}; the recorded layout's first packing key is {key!r}")
    try:
        placed = {int(i): str(r) for i, r in record(m, "placed").items()}
    except ValueError as exc:
        raise MissingEvidence(f"metric placed is not bundle index -> role: {exc}") from exc
    plan = domains.plan_after_placement(layout, str(key), placed)
    if isinstance(plan, str):
        raise _Wrong(plan)
    recorded = [m.get("victim"), m.get("lost"), m.get("domain"), m.get("filled"), m.get("outside")]
    if recorded != [plan.victim, plan.lost, plan.domain, list(plan.filled), list(plan.outside)]:
        raise _Wrong(f"records victim, lost bundle, domain, filled and outside nodes {recorded}; for the group on "
                     f"{placed} the check's plan is {[plan.victim, plan.lost, plan.domain, list(plan.filled), list(plan.outside)]}")
    victim, domain = plan.victim, plan.domain
    devices = device_count(m, "victim_devices", manifest, out)
    if devices != number(layout[victim], "devices"):
        out.append(f"victim_devices is {devices}; the layout records {layout[victim].get('devices')} on node {victim}")
    within(m, "gone_s", p, "node_gone_s", out, f"node {victim} leaving the cluster view")
    view_after_loss(m, "view_after", devices, out)
    window = record(m, "window")
    if window.get("lost_on") is not None:
        out.append(f"while {key}={domain} had no room, the lost bundle was placed on {window.get('lost_on')!r} "
                   f"({key}={window.get('lost_on_domain')!r}): the group packed with STRICT_PACK spans domains")
    else:
        at_least(window, "watched_s", p, "pending_window_s", out, "the wait of the lost bundle for its domain")
    if out:
        return out.verdict("")
    rejoined = record(m, "rejoined")
    got = (rejoined.get("domains") or {}).get(key)
    if got != domain:
        out.append(f"the rejoined node {victim} carries {key}={got!r}; before it died it carried {domain!r} (same host, "
                   "same environment): the group's lost bundle cannot come back to its domain")
    if number(rejoined, "devices") != devices:
        out.append(f"the rejoined node {victim} advertises {number(rejoined, 'devices'):g} devices; before it died {devices}")
    if rejoined.get("new_node") is not True:
        out.append(f"the rejoined node {victim} is recorded as the node that died")
    if out:
        return out.verdict("")
    after = record(m, "after")
    if after.get("state") != "CREATED":
        out.append(f"the group is {after.get('state')!r} after the lost bundle was placed again, not CREATED")
    want = {str(plan.lost): victim, str(1 - plan.lost): plan.survivor}
    if dict(after.get("placed") or {}) != want:
        out.append(f"after the rejoin the bundles are on {after.get('placed')}; the lost one belongs on the rejoined "
                   f"{victim}, the other stays on {plan.survivor}: {want}")
    seen = {str(v) for v in (after.get("domains") or {}).values()}
    if seen != {domain}:
        out.append(f"after the rejoin the group spans {key} values {sorted(seen)}, not only {domain!r}")
    return out.verdict(f"the group packed in {key}={domain} waited for it while node {victim} was dead and was "
                       "placed there again when it came back")
