"""The preflight: in seconds, before any check, can this host and this cluster shape run the suite?

Host: available memory, `/dev/shm` already in use, Ray processes of earlier runs — each of which
has made good plugins fail (a leaking transport's earlier run left 21 GB in /dev/shm; later runs
then failed transport checks with OutOfMemoryError, blamed on the plugin). These are warnings.

Cluster: a task pinned to every node imports the manager, the topology provider and the
transport the way the checks' workers will, and calls each manager method once
(`conformance.run.preflight_probe`). A module that imports in the driver but not in workers shows
up here with the worker's own traceback, read from Ray's worker log when the task never ran.

Node start: before any cluster starts, each manager method Ray calls at a node start is called
once in this process, within the call bound (`probe_node_start`): a hang found there is recorded
in the run's HangRecord (conformance.catalog.vendor_calls), so every later cluster start and probe that
needs that call fails at once; a command (`refuse_node_start_hang`) ends with one line instead.

Findings have three levels: `error` (nothing meaningful can run: the run stops, the report
says why), `problem` (a check will fail on it; the run goes on and the checks judge it),
`warning` (the host may skew results). Judging is pure (`judge_node`, `host_findings`); only
`probe_cluster` and `host_state` touch the world.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from conformance.catalog.vendor_calls import NODE_START_METHODS, HangRecord, KnownHang, VendorHang, bounded_call
from conformance.cluster.manager import patched_environ
from conformance.report.local_paths import portable_processes, shorten_paths
from conformance.report.results import HOST_PREFIX
from conformance.run.machinery import await_machinery, measure_worker_start
from conformance.sanitize import terminal
from conformance.timing.host_load import HostNotReady, MachineryRecord
from conformance.timing.waits import NO_RESULT

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest
    from conformance.catalog.manifest_view import Expected

ERROR, PROBLEM, WARNING = "error", "problem", "warning"
RAY_PROCESS_MARKERS = ("/raylet", "gcs_server", "default_worker.py", "ray::", "plasma_store",
                       "log_monitor.py", "dashboard/agent.py", "runtime_env/agent")


@dataclass
class Finding:
    level: str                  # error | problem | warning
    where: str                  # host | manifest | node <id8>
    message: str                # one line
    detail: str = ""            # a traceback or log excerpt (paths shortened)


@dataclass
class PreflightResult:
    findings: list[Finding] = field(default_factory=list)
    duration_s: float = 0.0
    nodes: int = 0
    host: dict[str, Any] = field(default_factory=dict)

    @property
    def fatal(self) -> list[Finding]:
        return [f for f in self.findings if f.level == ERROR]

    @property
    def ok(self) -> bool:
        return not self.fatal

    def reason(self) -> str:
        """One line for the report when the run stops."""
        return "; ".join(f"{f.where}: {f.message}" for f in self.fatal)[:1500]

    def host_reason(self) -> str | None:
        """When every error is the host's (Ray's machinery too slow for the probe): the reason each
        check gets, "not judged: host: the preflight: ..." (None: an error is the plugin's or the
        suite's, and the run stops as "not run")."""
        fatal = self.fatal
        if not fatal or not all(f.message.startswith(HOST_PREFIX) for f in fatal):
            return None
        return (HOST_PREFIX + "the preflight: "
                + "; ".join(f"{f.where}: {f.message.removeprefix(HOST_PREFIX)}" for f in fatal))[:1500]

    def as_dict(self) -> dict[str, Any]:
        """The report's preflight section: local paths (other Ray sessions' folders) shortened."""
        host = dict(self.host)
        if "ray_processes" in host:
            host["ray_processes"] = portable_processes(host["ray_processes"])
        return {"ok": self.ok, "duration_s": round(self.duration_s, 2), "nodes": self.nodes,
                "findings": [asdict(f) for f in self.findings], "host": host}


# ---------------------------------------------------------------------------------- host
def _meminfo_mb(key: str) -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _shm_state(folder: str = "/dev/shm") -> dict[str, Any]:
    """/dev/shm's size and use, and every entry below it however deep (process_owners.shm_entries:
    paths below it, a folder's ending with "/")."""
    from conformance.cluster.process_owners import shm_entries

    try:
        st = os.statvfs(folder)
        entries = sorted(e.name for e in shm_entries(folder))
    except OSError:
        return {"total_mb": None, "used_mb": None, "entries": []}
    total = st.f_blocks * st.f_frsize / 2**20
    free = st.f_bavail * st.f_frsize / 2**20
    return {"total_mb": round(total, 1), "used_mb": round(total - free, 1), "entries": entries}


def ray_processes() -> list[dict[str, Any]]:
    """Ray's processes on this host (any user): pid, what it is, its session folder if known.

    A daemon names its session on its command line (process_owners.session_of); a worker, which
    renames itself `ray::…`, belongs to the session of the daemon it descends from.
    """
    from conformance.cluster.process_owners import parents, session_of

    found, own_session = [], {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        cmd = " ".join(argv)
        marker = next((m for m in RAY_PROCESS_MARKERS if m in cmd), None)
        if marker is None:
            continue
        own_session[int(pid)] = session_of(argv)
        found.append({"pid": int(pid), "kind": marker.strip("/"), "session": own_session[int(pid)]})
    if any(p["session"] is None for p in found):
        parent_of = parents()
        for p in found:
            up, hops = p["pid"], 0
            while p["session"] is None and up in parent_of and hops < 16:
                up, hops = parent_of[up], hops + 1
                p["session"] = own_session.get(up)
    return found


def host_state() -> dict[str, Any]:
    """A snapshot of what the run cares about on the host (taken before and after the run)."""
    from conformance.cluster.process_owners import shm_detail

    shm = _shm_state()
    try:
        shm["detail"] = shm_detail()
    except OSError:
        shm["detail"] = {}
    return {"available_memory_mb": _meminfo_mb("MemAvailable"), "shm": shm, "ray_processes": ray_processes()}


def host_findings(state: dict[str, Any], limits: dict[str, Any]) -> list[Finding]:
    """Warnings about a host that would skew the results (pure)."""
    out = []
    mem = state.get("available_memory_mb")
    if mem is not None and mem < limits["min_available_memory_mb"]:
        out.append(Finding(WARNING, "host", f"only {mem:.0f} MB of memory available (< "
                           f"{limits['min_available_memory_mb']:.0f} MB): object stores and transports may fail "
                           "with OutOfMemoryError that is not the plugin's fault"))
    shm = state.get("shm") or {}
    used, total = shm.get("used_mb"), shm.get("total_mb")
    if used is not None and total:
        if used >= limits["max_shm_used_mb"] or used / total >= limits["max_shm_used_fraction"]:
            stale = [d for d in (shm.get("detail") or {}).values() if not d.get("held") and d.get("uid") == os.getuid()]
            stale_mb = sum(int(d.get("bytes") or 0) for d in stale) / 2**20
            out.append(Finding(WARNING, "host", f"/dev/shm already holds {used:.0f} MB of {total:.0f} MB "
                               f"({len(shm.get('entries', []))} entries) before this run started anything: shared-memory "
                               "transports and object stores may fail with OutOfMemoryError that is not the plugin's fault"
                               + (f"; {stale_mb:.0f} MB of it is {len(stale)} segment(s) of your user that no process "
                                  "holds (left by earlier runs of yours, if you recognise them)" if stale_mb >= 1 else "")))
    procs = state.get("ray_processes") or []
    if procs:
        sessions = sorted({p["session"] for p in procs if p.get("session")})
        pids = ", ".join(str(p["pid"]) for p in procs[:8]) + (" …" if len(procs) > 8 else "")
        out.append(Finding(WARNING, "host", f"{len(procs)} Ray process(es) of {len(sessions)} other session(s) already "
                           f"running on this host (pids {pids}), none started by this run: they share CPU, memory and "
                           "/dev/shm with it, so timings may be noisier; this run never touches them"))
    return out


# ---------------------------------------------------------------------------------- cluster
def _result_value(call: dict[str, Any] | None) -> Any:
    if not call or not call.get("ok"):
        return None
    return (call.get("result") or {}).get("value")


def judge_node(where: str, result: dict[str, Any] | str | HostNotReady, *, ray_count: float, expected: Expected | None,
               preload_expected: bool, worker_log: str | None = None) -> list[Finding]:
    """Findings for one node's probe result (pure). `ray_count`: the devices Ray registered there;
    `expected`: the manifest's accelerator.expected (None: nothing to compare the calls with).
    HostNotReady: Ray's machinery did not run the probe on a host too slow for it: an error that
    stops the run, worded as the host's ("not judged: host: ..."), never as the plugin's."""
    if isinstance(result, HostNotReady):
        return [Finding(ERROR, where, f"{HOST_PREFIX}{result}")]
    if isinstance(result, str):
        detail = worker_log or ""
        cause = next((line for line in reversed(detail.splitlines()) if line.strip()), "")
        return [Finding(ERROR, where, f"the preflight task could not run there: {result}"
                        + (f"; the worker's log says: {cause.strip()}" if cause else ""), detail)]
    out = []
    for field_name, imp in result.get("imports", {}).items():
        if not imp.get("ok"):
            out.append(Finding(ERROR, where, f"{field_name}: cannot import {imp['ref']} in a Ray worker: {imp['error']}",
                               shorten_paths(imp.get("traceback", ""))))
    if preload_expected and not result.get("preload_ok", True):
        log_lines = (worker_log or "").strip().splitlines()
        out.append(Finding(ERROR, where, "the worker could not preload conformance.cluster.inject_autoinstall, so Ray in "
                           "workers does not know the manager" + (f": {log_lines[-1].strip()}" if log_lines else ""),
                           worker_log or ""))
    if result.get("registered") is False and not out:
        out.append(Finding(ERROR, where, "Ray in the worker does not know the manager (its resource maps to no "
                           "AcceleratorManager there): load it in every worker (`ray-conformance inject install` "
                           "and RAY_CONFORMANCE_ACCELERATORS on every node)", ""))
    if any(f.level == ERROR for f in out):
        return out
    for name, call in result.get("calls", {}).items():
        if not call.get("ok"):
            out.append(Finding(PROBLEM, where, f"{name}() raised in a Ray worker: {call.get('error')}",
                               shorten_paths(call.get("traceback", ""))))
    calls = result.get("calls", {})
    count = _result_value(calls.get("get_current_node_num_accelerators"))
    want = expected.devices_per_node if expected is not None else None
    if ray_count > 0 and want is not None:
        if count is not None and count != want:
            out.append(Finding(PROBLEM, where, f"get_current_node_num_accelerators() = {count!r} but the manifest "
                               f"expects devices_per_node = {want}"))
        if ray_count != want:
            out.append(Finding(PROBLEM, where, f"Ray registered {ray_count:g} devices on the node but the manifest "
                               f"expects devices_per_node = {want}"))
        kind = _result_value(calls.get("get_current_node_accelerator_type"))
        want_type = expected.accelerator_type if expected is not None else None
        if want_type is not None and calls.get("get_current_node_accelerator_type", {}).get("ok") and kind != want_type:
            out.append(Finding(PROBLEM, where, f"get_current_node_accelerator_type() = {kind!r} but the manifest "
                               f"expects accelerator_type = {want_type!r}"))
    return out


def manifest_refs(data: Mapping[str, Any]) -> dict[str, str]:
    """"block.field" -> "pkg.module:Attr": what the preflight imports on every node, read from each
    area's declaration (Area.manifest_block, Area.manifest_refs) in registry order, the accelerator's
    manager first; a field the manifest leaves out is not imported."""
    from conformance.areas import AREAS

    out: dict[str, str] = {}
    for area in AREAS:
        block = data.get(area.manifest_block) or {}
        for name in area.manifest_refs:
            if block.get(name):
                out.setdefault(f"{area.manifest_block}.{name}", str(block[name]))
    return out


def probe_cluster(manifest: Manifest, timeout_s: float, *, preload_expected: bool,
                  machinery: MachineryRecord) -> tuple[list[Finding], int]:
    """Run the probe on every alive node of the connected cluster; judge each node. Its waits on
    Ray's machinery stretch by, and its worker-start measurement goes into, `machinery` (the run's
    record, or a command's own)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from conformance.report.ray_logs import LogCursor, current_logs_dir
    from conformance.run.preflight_probe import preflight_probe

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = {}
    valid = manifest.view.accelerator.quantities.valid
    args = (manifest_refs(manifest.data), manifest.resource_name, float(valid[0] if valid else 1))
    # max_calls=1: the worker exits afterwards, so nothing the plugin's methods did in it
    # (a stray variable, a thread) reaches a later check through a reused worker.
    fn = ray.remote(max_calls=1)(preflight_probe)
    for n in nodes:
        refs[n["NodeID"]] = fn.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            node_id=n["NodeID"], soft=False)).remote(*args)
    results = probe_results(refs, timeout_s, machinery)
    if not any(isinstance(r, HostNotReady) for r in results.values()):
        measure_worker_start(timeout_s, machinery=machinery)
    cursor = LogCursor()
    cursor.remember(current_logs_dir())
    logs = {p.name: t for p, t in cursor.new_text().items() if p.name.startswith("worker-") and p.suffix == ".err"}
    findings = []
    for n in nodes:
        nid = n["NodeID"]
        r = results.get(nid, "no result")
        log = _worker_log_for(logs, r)
        findings += judge_node(f"node {nid[:8]}", r, ray_count=float((n.get("Resources") or {}).get(
            manifest.resource_name, 0)), expected=manifest.view.accelerator.expected,
            preload_expected=preload_expected, worker_log=log)
    if not any(float((n.get("Resources") or {}).get(manifest.resource_name, 0)) > 0 for n in nodes):
        findings.append(Finding(PROBLEM, "cluster", f"no node registered any {manifest.resource_name} device: "
                                "Ray did not pick up the manager's device count"))
    return findings, len(nodes)


def probe_results(refs: dict[str, Any], bound_s: float, machinery: MachineryRecord) -> dict[str, Any]:
    """node id -> its probe's result, an error string, or HostNotReady. The probe is a fresh worker
    on each node, so its wait is a wait on Ray's machinery (conformance.run.machinery): the bound
    stretches by the run's measured worker start, and when it runs out a fresh sample decides.
    The host slower now than the bound assumed: the stretched wait goes on, and what still does not
    come is the host's failure (HostNotReady, "not judged: host"). The host as fast as assumed: the
    probe itself (the plugin's imports and calls in a worker) did not finish: "no result"."""
    from conformance.timing.waits import BoundRanOut, cancel_pending, finished_results

    pending = dict(refs)
    results: dict[str, Any] = {}

    def wait(limit: float) -> None:
        results.update(finished_results(pending, limit))
        if pending:
            raise BoundRanOut(f"no result within {limit:.0f}s")

    try:
        await_machinery(wait, bound_s, f"the preflight task on {len(pending)} node(s)", machinery=machinery,
                        runs_plugin_code=True)
    except BoundRanOut:
        results.update(cancel_pending(pending, f"{NO_RESULT} within {bound_s:.0f}s"))
    except HostNotReady as exc:
        cancel_pending(pending, "")
        results.update({node_id: exc for node_id in refs if node_id not in results})
    return results


def _worker_log_for(logs: dict[str, str], result: dict[str, Any] | str | HostNotReady) -> str | None:
    """The worker's own error from its .err log (the probe's worker by pid, else any worker),
    as an excerpt that ends with the exception line."""
    from conformance.report.ray_logs import excerpt_around, first_error

    if isinstance(result, dict) and result.get("pid"):
        candidates = {k: v for k, v in logs.items() if k.endswith(f"-{result['pid']}.err")}
    else:
        candidates = logs
    found = first_error({Path(k): v for k, v in candidates.items()})
    if found is None:
        return None
    path, _line, index = found
    return shorten_paths(excerpt_around(candidates[path.name], index))


def run_preflight(manifest: Manifest, *, cluster_ready: bool, preload_expected: bool, machinery: MachineryRecord,
                  host: dict[str, Any] | None = None) -> PreflightResult:
    """Host checks, then (with a connected cluster) the per-node probe; `machinery`: the record of
    the run (or the command) it measures Ray's machinery for."""
    from conformance.catalog.data import load_run_knobs

    knobs = load_run_knobs()["preflight"]
    t0 = time.monotonic()
    state = host if host is not None else host_state()
    result = PreflightResult(host={k: v for k, v in state.items() if k != "shm"}
                             | {"shm": {k: v for k, v in state["shm"].items() if k not in ("entries", "detail")}})
    result.findings += host_findings(state, knobs["host"])
    if cluster_ready:
        findings, result.nodes = probe_cluster(manifest, float(knobs["probe_timeout_s"]),
                                               preload_expected=preload_expected, machinery=machinery)
        result.findings += findings
    result.duration_s = time.monotonic() - t0
    return result


# ---------------------------------------------------------------------------------- node start
def probe_node_start(manager: type, env: Mapping[str, str], hangs: HangRecord, *, found_by: str,
                     on_stuck: Callable[[str], None] | None = None,
                     machinery: MachineryRecord | None = None) -> KnownHang | None:
    """Call each method Ray calls at a node start, in this process (the one that starts the nodes)
    with the node's environment, each within the call bound (stretched by the run's `machinery`
    record; None: a command's, vendor_calls.knobs); a hang is recorded in `hangs` and returned.
    What the methods return or raise is not judged here (DP-001 does)."""
    with patched_environ(dict(env)):
        for name in NODE_START_METHODS:
            fn = getattr(manager, name, None)
            if fn is None:
                continue
            try:
                bounded_call(fn, method=name, on_stuck=on_stuck, machinery=machinery)
            except VendorHang as exc:
                hang = KnownHang(name, found_by, exc.bound_s)
                hangs.add(hang)
                return hang
            except Exception:  # noqa: BLE001 - a raising method is DP-001's to judge
                continue
    return None


def node_start_env(manifest: Manifest) -> dict[str, str]:
    """The environment Ray calls the manager in when it starts the manifest's first node."""
    node_env = manifest.view.cluster.node_env
    return {**manifest.accelerator_env, **(node_env[0] if node_env else {})}


def refuse_node_start_hang(manager: type, manifest: Manifest) -> None:
    """A command about to start (or judge) a node: a node-start call that hangs is one line, exit 2,
    within the call bound, instead of a cluster start that never returns."""
    hang = probe_node_start(manager, node_start_env(manifest), HangRecord(), found_by="this command")
    if hang is not None:
        raise VendorHang(str(hang.method), float(hang.bound_s or 0), "manifest: accelerator.manager: ")


def render_lines(result: PreflightResult, *, details: bool = True) -> list[str]:
    """Terminal lines (outside strings sanitised; tracebacks indented, kept multi-line)."""
    label = {ERROR: "ERROR", PROBLEM: "PROBLEM", WARNING: "warning"}
    head = (f"preflight: {'ok' if result.ok else 'FAILED'} in {result.duration_s:.1f}s"
            + (f" ({result.nodes} node(s) probed)" if result.nodes else " (host only)"))
    lines = [head]
    for f in result.findings:
        lines.append(f"  {label[f.level]} {terminal(f.where)}: {terminal(f.message)}")
        if details and f.detail and f.level != WARNING:
            detail = f.detail.strip().splitlines()
            if len(detail) > 22:
                detail = detail[:1] + ["…"] + detail[-20:]
            lines += ["      " + terminal(x) for x in detail]
    return lines


def write_section(result: PreflightResult, out_dir: Path) -> None:
    """The findings' full details beside the report (OUT/logs/preflight.txt)."""
    if not any(f.detail for f in result.findings):
        return
    dest = out_dir / "logs"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "preflight.txt").write_text("\n".join(render_lines(result)) + "\n")
