"""The same wave through the suite's reference transport: whose stall a wave's stall is.

TR-019 sends a wave of concurrent transfers through the plugin's transport and judges that every
one arrives within its bound. When the wave runs out with transfers pending, the stall is either
the plugin's (a transport that wedges: leaked credits, a receive that never returns) or the
host's (busy loops above the suite's priority starve Ray's own threads: make test-load). A
worker-start sample cannot tell them apart (it measures how fast Ray starts a process, not what
running actors get), nor can the kernel's accounting of the actors' waiting (a Ray worker's own
threads queue for a CPU on a loaded host whatever the plugin does; docs/ci.md).

What can is a reference that does the same work: the same number of transfers of the same size,
between as many *fresh* actors of the same kind on the same node, through Ray's RDT machinery,
with the suite's own one-sided transport (SIMXFER, conformance.simulated.transport: host memory,
one node) in place of the plugin's, given the bound the plugin's wave was given. Only the
transport differs: both run one procedure (conformance.areas.transport.wave), and the plugin's
wave's actors are stopped before the reference's start. If the reference does not finish within that bound either, or needs more than half of it (the
same work by the plugin's wave takes as long, give or take a third, on a host that loaded), the
host (Ray's machinery on it) ran out: "not judged: host", with both waves' measurements. If it
finishes with room to spare, the plugin's wave had what it needed and the stall is the plugin's
finding, the reference's time beside it. Transfers of the reference that Ray itself gave up on within the bound (its RDT fetch timeout:
make test-load saw "not found in RDT object store after 60.0s" on the suite's transport) did not
finish either. A reference that cannot run at all (its registration refused, no shared memory on
this host) or whose transport fails otherwise decides nothing: the stall stays the plugin's, as it
was before the reference existed, and the reason says so.
"""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

from conformance.areas.transport.wave import concurrent_transfers
from conformance.exc_text import first_line
from conformance.timing.clock import CONTROL_CALL_S

NAME = "CONFORMANCE_REFERENCE"   # the reference transport's name in Ray's registry (SIMXFER's class)
SEED = 7000                      # the reference's payload seeds start here (the plugin's wave's at 1000)
REASON_CHARS = 200               # knob: a reference error quoted in the reason
# knob: the room a host must leave: the reference must finish within 1/HEADROOM of the bound for
# a stall of the plugin's to be the plugin's (quiet, it takes 4.3 s of TR-019's 60 s)
HEADROOM = 2.0
_lock = threading.Lock()
_registered: list[str | None] = []   # this process's registration: [None] done, [error] failed


@dataclass(frozen=True)
class ReferenceWave:
    """What the reference did: its transfers, actors and bound, how long it took, how many of
    its transfers were still pending at the bound (0: it finished), or why it could not run."""

    transport: str
    transfers: int
    actors: int
    bound_s: float
    took_s: float | None = None
    pending: int | None = None
    timed_out: int | None = None   # transfers Ray itself gave up on (its RDT fetch timeout) within the bound
    first_timeout: str | None = None
    stall: str | None = None       # where its pending transfers stood (conformance.rdt.stalls), when it left some
    error: str | None = None

    @property
    def ran_out(self) -> bool:
        """The host had no room for the same work within the same bound: the reference left
        transfers pending, had Ray's own machinery give up on some (under a CPU hog: "not found in
        RDT object store after 60.0s") on the suite's correct transport, or needed more than
        1/HEADROOM of the bound to finish them (a wave of the same work takes the plugin's as long,
        give or take a third, under one hog: 137-181 s against the reference's 175 s of 181 s;
        a starved driver's ray.wait also returns late: 175 s of a 155 s bound)."""
        tight = self.took_s is not None and self.took_s > self.bound_s / HEADROOM
        return self.error is None and bool(self.pending or self.timed_out or tight)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def whose_stall(reference: ReferenceWave) -> str:
    """'host' when the reference ran out of the same bound too; else 'plugin' (it finished, or it
    could not run and decides nothing)."""
    return "host" if reference.ran_out else "plugin"


