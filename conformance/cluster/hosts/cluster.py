"""A real multi-host Ray cluster on one machine: `ray start` in network namespaces.

Each host (conformance.cluster.hosts.netns) runs its own raylet with its own IP, started exactly the way
the README tells a vendor to start a node: `ray-conformance inject install` once (the `.pth`
hook in the environment's site-packages), then, in the node's environment,
`RAY_CONFORMANCE_ACCELERATORS=<manager>`, `RAY_custom_unit_instance_resources=<Ray's defaults
+ the resource>`, the manifest's accelerator env and the host's `cluster.node_env` entry, and
`ray start --head` on host 0 / `ray start --address=<head>:6379` on the others, with the
plugin's labels as `--labels`.

Token authentication (on by default in Ray 2.60) is used, as on a production cluster: the harness
writes a token file and every host and every driver gets `RAY_AUTH_MODE=token` and
`RAY_AUTH_TOKEN_PATH=<that file>` (`driver_env()`).

The driver runs inside host 0 (the head's namespace), like a user logged in on the head node:
the bridge has no address in the root namespace, so nothing outside the hosts can reach them.
`run_in(0, argv)` runs a command there.

Hosts are stopped by the PIDs in their namespace (`ip netns pids`), never `ray stop` (which
ends every Ray process on the machine). `HostCluster` is a context manager and also registers
an atexit handler, so namespaces, links, processes, the token and temp dir, and the segments of
the transport the caller names (`segments`: SIMXFER's, conformance.simulated.transport.SEGMENTS)
are removed however the run ends; `leftovers()` says what remains.
"""
from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

# The roles the node-recovery checks select on, as labels (and the per-host name a simulated plugin reads).
from conformance.cluster.faults import NODE_KEY as ROLE_KEY
from conformance.cluster.faults import NODE_NAME_ENV, POOL_KEY, ROLES
from conformance.cluster.hosts import netns
from conformance.cluster.injection import DEVICE_ENV_VAR, ENV_VAR, PTH_NAME, unit_instance_resources
from conformance.cluster.manager import RAY_STARTUP_TIMEOUT

PORT = 6379
# Health checks of the head's GCS: a host that stops answering is declared dead after about
# period * threshold + timeout (~4 s) instead of Ray's default ~15 s (kill) / ~60 s (partition).
HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000,
                "health_check_timeout_ms": 1000, "health_check_failure_threshold": 3}
# Environment a Ray process inherits that must not leak into a host or driver of this cluster.
SCRUB_ENV = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_TMPDIR",
             "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")


class HostClusterError(RuntimeError):
    """A host could not be started or the cluster did not come up."""


class SegmentKeeper(Protocol):
    """A transport's /dev/shm segments as a cluster that ends must know them. The caller passes the
    plugin's (SIMXFER's: conformance.simulated.transport.SEGMENTS): the cluster knows no plugin."""

    def creator(self, entry: str) -> int | None:
        """The pid of the process that made this /dev/shm entry, alive or gone (None: not this
        transport's segment)."""
        ...

    def reap_orphans(self) -> object:
        """Remove the segments whose creating process is gone."""
        ...


def bin_path(name: str) -> str:
    """A console script of this environment (ray, ray-conformance)."""
    return str(Path(sys.executable).with_name(name))


def role(index: int) -> str:
    return ROLES[index] if index < len(ROLES) else f"h{index}"


@dataclass
class Host:
    net: netns.HostNet
    role: str
    env: dict[str, str]
    labels: dict[str, str]
    starts: int = 0


