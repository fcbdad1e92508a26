"""A "not judged: host" verdict carries the host's measurements (held-out round 25: N25_13).

An error whose reason starts "not judged: host: " (conformance.report.results.HOST_PREFIX) says the
host, not the plugin, failed: it is never a pass, but never a failure of the plugin either, and a
capability or an attempt it ends is not the plugin's fault. So a failed check rewritten to that
prefix, its metrics emptied, hides a failure behind the host. The run never writes the verdict
without measuring the host, and verify holds each honest form to the measurement it carries:

* a wait on Ray's machinery that ran out (conformance.run.machinery.await_machinery): the check's
  metrics.waits lists a wait with verdict "host", what it was granted and what it took (at least
  the grant);
* a fresh worker-start sample taken before blaming the host (budget.host_failed, machinery's
  before_blaming / more_time): the reason quotes it ("a bare worker took 9.1s to start just now",
  or "did not start within 30s just now"), and the run's machinery record, which notes every such
  sample (measure_worker_start), holds a slowest worker start at least that long;
* a placement group Ray left pending within a granted wait (TL-013/TL-014: metrics.host_pending
  beside the granted wait on Ray the check recorded; an earlier attempt, which keeps only its
  reason, in the suite's words with the grant);
* Ray's own node registration ran out starting a cluster: cluster.history records the failed start
  of the check's shape (ok false); checks that start nodes themselves (NODE_STARTING_SHAPES, the
  recovery node lab's add_node) may meet it inside the check, with Ray's fixed 30 s as their grant;
* the preflight: the report's preflight section failed (ok false) with a finding of the host.

The text forms (an earlier attempt keeps only {outcome, reason, duration_s}) are the vendor's word up
to the machinery record they are held to (docs/signing.md, "What verify cannot recompute").

Pure: the report's parts in, problem lines out.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_list, as_map
from conformance.report.results import HOST_PREFIX
from conformance.sanitize import terminal

FRESH_TOOK = re.compile(r"a bare worker took (\d+(?:\.\d+)?)s to start just now")
FRESH_NONE = re.compile(r"a bare worker did not start within (\d+(?:\.\d+)?)s just now")
# the grant beside the fresh sample: machinery.host_reason's "within 130s (the 120s bound stretched x1.1", or
# budget.host_failed's "the slowest worker start before: 2.3s"
GRANT = re.compile(r"within (\d+(?:\.\d+)?)s \(the (\d+(?:\.\d+)?)s bound stretched x(\d+(?:\.\d+)?)")
BEFORE = re.compile(r"the slowest worker start before: (\d+(?:\.\d+)?)s")
# conformance.areas.topology.placement: a group the labels and the description agree Ray can place
PENDING = re.compile(r"was not placed by Ray within \d+s although the labels of .+ match it")
RAY_REGISTRATION = "Ray's node did not register within Ray's own fixed 30 s startup wait"
PREFLIGHT = HOST_PREFIX + "the preflight: "
NODE_STARTING_SHAPES = frozenset({"recovery-nodes"})   # the node lab starts nodes inside its checks
ROUNDING_S = 0.06   # the reason prints a sample to 0.1 s; the machinery record keeps it to 0.01 s


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _waits(metrics: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [as_map(w) for w in as_list(as_map(metrics.get("waits")).get("each"))]


def _ran_out_wait(metrics: Mapping[str, Any]) -> bool:
    """A wait the run gave up on as the host's, with its grant and what it took."""
    for w in _waits(metrics):
        granted, took = _number(w.get("granted_s")), _number(w.get("took_s"))
        if w.get("verdict") == "host" and granted is not None and granted > 0 and took is not None \
                and took + 0.01 >= granted:
            return True
    return False


