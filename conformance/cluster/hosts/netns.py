"""Hosts as Linux network namespaces on one machine: a bridge, one veth per host, nothing else.

Each host is a network namespace with its own loopback and one interface `eth0`, the namespace
end of a veth pair whose other end is enslaved to a bridge in the root namespace. Addresses come
from 198.51.100.0/24 (TEST-NET-2, a documentation range) and exist only inside the namespaces
created here: the bridge itself has no address, no namespace has a default route, there is no
NAT, so nothing a host sends can leave the bridge.

Every name carries the creating process's pid and a per-process instance letter
(`rcns<pid><x>h<i>`, `rcns<pid><x>br`, `rcns<pid><x>v<i>`), so several instances never collide and `sweep_stale()` can remove what a killed run left behind
(its pid is gone). Needs root and iproute2 (`ip`).
"""
from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Iterable

PREFIX = "rcns"
SUBNET = "198.51.100"          # /24; host i gets .(i + 2)
PREFIX_LEN = 24
_NAME_RE = re.compile(rf"^{PREFIX}(\d+)([a-z])(?:h\d+|br|v\d+)$")
_instances = itertools.count()


class HostNetworkError(RuntimeError):
    """An `ip` command failed (no root, no iproute2, a name already taken)."""


def ip(*args: str, check: bool = True) -> str:
    """Run `ip ARGS`; return stdout. Raise HostNetworkError with ip's own message on failure."""
    try:
        proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise HostNetworkError("iproute2's `ip` is not installed") from None
    if check and proc.returncode != 0:
        raise HostNetworkError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def available() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    try:
        ip("netns", "list")
    except HostNetworkError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class HostNet:
    """One host's network identity."""

    index: int
    namespace: str
    veth: str          # root-namespace end of the host's link (the namespace end is eth0)
    address: str


@dataclass
class Network:
    """The bridge and the hosts of one instance."""

    owner_pid: int
    tag: str
    hosts: list[HostNet]

    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.owner_pid}{self.tag}br"


def plan(hosts: int, owner_pid: int | None = None) -> Network:
    """Names and addresses for `hosts` hosts (nothing is created yet)."""
    if not 1 <= hosts <= 99:
        raise ValueError(f"hosts: expected 1..99, got {hosts}")
    pid = os.getpid() if owner_pid is None else owner_pid
    tag = "abcdefghijklmnopqrstuvwxyz"[next(_instances) % 26]
    base = f"{PREFIX}{pid}{tag}"
    return Network(pid, tag, [HostNet(i, f"{base}h{i}", f"{base}v{i}", f"{SUBNET}.{i + 2}") for i in range(hosts)])


def create(net: Network) -> None:
    """Create the bridge and every host; on any failure remove what was made and re-raise."""
    try:
        ip("link", "add", net.bridge, "type", "bridge")
        ip("link", "set", net.bridge, "up")
        for h in net.hosts:
            ip("netns", "add", h.namespace)
            ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.namespace)
            ip("link", "set", h.veth, "master", net.bridge)
            ip("link", "set", h.veth, "up")
            ip("netns", "exec", h.namespace, "ip", "addr", "add", f"{h.address}/{PREFIX_LEN}", "dev", "eth0")
            ip("netns", "exec", h.namespace, "ip", "link", "set", "eth0", "up")
            ip("netns", "exec", h.namespace, "ip", "link", "set", "lo", "up")
    except BaseException:
        destroy(net)
        raise


def set_link(host: HostNet, up: bool) -> None:
    """Take the host's link down (a partition: it can reach nobody, nobody reaches it) or up."""
    ip("netns", "exec", host.namespace, "ip", "link", "set", "eth0", "up" if up else "down")


def pids(namespace: str) -> list[int]:
    """Processes living in the namespace (`ip netns pids`); [] when it does not exist."""
    out = ip("netns", "pids", namespace, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def kill_namespace(namespace: str, grace_s: float = 0.0) -> int:
    """End every process in the namespace: SIGTERM and wait up to `grace_s`, then SIGKILL.

    Only processes inside this namespace are touched (never `ray stop`). Each signalled process,
    also one born while the kill went on, is waited for until it has exited (what it held is
    released): up to 10 s of killing, then up to 10 s more for the exits. Returns how many were
    signalled.
    """
    victims = set(pids(namespace))
    if grace_s > 0:
        _signal_all(victims, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and pids(namespace):
            time.sleep(0.2)
    deadline = time.monotonic() + 10
    while True:
        left = pids(namespace)
        victims.update(left)   # born since the first look (a fork during the kill): waited for too
        if not left or time.monotonic() > deadline:
            break
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_exited(p) for p in victims):
        time.sleep(0.05)   # out of the namespace, still exiting: what it held is not yet released
    return len(victims)


def alive(pid: int) -> bool:
    """The process runs (neither gone nor a zombie)."""
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Gone, or a zombie (its memory and files released; only its parent's wait is left)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def _signal_all(targets: Iterable[int], sig: int) -> None:
    for pid in targets:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def destroy(net: Network) -> None:
    """Kill every process in each host, delete the namespaces, the veths and the bridge."""
    for h in net.hosts:
        kill_namespace(h.namespace)
        ip("netns", "del", h.namespace, check=False)
        ip("link", "del", h.veth, check=False)
    ip("link", "del", net.bridge, check=False)


def ours(owner_pid: int | None = None, tag: str | None = None) -> dict[str, list[str]]:
    """Namespaces and links named by this harness (of one owner and instance, or of any)."""
    found: dict[str, list[str]] = {"namespaces": [], "links": []}
    for line in ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME_RE.match(name)
        if m and (owner_pid is None or int(m.group(1)) == owner_pid) and tag in (None, m.group(2)):
            found["namespaces"].append(name)
    for line in ip("-o", "link", "show", check=False).splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            m = _NAME_RE.match(name)
            if m and (owner_pid is None or int(m.group(1)) == owner_pid) and tag in (None, m.group(2)):
                found["links"].append(name)
    return found


def sweep_stale() -> list[str]:
    """Remove namespaces and links left by harness instances whose process is gone (or a zombie:
    it ended, and only its parent's wait is left)."""
    removed = []
    found = ours()
    for name in found["namespaces"]:
        m = _NAME_RE.match(name)
        if m and not alive(int(m.group(1))):
            kill_namespace(name)
            ip("netns", "del", name, check=False)
            removed.append(name)
    for name in found["links"]:
        m = _NAME_RE.match(name)
        if m and not alive(int(m.group(1))):
            ip("link", "del", name, check=False)
            removed.append(name)
    return removed
