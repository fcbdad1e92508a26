"""Other hosts (DP-017..DP-020): a host without the device, faults in detection, asking more than
is visible, the no-set variable.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.device.host_detection import (
    problems_detection,
    problems_noset,
    problems_overcommit,
    problems_unknown_device,
    problems_warned,
)
from conformance.areas.device.judges.common import (
    JUDGES,
    Metrics,
    _accelerator,
    _bool,
    _ids,
    _list,
    _mapping,
    _observed,
    _resource_recorded,
    _str_or_none,
    _verdict,
    detection_probe,
    manifest_resource,
)
from conformance.report.judges import (
    MissingEvidence,
    Verdict,
    number,
    param_value,
    ran_remote,
)


# ------------------------------------------------------------------------------ other hosts (DP-017 .. DP-020)
@JUDGES.rule(needs=("probe", "resource"), params=("max_detect_s",))
def host_without_device_detects_nothing(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-017: detection under the manifest's without_device overlay finds nothing, quickly and
    quietly; the node started that way came up without the resource or a type, and detection in a
    worker there agrees."""
    max_s = param_value(p, "max_detect_s")
    hosts = _accelerator(manifest).get("hosts") or {}
    problems = _resource_recorded(m, manifest)
    if "without_device" not in hosts:
        problems.append("the manifest declares no accelerator.hosts.without_device: this check is not "
                        "applicable, no pass")
    problems += problems_detection(detection_probe(m.get("probe"), "metric probe"), "without the device", max_s)
    if "live" in m:   # a --ray-address cluster without such a node: only the probe ran
        if not isinstance(m.get("live"), str) or not ran_remote(manifest):
            problems.append("records `live` (no node without the device in the cluster: only the probe ran), but the "
                            "run started its own cluster, which has such a node: the node's and its worker's "
                            "evidence is missing")
        elif "node" in m or "worker" in m:
            problems.append("records `live` (no node without the device) beside a node without the device")
        return _verdict(problems, "detection without the device finds nothing (no live node)")
    start = _mapping(m.get("start"), "metric start")
    if not _bool(start.get("ok"), "start.ok"):
        problems.append(f"a cluster with a node without the device did not start: {start.get('error')}")
        return _verdict(problems, "")
    for r in _list(start.get("errors", []), "start.errors")[:3]:
        r = _mapping(r, "start.errors[]")
        problems.append(f"while that node started, {r.get('logger')} logged {r.get('level')}: {r.get('message')}")
    if m.get("node") is None:
        problems.append(f"the node started as a host without the device advertises {manifest_resource(manifest)}")
        return _verdict(problems, "")
    node = _mapping(m.get("node"), "metric node")
    if number(node, "advertises") != 0:
        problems.append(f"the node started as a host without the device advertises {node['advertises']:g} units")
    types = _ids(node.get("accelerator_types"), "node.accelerator_types")
    if types:
        problems.append(f"the node without devices advertises {types}")
    worker = _mapping(m.get("worker"), "metric worker")
    if "error" in worker:
        problems.append(f"a task on the node without devices did not run: {worker['error']}")
    else:
        problems += [x.replace("on a host without the device", "in a worker on the node without devices")
                     for x in problems_detection(detection_probe(worker.get("probe"), "worker.probe"),
                                                 "without the device", max_s)]
    return _verdict(problems, "a host without the device detects nothing and runs work")


FAULT_HOSTS = {"library_error": "whose vendor library fails", "unknown_device": "whose device id is unknown"}


@JUDGES.rule(needs=("probes",), params=("max_detect_s", "require_warning"))
def detection_degrades_under_faults(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-018: under every fault overlay the manifest declares, detection degrades (0 / None),
    quickly, without raising or logging ERROR, and (require_warning) with a warning."""
    max_s = param_value(p, "max_detect_s")
    require_warning = p.get("require_warning")
    if not isinstance(require_warning, bool):
        raise MissingEvidence("param require_warning is missing or not true/false")
    probes = _mapping(m.get("probes"), "metric probes")
    declared = sorted(k for k in FAULT_HOSTS if k in (_accelerator(manifest).get("hosts") or {}))
    problems = []
    if not declared:
        problems.append("the manifest declares no fault host overlay: this check is not applicable, no pass")
    if sorted(probes) != declared:
        problems.append(f"detection was recorded under {sorted(probes)}; the manifest declares {declared}")
    for kind in declared:
        if kind not in probes:
            continue
        seen = detection_probe(probes[kind], f"probes.{kind}")
        if kind == "library_error":
            problems += problems_detection(seen, FAULT_HOSTS[kind], max_s)
        else:
            problems += problems_unknown_device(seen, max_s)
        if require_warning:
            problems += problems_warned(seen, FAULT_HOSTS[kind])
    return _verdict(problems, f"detection degrades under {', '.join(declared)}")


@JUDGES.rule(needs=("request", "result", "env_var", "visible"), params=("visible_ids",))
def node_asking_more_than_visible_refused(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-019: resolving a node's resources with one unit more than the release's visible ids
    fails with Ray's ValueError naming the manifest's resource."""
    request = number(m, "request")
    visible = _ids(m.get("visible"), "metric visible")
    env_var = m.get("env_var")
    if not isinstance(env_var, str) or not env_var:
        raise MissingEvidence("metric env_var is missing")
    want = [str(i) for i in _list(p.get("visible_ids"), "param visible_ids")]
    problems = []
    if visible != want:
        problems.append(f"the node was resolved with {env_var}={','.join(visible)}; the release's visible_ids are {want}")
    if request != len(visible) + 1:
        problems.append(f"the node asked for {request:g} units; the check asks one more than the {len(visible)} visible")
    result = _observed(m.get("result"), "metric result")
    problems += problems_overcommit(dict(result), manifest_resource(manifest), env_var, visible, request)
    return _verdict(problems, "Ray refuses the over-asked node")


@JUDGES.rule(needs=("result", "env_var", "noset_var", "preset", "ids"), params=("preset", "ids"))
def noset_variable_leaves_visible_ids(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-020: with the manifest's opt-out variable set, set leaves the preset value; without it,
    set writes the ids."""
    noset = _accelerator(manifest).get("noset_env_var")
    env_var = m.get("env_var")
    if not isinstance(env_var, str) or not env_var:
        raise MissingEvidence("metric env_var is missing")
    problems = []
    if not isinstance(noset, str) or not noset:
        problems.append("the manifest declares no accelerator.noset_env_var: this check is not applicable, no pass")
    elif m.get("noset_var") != noset:
        problems.append(f"the opt-out variable set was {m.get('noset_var')!r}; the manifest declares {noset!r}")
    preset, ids = str(p.get("preset")), [str(i) for i in _list(p.get("ids"), "param ids")]
    if m.get("preset") != preset or m.get("ids") != ids:
        problems.append(f"the probe preset {m.get('preset')!r} and set {m.get('ids')!r}; the release's are "
                        f"{preset!r} and {ids}")
    result = _mapping(m.get("result"), "metric result")
    for side in ("with_noset", "without_noset"):
        entry = _observed(result.get(side), f"result.{side}")
        _str_or_none(entry.get("after"), f"result.{side}.after")
    problems += problems_noset(dict(result), env_var, str(m.get("noset_var")), preset)
    return _verdict(problems, "the opt-out variable is honoured")
