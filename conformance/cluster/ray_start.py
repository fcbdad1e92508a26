"""How the suite starts Ray's processes: Ray's own start path, with what a certification never
reads turned off (the dashboard's API server, the full dashboard agents), the user's "current
cluster" file left alone, and no implicit `ray.init()` in the driver. Each is a context manager or
a call around Ray's start, so the raylet and its workers start exactly as Ray starts them.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

# Ray prestarts num_cpus idle workers on the head when the first driver connects
# (`prestart_worker_first_driver`, true by default), for tasks that may never come. What a check
# starts is mostly actors with their own options, and a preflight probe and a worker-start sample
# that must each be a fresh process (max_calls=1), so on the suite's clusters those workers were
# born to be killed idle: about two a cluster start, half a CPU-second each (docs/test-time.md).
# Off in the system config of every cluster the suite starts; a vendor's cluster keeps its own.
NO_PRESTART: dict[str, Any] = {"prestart_worker_first_driver": False}


@contextmanager
def head_without_api_server() -> Iterator[None]:
    """Start a head without the dashboard's API server process.

    With the web UI off, Ray still starts dashboard.py as an "API server" loading one module
    (usage-stats reporting) and waits for it to publish its address: about a second of CPU and of
    each cluster start, for a process nothing in a certification talks to (the suite reads Ray's
    state from the GCS, ray.nodes() and the log files). The head records an empty web UI address,
    as Ray does when the dashboard is off, so drivers and later nodes read the same "no UI"."""
    from ray._private import ray_constants
    from ray._private.node import Node

    start = Node.start_api_server

    def no_api_server(node: Node, *_args: Any, **_kwargs: Any) -> None:  # Node.start_api_server's arguments, unused
        node._webui_url = ""
        node.get_gcs_client().internal_kv_put(b"webui:url", b"", True, ray_constants.KV_NAMESPACE_DASHBOARD)

    Node.start_api_server = no_api_server  # type: ignore[method-assign,assignment]  # Ray's hints: pyproject.toml
    try:
        yield
    finally:
        Node.start_api_server = start  # type: ignore[method-assign]  # Ray's hints: pyproject.toml


@contextmanager
def minimal_dashboard_agents() -> Iterator[None]:
    """Start the nodes' dashboard agents as Ray starts them where its dashboard's optional
    dependencies are missing (`--minimal`, Ray's minimal install).

    A full agent loads the reporter, event and job modules: it samples the node's metrics every
    few seconds and serves an HTTP port: about 0.4 s of CPU per node over half a minute, more the
    longer the node lives (a 2-node cluster started, idle 30 s and stopped, in its own cgroup,
    three pairs in turn on an idle machine: 7.6/7.7/7.9 s full against 6.7/6.9/7.3 s). The
    suite reads none of it: no web UI or API server runs (`head_without_api_server`), and what a
    check reads of the dashboard's GPU metrics it imports in a worker (the workload area's
    library findings). Ray still starts the agent, so the raylet's start path is Ray's own."""
    import ray._private.utils as ray_utils

    probe = ray_utils.get_dashboard_dependency_error
    ray_utils.get_dashboard_dependency_error = lambda: ImportError(
        "ray-conformance: nodes start their dashboard agents --minimal")
    try:
        yield
    finally:
        ray_utils.get_dashboard_dependency_error = probe


@contextmanager
def users_ray_address_kept() -> Iterator[None]:
    """Leave Ray's "current cluster" file (/tmp/ray/ray_current_cluster) as the user had it.

    cluster_utils' head writes its own address there (a unit-test convenience for
    `ray.init("auto")`), logging on stderr that it replaced the previous one, and its shutdown
    deletes the file. On a vendor's machine that file names their own cluster. Nothing the suite
    runs connects through it (its drivers are given the address), so neither call runs."""
    import ray._common.utils as common_utils
    import ray._private.utils as private_utils

    write, reset = private_utils.write_ray_address, common_utils.reset_ray_address
    private_utils.write_ray_address = common_utils.reset_ray_address = lambda *_args, **_kwargs: None  # type: ignore[assignment]  # Ray's hints: pyproject.toml
    try:
        yield
    finally:
        private_utils.write_ray_address, common_utils.reset_ray_address = write, reset


def without_implicit_ray_init() -> None:
    """Turn Ray's auto-init off in this process: a Ray call made while no driver is connected
    raises instead of starting a new local cluster.

    The suite always connects with an address, so an implicit `ray.init()` is never what a run
    wants, and in Ray 2.60 it can deadlock the run's end: RDT sets an object's transport metadata
    on the core worker's IO thread, and a transfer queued for that object is started there with an
    actor call. Arriving during `ray.shutdown()` (after it disconnected, before it stopped the IO
    thread), that call auto-inits: it starts a local cluster and then waits for the lock
    `ray.shutdown()` holds, while `ray.shutdown()` waits for the IO thread. Ray reads
    RAY_ENABLE_AUTO_CONNECT once, at import, hence the module flag (tests/ray/test_queued_transfer_shutdown.py).
    """
    import ray._private.auto_init_hook as auto_init

    auto_init.enable_auto_connect = False


def sigterm_interrupts() -> None:
    """SIGTERM (a CI job cancelled, `kill PID`) ends the run like Ctrl-C: pytest unwinds, the
    session finishes, and the report is written marked interrupted with the unrun checks named.

    Installed when the run starts and again after every `ray.init` of the suite's driver
    (connect_driver): ray.init replaces the process's SIGTERM handler with `sys.exit(signum)`, and
    a SystemExit raised inside a check was recorded as that check's failure and re-run (a cancelled
    2-node certification: FR-012 "SystemExit: 1" then flaky, the run not marked interrupted)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, _interrupt)


def connect_driver(address: str, log_level: str) -> None:
    """Connect this process to the cluster at `address` as the suite's driver, keeping the suite's
    SIGTERM handler (sigterm_interrupts)."""
    import ray

    ray.init(address=address, log_to_driver=False, logging_level=log_level)  # type: ignore[arg-type]  # Ray's hints: pyproject.toml
    sigterm_interrupts()