def _fresh_sample(reason: str, cluster: Mapping[str, Any]) -> bool:
    """The reason quotes both measurements: what the wait was granted (the bound, its stretch, and
    that it waited the stretched bound out; or the slowest worker start the run measured before)
    and the fresh worker-start sample, each within what the run's machinery record holds."""
    slowest = _number(as_map(as_map(cluster.get("machinery")).get("slowest_s")).get("worker_start"))
    if slowest is None:
        return False
    # the run's own sample is any of those quoted: a reason may carry another job's too (CC-003's
    # hook job measures its own machinery, and budget.host_failed appends the run's sample after it)
    samples = [float(m.group(1)) for pattern in (FRESH_TOOK, FRESH_NONE) for m in pattern.finditer(reason)]
    if not any(sample <= slowest + ROUNDING_S for sample in samples):
        return False
    grant, before = GRANT.search(reason), BEFORE.search(reason)
    if grant is not None:
        waited, bound, factor = (float(g) for g in grant.groups())
        return bound > 0 and waited + 1.0 >= bound * factor   # the reason prints the wait to 1 s
    return before is not None and float(before.group(1)) <= slowest + ROUNDING_S


def _pending_group(reason: str, metrics: Mapping[str, Any]) -> bool:
    """A group Ray left pending within a wait on Ray the check recorded the grant of (an earlier
    attempt, which keeps only its reason, says the grant in the suite's words: PENDING)."""
    pending = metrics.get("host_pending")
    granted = any(w.get("owner") == "ray" and (_number(w.get("granted_s")) or 0) > 0 for w in _waits(metrics))
    return (isinstance(pending, list) and bool(pending) and granted) or PENDING.search(reason) is not None


def _failed_start(reason: str, shape: str, cluster: Mapping[str, Any]) -> bool:
    """Ray's registration wait ran out: the start the run recorded failing, or a lab that starts nodes."""
    if RAY_REGISTRATION not in reason:
        return False
    failed = any(as_map(h).get("shape") == shape and as_map(h).get("ok") is False
                 for h in as_list(cluster.get("history")))
    return failed or shape in NODE_STARTING_SHAPES


def _preflight_failed(reason: str, preflight: Mapping[str, Any]) -> bool:
    if not reason.startswith(PREFLIGHT) or preflight.get("ok") is not False:
        return False
    return any(str(as_map(f).get("message") or "").startswith(HOST_PREFIX) for f in as_list(preflight.get("findings")))


def carries_host_measurement(reason: str, metrics: Mapping[str, Any], shape: str, cluster: Mapping[str, Any],
                             preflight: Mapping[str, Any]) -> bool:
    """Whether a "not judged: host" verdict carries one of the host measurements the run records."""
    return (_ran_out_wait(metrics) or _fresh_sample(reason, cluster) or _pending_group(reason, metrics)
            or _failed_start(reason, shape, cluster) or _preflight_failed(reason, preflight))


def host_verdict_problems(checks: Sequence[Any], cluster: Mapping[str, Any], preflight: Mapping[str, Any], *,
                          shapes: Mapping[str, str]) -> list[str]:
    """Why a check's (or an attempt's) "not judged: host" verdict carries no host measurement
    (`shapes`: coverage_rule.release_shapes of the report's release)."""
    from conformance.signing.coverage_rule import SHARED
    problems: list[str] = []
    for raw in checks:
        entry = as_map(raw)
        cid = str(entry.get("id"))
        metrics = as_map(entry.get("metrics"))
        shape = shapes.get(cid, SHARED)
        verdicts = [("", entry.get("reason"))] + [(f" (attempt {i + 1})", as_map(a).get("reason"))
                                                  for i, a in enumerate(as_list(entry.get("attempts")))]
        for where, reason in verdicts:
            if isinstance(reason, str) and reason.startswith(HOST_PREFIX) \
                    and not carries_host_measurement(reason, metrics, shape, cluster, preflight):
                problems.append(f"{terminal(cid, limit=12)}{where} is 'not judged: host' without the host's measurements "
                                "(no wait on Ray that ran out past its grant, no fresh worker-start sample the run's "
                                "machinery record holds, no failed cluster start or preflight recorded): "
                                f"{terminal(reason, limit=120)}")
    return problems