@dataclass
class HostCluster:
    """`hosts` namespaces running one Ray cluster for a manifest (context manager)."""

    manifest_path: Path
    hosts: int = 3
    num_cpus: int = 1
    object_store_mb: int = 100
    health_check: dict[str, int] = field(default_factory=lambda: dict(HEALTH_CHECK))
    extra_env: dict[str, str] = field(default_factory=dict)
    dashboard: bool = False
    start_timeout_s: float = 90.0
    segments: SegmentKeeper | None = None     # the transport's segments, reaped at stop (SegmentKeeper)
    members: list[Host] = field(default_factory=list, init=False)
    workdir: Path | None = field(default=None, init=False)
    net: netns.Network | None = field(default=None, init=False)
    _installed_pth: bool = field(default=False, init=False)
    _shm_before: set[str] = field(default_factory=set, init=False)
    _tag: str | None = field(default=None, init=False)
    _workdirs: list[Path] = field(default_factory=list, init=False)
    _pids: set[int] = field(default_factory=set, init=False)   # every process the hosts ran (_processes)

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> "HostCluster":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        why = netns.available()
        if why:
            raise HostClusterError(why)
        if not 1 <= self.num_cpus <= 2:
            raise ValueError(f"num_cpus: expected 1 or 2 per host on this machine, got {self.num_cpus}")
        netns.sweep_stale()
        self._shm_before = set(_shm_entries())
        atexit.register(self.stop)
        try:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"{netns.PREFIX}{os.getpid()}-"))
            self._workdirs.append(self.workdir)
            self.token_path.write_text(secrets.token_hex(32))
            self.token_path.chmod(0o600)
            self._inject_install()
            self.net = netns.plan(self.hosts)
            self._tag = self.net.tag
            netns.create(self.net)
            self.members = [self._host(h) for h in self.net.hosts]
            for i in range(len(self.members)):
                self.start_host(i)
            self.wait_alive(len(self.members), self.start_timeout_s)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Kill every host's processes, remove the network, the token, the temp dir, the hook."""
        try:
            self._pids = self._processes()   # before the processes are gone
        except Exception:  # noqa: BLE001 - `ip netns pids` timed out: the logs below still name them
            pass
        if self.net is not None:
            net, self.net = self.net, None
            netns.destroy(net)
        if self._installed_pth:
            self._installed_pth = False
            subprocess.run([bin_path("ray-conformance"), "inject", "uninstall"], capture_output=True, timeout=60)
        if self.workdir is not None:
            from conformance.cluster.process_owners import session_pids

            self._pids |= session_pids(str(self.workdir))   # also those born during the kill
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        if self.segments is not None:
            self.segments.reap_orphans()
        atexit.unregister(self.stop)

    def leftovers(self) -> dict[str, list[str]]:
        """What this instance left behind (all empty after stop())."""
        found = netns.ours(os.getpid(), self._tag) if self._tag else {"namespaces": [], "links": []}
        found["workdirs"] = [str(p) for p in self._workdirs if p.exists()]
        found["shm"] = self._new_shm()
        found["processes"] = [f"{h.net.namespace}:{p}" for h in self.members for p in netns.pids(h.net.namespace)]
        return found

    def _new_shm(self) -> list[str]:
        """The /dev/shm entries that appeared since start() and are not someone else's: a folder
        holding only someone else's entries is theirs too (a teeth run beside the cluster stages
        into /dev/shm/rc-teeth-staging/), an empty one is counted."""
        new = set(_shm_entries()) - self._shm_before
        inside = self._inside() if new else set()
        ours = self._processes(inside) if new else set()
        files = {e for e in new if not e.endswith("/") and not self._someone_elses(e, inside, ours)}
        below = {f: [e for e in new if e != f and e.startswith(f)] for f in new if f.endswith("/")}
        folders = {f for f, entries in below.items() if not entries or any(e in files for e in entries)}
        return sorted(files | folders)

    def _someone_elses(self, entry: str, inside: set[int], ours: set[int]) -> bool:
        """A new /dev/shm entry that is not this cluster's: a SIMXFER segment whose creator is alive
        outside the cluster's namespaces, or gone without ever having been one of the cluster's
        processes (another suite run on this machine, its segment not yet reaped by its own run:
        make test saw a teeth run's source, killed by its check, counted against the hosts beside
        it). An entry whose creator its name does not say is counted. `inside`: the processes in the
        hosts' namespaces now; `ours`: every process the hosts ran (_processes), both read once a look."""
        pid = self.segments.creator(os.path.basename(entry.rstrip("/"))) if self.segments is not None else None
        if pid is None or pid in inside:
            return False
        # alive outside the hosts: another run's, even where its pid once was one of ours (pid_max wraps)
        return netns.alive(pid) or pid not in ours

    def _inside(self) -> set[int]:
        """The processes in the hosts' namespaces now."""
        return {p for h in self.members if self.net is not None for p in netns.pids(h.net.namespace)}

    def _processes(self, now: set[int] | None = None) -> set[int]:
        """Every process the hosts ran: those in their namespaces (`now`, else read), and every
        worker and driver Ray logged in the cluster's sessions (also those that exited), plus those
        stop() recorded."""
        from conformance.cluster.process_owners import session_pids

        now = self._inside() if now is None else now
        logged = session_pids(str(self.workdir)) if self.workdir is not None else set()
        return self._pids | now | logged

    # ------------------------------------------------------------------ addresses and environments
    @property
    def token_path(self) -> Path:
        assert self.workdir is not None, "the cluster is not started"
        return self.workdir / "auth_token"

    @property
    def address(self) -> str:
        return f"{self.members[0].net.address}:{PORT}"

    def auth_env(self) -> dict[str, str]:
        """What every node and driver of this cluster needs for Ray 2.60's token authentication."""
        assert self.workdir is not None
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_path),
                "RAY_TMPDIR": str(self.workdir)}

    def driver_env(self, **extra: str) -> dict[str, str]:
        """Environment for a driver (ray-conformance run --ray-address ...) inside a host."""
        return {**scrubbed_environ(), **self.auth_env(), **extra}

    def _host(self, h: netns.HostNet) -> Host:
        from conformance.catalog.manifest import load_manifest, resolve_manager
        from conformance.cluster.manager import patched_environ, plugin_node_labels

        manifest = load_manifest(self.manifest_path)
        node_env = manifest.view.cluster.node_env
        env = {**(node_env[h.index] if h.index < len(node_env) else {}), NODE_NAME_ENV: role(h.index)}
        pythonpath = [p for p in manifest.python_path]
        host_env = {ENV_VAR: manifest.view.accelerator.manager,
                    "RAY_custom_unit_instance_resources": unit_instance_resources(manifest.resource_name),
                    **manifest.accelerator_env, **env, **self.extra_env}
        if manifest.torch_device:
            host_env[DEVICE_ENV_VAR] = manifest.torch_device
        if pythonpath:
            host_env["PYTHONPATH"] = os.pathsep.join(pythonpath)
        # The plugin's own labels, computed with the host's environment (what a vendor passes
        # to `ray start --labels`), plus the roles the node-recovery checks select on.
        with patched_environ(host_env):
            labels = plugin_node_labels(resolve_manager(manifest))
        labels[ROLE_KEY] = role(h.index)
        if role(h.index) in ROLES[1:]:   # the pool is b and c (docs/recovery.md): a fifth host is no pool node
            labels[POOL_KEY] = "x"
        return Host(h, role(h.index), host_env, labels)

    def host_env(self, index: int) -> dict[str, str]:
        return {**scrubbed_environ(), **self.auth_env(), **self.members[index].env}

    # ------------------------------------------------------------------ running things in hosts
    def run_in(self, index: int, argv: Sequence[str], env: dict[str, str] | None = None,
               timeout_s: float = 600, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command inside host `index` (the driver's place is host 0)."""
        ns = self.members[index].net.namespace
        return subprocess.run(["ip", "netns", "exec", ns, *argv], env=env or self.driver_env(), cwd=cwd,
                              capture_output=True, text=True, timeout=timeout_s)

    def start_argv(self, index: int) -> list[str]:
        """The host's `ray start` command line (the same for its first start and every restart)."""
        h = self.members[index]
        args = [bin_path("ray"), "start", f"--node-ip-address={h.net.address}", f"--num-cpus={self.num_cpus}",
                f"--object-store-memory={self.object_store_mb * 1024 * 1024}", "--disable-usage-stats",
                # no log monitor: it streams workers' output to drivers that ask for it, and the
                # suite's drivers connect with log_to_driver=False and read Ray's log files;
                # on every host it re-scans the log folder ten times a second (3.5 s of CPU a host)
                "--include-log-monitor=false",
                "--labels=" + ",".join(f"{k}={v}" for k, v in sorted(h.labels.items()))]
        if index == 0:
            args += ["--head", f"--port={PORT}", f"--system-config={json.dumps(self.health_check)}",
                     f"--include-dashboard={'true' if self.dashboard else 'false'}"]
            if self.dashboard:
                args += ["--dashboard-host=0.0.0.0"]
        else:
            args += [f"--address={self.address}"]
        return args

    def start_host(self, index: int) -> None:
        """`ray start` on the host (again, after a kill: a restarted host joins as a new node)."""
        h = self.members[index]
        start_in_namespace(h.net.namespace, self.start_argv(index), self.host_env(index), h.role, h.net.address)
        h.starts += 1

    def kill_host(self, index: int) -> int:
        """A host crash: SIGKILL every process in its namespace (raylet, object store, workers)."""
        return netns.kill_namespace(self.members[index].net.namespace)

    def partition(self, index: int) -> None:
        """Cut the host off the network: its link goes down (processes keep running)."""
        netns.set_link(self.members[index].net, up=False)

    def heal(self, index: int) -> None:
        netns.set_link(self.members[index].net, up=True)

    def index_of(self, ip_address: str) -> int:
        for i, h in enumerate(self.members):
            if h.net.address == ip_address:
                return i
        raise KeyError(f"no host has address {ip_address}")

    # ------------------------------------------------------------------ the cluster view
    def nodes(self, timeout_s: float = 60) -> list[dict[str, Any]]:
        """ray.nodes() as seen by a driver inside the head host."""
        proc = self.run_in(0, [sys.executable, "-m", "conformance.cluster.hosts", "nodes", "--address", self.address],
                           timeout_s=timeout_s)
        if proc.returncode != 0:
            raise HostClusterError(f"listing nodes failed: {proc.stderr.strip().splitlines()[-1:]}")
        nodes: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
        return nodes

    def wait_alive(self, count: int, timeout_s: float) -> list[dict[str, Any]]:
        proc = self.run_in(0, [sys.executable, "-m", "conformance.cluster.hosts", "nodes", "--address", self.address,
                               "--wait-alive", str(count), "--timeout", str(timeout_s)], timeout_s=timeout_s + 60)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
            raise HostClusterError(f"{count} hosts not alive within {timeout_s:g}s: {' | '.join(tail)}")
        nodes: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
        return nodes

    def state(self) -> dict[str, Any]:
        """What a fault driver in another process needs (conformance.cluster.hosts.faults reads it)."""
        return {"owner_pid": os.getpid(), "address": self.address, "num_cpus": self.num_cpus,
                "hosts": [{"index": h.net.index, "role": h.role, "namespace": h.net.namespace, "veth": h.net.veth,
                           "address": h.net.address, "start_argv": self.start_argv(h.net.index),
                           "env": {**self.auth_env(), **h.env}} for h in self.members]}

    def write_state(self, path: Path) -> Path:
        path.write_text(json.dumps(self.state(), indent=2))
        return path

    # ------------------------------------------------------------------ injection
    def _inject_install(self) -> None:
        """`ray-conformance inject install`, as the README tells a vendor (undone at stop)."""
        status = subprocess.run([bin_path("ray-conformance"), "inject", "status"], capture_output=True, text=True,
                                timeout=60)
        if PTH_NAME in status.stdout and "not installed" not in status.stdout:
            return
        proc = subprocess.run([bin_path("ray-conformance"), "inject", "install"], capture_output=True, text=True,
                              timeout=60)
        if proc.returncode != 0:
            raise HostClusterError(f"ray-conformance inject install failed: {proc.stderr.strip()}")
        self._installed_pth = True


def start_in_namespace(namespace: str, argv: Sequence[str], env: dict[str, str], role_name: str,
                       address: str, *, run: Callable[..., Any] = subprocess.run,
                       end_namespace: Callable[[str], Any] = lambda ns: netns.kill_namespace(ns, grace_s=2.0)) -> None:
    """Run `ray start ...` inside a host; one-line HostClusterError with Ray's last words on failure.

    Started once more when Ray's own wait for the node to register (30 s, fixed in Ray's node.py)
    ran out, after ending what the first try left in the namespace: on a loaded machine that wait
    is the host's, not the plugin's (the suite's own cluster starts retry it the same way,
    conformance.cluster.manager.ClusterManager._start). Seen in make test: FR-017's healed host
    failed to rejoin on its first `ray start`."""
    for attempt in (1, 2):
        proc = run(["ip", "netns", "exec", namespace, *argv], env=env, capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            return
        output = proc.stderr or proc.stdout
        if attempt == 1 and RAY_STARTUP_TIMEOUT in output:
            end_namespace(namespace)
            continue
        tail = output.strip().splitlines()[-3:]
        raise HostClusterError(f"ray start on host {role_name} ({address}) failed: {' | '.join(tail)}")


def scrubbed_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SCRUB_ENV}


def _shm_entries(shm_dir: str = "/dev/shm") -> list[str]:
    """Every entry below /dev/shm however deep, as the run's own audit walks it
    (process_owners.shm_entries: paths below it, a folder's ending with "/"), so a transport that
    stages into its own folder there is seen too."""
    from conformance.cluster.process_owners import shm_entries

    return [e.name for e in shm_entries(shm_dir)]

