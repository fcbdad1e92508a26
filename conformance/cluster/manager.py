"""Starting and sharing live Ray clusters for the checks.

One cluster per *shape*: checks that do not disturb the cluster share the manifest's own shape
("shared"); checks that kill nodes or change system config ask for their own. Starting is
expensive (~5 s a node here), so a shape is started once and reused until a check needs another.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Sequence

from conformance.catalog.manifest import Manifest, resolve_manager
from conformance.catalog.vendor_calls import HangRecord, KnownHang
from conformance.cluster.injection import (
    AUTOINSTALL_MODULE,
    DEVICE_ENV_VAR,
    ENV_VAR,
    install_managers,
    unit_instance_resources,
)
from conformance.cluster.ray_start import (
    NO_PRESTART,
    connect_driver,
    head_without_api_server,
    minimal_dashboard_agents,
    users_ray_address_kept,
    without_implicit_ray_init,
)
from conformance.timing.clock import CLUSTER_STOP_S
from conformance.timing.timeouts import CheckTimeout
from conformance.timing.waits import StillRunning, call_on_thread

# Variables that change the semantics the checks assert; the suite clears them in nodes it starts.
SEMANTICS_ENV_VARS = ("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO",)


Env = Mapping[str, str]


def _frozen(d: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """An immutable copy (compares equal to a dict with the same items)."""
    return MappingProxyType({str(k): v for k, v in (d or {}).items()})


def _frozen_list(entries: Sequence[Mapping[str, object]] | None) -> tuple[Env, ...] | None:
    return None if entries is None else tuple(_frozen({k: str(v) for k, v in e.items()}) for e in entries)


@dataclass(frozen=True)
class ClusterShape:
    """What a group of checks needs from the cluster: frozen, so that two shapes whose
    parameters are equal are the same cluster (conformance.cluster.shapes decides reuse on `params`).

    A field left None means "the manifest's"; conformance.cluster.shapes.complete fills it in.
    """

    name: str = "shared"
    nodes: int | None = None                     # None: the manifest's cluster.nodes
    system_config: Mapping[str, Any] = field(default_factory=dict)
    node_env: Sequence[Env] | None = None         # None: the manifest's cluster.node_env; frozen to a tuple
    node_labels: Sequence[Env] | None = None      # extra labels per node (merged over the plugin's); a tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "system_config", _frozen(self.system_config))
        object.__setattr__(self, "node_env", _frozen_list(self.node_env))
        object.__setattr__(self, "node_labels", _frozen_list(self.node_labels))

    def env(self, index: int) -> dict[str, str]:
        """The environment node `index` starts with (beyond the suite's own)."""
        return dict(self.node_env[index]) if self.node_env and index < len(self.node_env) else {}

    def labels(self, index: int) -> dict[str, str]:
        """The shape's own labels of node `index` (the plugin's come on top of nothing else)."""
        return dict(self.node_labels[index]) if self.node_labels and index < len(self.node_labels) else {}

    @property
    def params(self) -> tuple[Any, ...]:
        """Everything that makes a cluster of this shape what it is (not its name)."""
        return (self.nodes, dict(self.system_config), self.node_env, self.node_labels)


SHARED = ClusterShape(name="shared")   # the manifest's own cluster, shared by checks that do not disturb it


def complete(shape: ClusterShape, manifest: Manifest) -> ClusterShape:
    """The shape with every "the manifest's" (None) field filled in: a concrete shape, so that
    shapes that start the same cluster compare equal however they were written."""
    c = manifest.view.cluster
    nodes = shape.nodes or int(c.nodes)
    base = shape.node_env if shape.node_env is not None else c.node_env
    env = [dict(base[i]) if i < len(base) else {} for i in range(nodes)]
    labels = None if not any(shape.labels(i) for i in range(nodes)) else [shape.labels(i) for i in range(nodes)]
    return replace(shape, nodes=nodes, node_env=env, node_labels=labels)


def same_cluster(a: ClusterShape, b: ClusterShape) -> bool:
    """Whether a cluster started for `a` is one of shape `b` (concrete shapes; names aside)."""
    return a.params == b.params


def manifests_own(shape: ClusterShape, manifest: Manifest) -> bool:
    """Whether `shape` starts the manifest's own nodes as they are (the shared cluster's parameters,
    whatever its name: recovery-devices is one): a cluster the run's description of its nodes
    (environment.devices) may be read from, so a run that never names the shared shape (a
    recovery-only run) records the same node list a full run does."""
    return same_cluster(complete(shape, manifest), complete(SHARED, manifest))


@dataclass
class ClusterHandle:
    shape: ClusterShape
    mode: str                   # local | simulated | remote
    address: str | None
    nodes: int
    cluster: Any = None         # ray.cluster_utils.Cluster for simulated
    started_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    node_handles: list[Any] = field(default_factory=list)


class ClusterStartError(Exception):
    """The cluster could not be started; every check that needs it errors with this reason."""


# Ray's node.py raises this when a raylet has not registered with the GCS within its fixed 30 s.
RAY_STARTUP_TIMEOUT = "The current node timed out during startup"


def ray_startup_timed_out(exc: BaseException) -> bool:
    """Whether a cluster start failed in Ray's own wait for the node to register (a loaded host),
    rather than in anything the plugin did."""
    return RAY_STARTUP_TIMEOUT in str(exc)


def start_hung(exc: BaseException) -> bool:
    """Whether a cluster start ran into its hard timeout (also when Ray's compiled code re-raised
    it as another error). Only a hang condemns later shapes at once
    (the run's `HangRecord`, conformance.catalog.vendor_calls): waiting it out again costs minutes per shape, while a
    start that raises fails fast by itself and may be the shape's own (a node without the device,
    a preset visible-devices variable), and Ray's own registration wait or an interrupt says
    nothing about the plugin."""
    from conformance.timing.waits import carried_timeout
    return carried_timeout(exc) is not None


def start_failure_reason(shape: ClusterShape, exc: BaseException) -> str:
    """One line: which shape failed to start and Ray's (or the plugin's) first line of why."""
    return f"cluster {shape.name!r} failed to start: {exc.__class__.__name__}: {exc}".splitlines()[0]


def _shutdown_after_failed_start() -> None:
    import ray
    try:
        ray.shutdown()
    except CheckTimeout:
        raise           # the start's hard timeout struck meanwhile: the caller must see it
    except Exception:  # noqa: BLE001 - best effort after a failed start
        pass


def prepare_driver(manifest: Manifest) -> type:
    """Make this process and every node/worker it starts see the vendor manager."""
    for p in reversed(manifest.python_path):
        if p not in sys.path:
            sys.path.insert(0, p)
    pp = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(manifest.python_path + [p for p in pp if p not in manifest.python_path])
    os.environ.update(manifest.accelerator_env)
    for var in SEMANTICS_ENV_VARS:
        os.environ.pop(var, None)
    os.environ[ENV_VAR] = manifest.view.accelerator.manager
    manager = resolve_manager(manifest)
    install_managers([manager])
    if manifest.torch_device:
        os.environ[DEVICE_ENV_VAR] = manifest.torch_device
        setup_torch_device(manifest)
    else:
        os.environ.pop(DEVICE_ENV_VAR, None)
    return manager


def setup_torch_device(manifest: Manifest) -> None:
    """Call accelerator.torch_device in the driver: a device that cannot be registered stops the
    run here with one line naming the field (workers would only log it)."""
    from conformance.catalog.manifest import import_object
    from conformance.errors import UserError

    ref = manifest.torch_device
    if ref is None:
        return
    setup = import_object(ref, field="accelerator.torch_device", python_path=manifest.python_path)
    try:
        setup()
    except Exception as exc:  # noqa: BLE001 - the vendor's error, as one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UserError(f"manifest: accelerator.torch_device: {ref} failed: {type(exc).__name__}: {first}") from None


@contextmanager
def patched_environ(extra: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def plugin_node_labels(manager: type | None) -> dict[str, str]:
    """The plugin's own node labels, computed in the node-starting process with the node's env.

    Ray 2.60 applies get_current_node_accelerator_labels() only for TPU, so the suite applies
    the plugin's labels itself to the nodes it starts (and says so in the report).
    """
    fn = getattr(manager, "get_current_node_accelerator_labels", None) if manager else None
    if fn is None:
        return {}
    labels = fn() or {}
    return {str(k): str(v) for k, v in labels.items()}


def shape_node_labels(shape: ClusterShape, index: int, manager: type | None) -> dict[str, str]:
    """Labels of node `index` of a shape: the plugin's, then the shape's own (call with the node's env)."""
    return {**plugin_node_labels(manager), **shape.labels(index)}


def detection_args(manifest: Manifest) -> dict[str, Any]:
    """add_node arguments that let Ray auto-detect the accelerator on a simulated node.

    ray.cluster_utils.Cluster.add_node defaults to num_gpus=0, which hides a GPU-named
    accelerator from every node it starts; None lets the manager count the devices.
    """
    return {"num_gpus": None} if manifest.resource_name == "GPU" else {}


LABELS_NOTE = ("Ray 2.60 applies get_current_node_accelerator_labels() only for TPU; the suite applied the "
               "plugin's labels to the nodes it started")


def _system_config(manifest: Manifest, shape: ClusterShape) -> dict[str, Any]:
    cfg = {"custom_unit_instance_resources": unit_instance_resources(manifest.resource_name),
           "preload_python_modules": [AUTOINSTALL_MODULE], **NO_PRESTART}
    cfg.update(shape.system_config)
    return cfg


# Ray's driver-side logger level: its INFO/WARNING lines at a start ("Started a local Ray
# instance", "Token authentication is enabled ...") would reach a vendor's terminal on every
# topology/preflight/bench run; what a run needs from Ray it reads from Ray's log files and APIs.
DRIVER_LOG_LEVEL = "ERROR"


# The head of a cluster the suite starts runs none of Ray's observers the run never reads: the
# dashboard's web UI and its API server (`head_without_api_server`), the autoscaler's monitor (no autoscaler:
# the suite adds and removes nodes itself) and the log monitor (it tails every worker's log to
# publish lines to drivers that asked for them, and drivers here connect with log_to_driver=False;
# the report reads Ray's log files directly).
# Each costs about a second of CPU to start, the log monitor re-scans the log folder ten times a
# second, and a certification starts dozens of clusters. Nothing a check is about runs in them.
HEAD_WITHOUT_OBSERVERS: dict[str, Any] = {"include_dashboard": False, "no_monitor": True,
                                          "include_log_monitor": False}


def start_cluster(manifest: Manifest, shape: ClusterShape, ray_address: str | None = None,
                  manager: type | None = None) -> ClusterHandle:
    """Start (or connect to) a cluster of the given shape and connect this driver to it."""
    import ray

    without_implicit_ray_init()
    t0 = time.monotonic()
    if ray_address:
        connect_driver(ray_address, DRIVER_LOG_LEVEL)
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        return ClusterHandle(shape, "remote", ray_address, nodes, started_s=time.monotonic() - t0,
                             notes=["remote cluster: the vendor's nodes must load the manager themselves "
                                    "(ray-conformance inject install, RAY_CONFORMANCE_ACCELERATORS)"])
    c = manifest.view.cluster
    n = shape.nodes or c.nodes
    node_env = shape.node_env if shape.node_env is not None else c.node_env
    mem = c.object_store_memory_mb * 1024 * 1024
    cpus = c.num_cpus_per_node
    syscfg = _system_config(manifest, shape)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=False)
    handles = []
    any_labels = False
    try:
        for i in range(n):
            args: dict[str, Any] = {"num_cpus": cpus, "object_store_memory": mem, **detection_args(manifest)}
            if i == 0:
                args["_system_config"] = syscfg
                args.update(HEAD_WITHOUT_OBSERVERS)
            with patched_environ(node_env[i] if i < len(node_env) else {}), users_ray_address_kept(), \
                    minimal_dashboard_agents(), (head_without_api_server() if i == 0 else nullcontext()):
                labels = shape_node_labels(shape, i, manager)
                any_labels = any_labels or bool(labels)
                if labels:
                    args["labels"] = labels
                handles.append(cluster.add_node(**args))
        connect_driver(cluster.address, DRIVER_LOG_LEVEL)
        cluster.wait_for_nodes()
    except BaseException:  # noqa: BLE001 - re-raised in the finally below, after the shutdown
        try:
            with users_ray_address_kept():
                cluster.shutdown()
        finally:
            raise
    # one node is "local" (the driver's host, as ray.init would start it), more are "simulated";
    # both start through cluster_utils, so a one-node head runs without the observers too
    return ClusterHandle(shape, "local" if n == 1 else "simulated", cluster.address, n, cluster=cluster,
                         started_s=time.monotonic() - t0, node_handles=handles,
                         notes=[LABELS_NOTE] if any_labels else [])


class ClusterStopHung(Exception):
    """ray.shutdown() did not return within its bound: it holds Ray's connect lock for good, so no
    cluster can start in this process again and its exit would wait on it (Ray's atexit shutdown)."""


def stop_cluster(handle: ClusterHandle | None, bound_s: float | None = None) -> None:
    """Disconnect the driver and stop the cluster it started, within `bound_s` (default CLUSTER_STOP_S).

    A Ray bug or a vendor's code on Ray's IO thread can deadlock ray.shutdown(), and at the run's
    end that would leave it without a report; so it runs on its own thread. When it hangs, the
    cluster's processes are ended by pid and ClusterStopHung says where it is stuck."""
    import ray

    drop_queued_rdt_operations()
    try:
        call_on_thread(ray.shutdown, CLUSTER_STOP_S if bound_s is None else bound_s, "ray.shutdown()")
    except StillRunning as exc:
        if handle is not None:
            for node in handle.node_handles:
                node.kill_all_processes(check_alive=False, allow_graceful=False)
        raise ClusterStopHung(str(exc)) from None
    forget_rdt_state()
    if handle is not None and handle.cluster is not None:
        with users_ray_address_kept():
            handle.cluster.shutdown()


def drop_queued_rdt_operations() -> None:
    """Before ray.shutdown(): forget the RDT transfers and frees still waiting for their source.

    Ray 2.60 starts such a transfer (an actor call) on the core worker's IO thread when the
    source's metadata arrives, and restarts RDT's failure monitor for it, also while
    `ray.shutdown()` runs: after shutdown has stopped the monitor, the new monitor's `ray.wait`
    fails once the driver is disconnected, and freeing the object refs that failure holds, after
    the core worker is gone, ends the process with exit 1 ("The core worker has already been
    shutdown"): a run whose checks left a transfer queued lost its report. The cluster is going
    away, so those operations have no one left to serve (tests/ray/test_queued_transfer_shutdown.py).
    """
    worker = sys.modules.get("ray._private.worker")
    manager = getattr(getattr(worker, "global_worker", None), "_rdt_manager", None)
    if manager is None:
        return
    with manager._lock:
        manager._queued_transfers.clear()
        manager._queued_frees.clear()


def forget_rdt_state() -> None:
    """Drop the driver's RDT bookkeeping after ray.shutdown() (Ray 2.60 keeps it).

    Transfers queued for RDT's failure monitor survive the shutdown; in the next session the new
    monitor thread dies on their stale refs ("owner is unknown"), and from then on no transfer in
    this process is aborted or killed after a failure or timeout. Ray builds a fresh manager on
    first use (registered transports are kept: they live in ray.experimental.rdt.util).
    """
    worker = sys.modules.get("ray._private.worker")
    if worker is not None and getattr(worker.global_worker, "_rdt_manager", None) is not None:
        worker.global_worker._rdt_manager = None


class ClusterManager:
    """Holds at most one live cluster; switches shape on demand; remembers start failures."""

    def __init__(self, manifest: Manifest, ray_address: str | None = None, manager: type | None = None,
                 hangs: HangRecord | None = None) -> None:
        self.manifest = manifest
        self.manager = manager
        self.ray_address = ray_address
        self.current: ClusterHandle | None = None
        self.failures: dict[str, str] = {}
        self.history: list[dict[str, Any]] = []
        self.last_mode: str | None = None
        self.last_nodes: int = 0
        self.notes: list[str] = []
        # The run's record of vendor calls known to hang: once a node-start call hangs (found by the
        # preflight or a probe) or an earlier shape's start hung, later shapes fail at once with it.
        self.hangs = hangs if hangs is not None else HangRecord()
        # Set when ray.shutdown() hung (ClusterStopHung): no cluster can start in this process again.
        self.stop_hung: str | None = None

    def ensure(self, shape: ClusterShape, fresh: bool = False) -> ClusterHandle:
        """The live cluster of `shape`: the current one when its parameters are the shape's
        (whatever name started it), else a new one. `fresh`: shut down and start again even then."""
        shape = complete(shape, self.manifest)
        if shape.name in self.failures:
            raise ClusterStartError(self.failures[shape.name])
        if self.stop_hung is not None:
            raise ClusterStartError(f"cluster {shape.name!r} not started: stopping the previous cluster hung "
                                    f"({self.stop_hung}), and Ray cannot connect again in this process")
        known = None if self.ray_address else self.hangs.blocks_node_start()
        if known is not None:
            reason = f"cluster {shape.name!r} not started: {known.reason()}"
            self.failures[shape.name] = reason
            self.history.append({"shape": shape.name, "ok": False, "reason": reason})
            raise ClusterStartError(reason)
        if not fresh and self.current is not None and same_cluster(self.current.shape, shape):
            self._reused(shape)
            return self.current
        self.shutdown()
        if self.ray_address and shape.name != SHARED.name:
            # A guard, not a decision: shapes.for_run (the one place) already turned every other
            # shape into the vendor's cluster or a not-applicable reason.
            raise ClusterStartError(f"internal error: cluster shape {shape.name!r} reached the cluster manager "
                                    "on a --ray-address cluster (conformance.cluster.shapes.for_run decides what runs there)")
        try:
            self.current = self._start(shape)
        except Exception as exc:    # an interrupt (KeyboardInterrupt, SystemExit) ends the run instead
            reason = start_failure_reason(shape, exc)
            self.failures[shape.name] = reason[:500]
            self.history.append({"shape": shape.name, "ok": False, "reason": reason[:500]})
            if start_hung(exc) and not self._retried(shape):
                self.hangs.add(KnownHang(None, repr(shape.name), detail=reason[:400]))
            raise ClusterStartError(reason) from exc
        self.history.append({"shape": shape.name, "ok": True, "mode": self.current.mode,
                             "nodes": self.current.nodes, "start_s": round(self.current.started_s, 2)})
        self._note_shared(shape)
        return self.current

    def _start(self, shape: ClusterShape) -> ClusterHandle:
        """Start the shape's cluster; once more when Ray's own node registration wait ran out.

        That wait (30 s, fixed in Ray's node.py) runs out on a loaded machine with any plugin: it
        is the host's, not the plugin's, so one failure of it does not condemn the plugin (and,
        through the hang record, every later shape). The failed attempt stays in the history.
        """
        for attempt in (1, 2):
            try:
                return start_cluster(self.manifest, shape, self.ray_address, self.manager)
            except BaseException as exc:
                _shutdown_after_failed_start()
                if attempt == 2 or not ray_startup_timed_out(exc):
                    raise
                reason = start_failure_reason(shape, exc)
                self.history.append({"shape": shape.name, "ok": False, "reason": reason[:500], "retried": True})
                self.notes.append(f"cluster {shape.name!r}: Ray's node registration wait ran out once; "
                                  "started again")
        raise AssertionError("unreachable")

    def _retried(self, shape: ClusterShape) -> bool:
        """Whether this shape's start was already retried after Ray's registration wait: a hang
        on the retry is then as likely the loaded host's as the plugin's."""
        return any(h.get("retried") and h["shape"] == shape.name for h in self.history)

    def _reused(self, shape: ClusterShape) -> None:
        """Record that another shape name ran on the current cluster (its start is not repeated)."""
        assert self.current is not None
        entry = next((h for h in reversed(self.history) if h.get("ok")), None)
        if entry is not None and shape.name != entry["shape"] and shape.name not in entry.get("also", []):
            entry.setdefault("also", []).append(shape.name)
        self._note_shared(shape)

    def _note_shared(self, shape: ClusterShape) -> None:
        """The report's cluster mode and node count are those of the manifest's own cluster: the
        first of its nodes as they are, whichever shape named it (a recovery-only run's
        recovery-devices; the tier's node count and verify's recomputed one then agree)."""
        if manifests_own(shape, self.manifest) and self.last_mode is None and self.current is not None:
            self.last_mode, self.last_nodes = self.current.mode, self.current.nodes
            self.notes.extend(self.current.notes)

    def shutdown(self) -> None:
        if self.current is not None:
            handle, self.current = self.current, None
            t0 = time.monotonic()
            entry = next((h for h in reversed(self.history) if h.get("ok")), None)
            try:
                stop_cluster(handle)
            except ClusterStopHung as exc:
                self.stop_hung = str(exc)
                self.notes.append(f"cluster {handle.shape.name!r}: stopping it hung: {exc}")
                if entry is not None:
                    entry["stop_hung"] = str(exc)[:500]
                raise
            if entry is not None:
                entry["stop_s"] = round(time.monotonic() - t0, 2)