def describe(reference: ReferenceWave) -> str:
    """The reference's part of the check's reason."""
    if reference.error is not None:
        return f"the suite's reference transport could not run here to compare ({reference.error})"
    if reference.ran_out:
        gave_up = (f", {reference.timed_out} given up by Ray: {reference.first_timeout}" if reference.timed_out else "")
        if reference.pending or reference.timed_out:
            return (f"the same wave through the suite's reference transport ({reference.transfers} transfers between "
                    f"{reference.actors} fresh actors) did not finish within the same {reference.bound_s:g}s either "
                    f"(after {reference.took_s:.1f}s: {reference.pending} pending{gave_up}"
                    f"{'; ' + reference.stall if reference.stall else ''})")
        return (f"the same wave through the suite's reference transport ({reference.transfers} transfers between "
                f"{reference.actors} fresh actors) needed {reference.took_s:.1f}s of the same {reference.bound_s:g}s, "
                f"more than 1/{HEADROOM:g} of it: the host leaves no room to tell a stall from its load")
    return (f"the same wave through the suite's reference transport ({reference.transfers} transfers between "
            f"{reference.actors} fresh actors) finished in {reference.took_s:.1f}s of the same {reference.bound_s:g}s")


def _register() -> None:
    """SIMXFER's class under NAME in this process's registry (once: Ray has no unregister), before
    the reference's actors exist, so they carry it."""
    with _lock:
        if _registered:
            if _registered[0] is not None:
                raise RuntimeError(_registered[0])
            return
        try:
            import torch
            from ray.experimental.rdt import register_tensor_transport, util

            from conformance.simulated.transport import SimXferTransport

            util._ensure_default_transports_registered()
            if NAME not in util.transport_manager_info:
                register_tensor_transport(NAME, ["cpu"], SimXferTransport, torch.Tensor)
            _registered.append(None)
        except Exception as exc:  # noqa: BLE001 - the reason the reference cannot run
            _registered.append(f"registering it failed: {first_line(exc)}"[:REASON_CHARS])
            raise RuntimeError(_registered[0]) from None


def run(start: Callable[[int], list[Any]], n: int, n_actors: int, nbytes: int, bound_s: float) -> ReferenceWave:
    """The plugin's wave again (conformance.areas.transport.wave: n transfers of nbytes from half
    of n_actors fresh actors to the other half, produced first, then all received at once), on
    host memory through the reference transport, within `bound_s`. `start(k)` starts k fresh
    actors of the wave's kind as the check starts its own (Ray's time, on the check's budget, left
    out of the scenario)."""
    import ray

    from conformance.rdt.payloads import build, describe, same_bytes, seeded
    from conformance.timing.clock import Clock, ScenarioFailed

    base = ReferenceWave(transport=NAME, transfers=n, actors=n_actors, bound_s=round(bound_s, 1))
    try:
        _register()
    except RuntimeError as exc:
        return replace(base, error=str(exc))
    actors = start(n_actors)
    # its own clock: the reference's bound is the wave's, and a step of it that fails names it
    clock = Clock("TR-019", "reference-wave", bound_s + CONTROL_CALL_S)
    try:
        ran = concurrent_transfers(clock, actors, NAME, n, nbytes, bound_s, lambda _waited: 0.0, SEED)
    except ScenarioFailed as exc:   # a producer or a receive refused at submission
        return replace(base, error=first_line(exc)[:REASON_CHARS])
    if ran.stall is not None:
        return replace(base, took_s=ran.took_s, pending=ran.stall.pending,
                       stall=ran.stall.describe()[:REASON_CHARS])
    timeouts: list[str] = []
    for out, seed in zip(ran.outs, ran.seeds):
        try:
            got = ray.get(out, timeout=CONTROL_CALL_S)
        except TimeoutError as exc:   # Ray's RDT fetch timeout (a RayTaskError of it is one too)
            timeouts.append(first_line(exc)[:REASON_CHARS])
            continue
        except Exception as exc:  # noqa: BLE001 - the suite's transport failing otherwise decides nothing
            return replace(base, error=f"a reference transfer raised {first_line(exc)}"[:REASON_CHARS])
        if not same_bytes(describe(build(seeded(nbytes, seed))), got):
            return replace(base, error=f"a reference transfer delivered other bytes (seed {seed})")
    return replace(base, took_s=ran.took_s, pending=0, timed_out=len(timeouts),
                   first_timeout=timeouts[0] if timeouts else None)
