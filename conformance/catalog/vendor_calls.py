"""Every call into vendor code is bounded, and a hang is found once per run.

A vendor's driver may wedge: a manager method, an import or a transport call that never returns.
Such a call is one line naming the method and its bound (`VendorHang`, exit 2 in a command),
never a stuck command. In a run, the first hang is kept in the run's `HangRecord`; every later
probe and cluster start that would make the same call consults it and fails at once with that
reason, instead of waiting out its own bound on the same hang (a plugin whose device count hangs
would otherwise cost a cluster start timeout plus each probe's).

The bounds are data (tiers/run.yaml `vendor_calls`). In-process calls are bounded by the suite's
hard timeout (conformance.timeouts: SIGALRM, main thread only), with its watchdog as the
backstop for a call that cannot be interrupted; probe processes are bounded by their parent
(conformance.contract.run_contract_probe).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from conformance.errors import UserError
from conformance.timing.host_load import MachineryRecord
from conformance.timing.timeouts import CheckTimeout, hard_timeout

# The manager methods Ray calls in the process that starts a node: one that hangs there hangs
# every node start, so no cluster of this plugin can come up.
NODE_START_METHODS = ("get_resource_name", "get_visible_accelerator_ids_env_var", "get_current_node_num_accelerators",
                      "get_current_node_accelerator_type", "get_current_node_additional_resources",
                      "get_current_node_accelerator_labels")
IMPORT = "import "   # the "method" of a module import: every probe and start imports the plugin


CALL_BOUND_ENV = "RAY_CONFORMANCE_CALL_BOUND_S"


def knobs(machinery: MachineryRecord | None = None) -> dict[str, float]:
    """tiers/run.yaml `vendor_calls`: call_bound_s, stuck_grace_s, probe_timeout_s.

    call_bound_s and probe_timeout_s are stretched by the host's run queue per CPU and what the
    run's `machinery` record measured of imports (conformance.timing.host_load.import_factor: an
    `import torch` took 20.6 s on a loaded 2-core host, past a fixed 20 s; None: no run's record at
    hand, the run queue alone); RAY_CONFORMANCE_CALL_BOUND_S, when set, is the call bound itself."""
    from conformance.catalog.data import load_run_knobs
    from conformance.timing.host_load import import_factor

    k = {key: float(v) for key, v in load_run_knobs()["vendor_calls"].items()}
    factor = import_factor(machinery)
    k["call_bound_s"] *= factor
    k["probe_timeout_s"] = max(k["probe_timeout_s"] * factor, k["call_bound_s"])
    override = os.environ.get(CALL_BOUND_ENV)
    if override is not None:
        try:
            bound = float(override)
        except ValueError:
            bound = -1.0
        if not bound > 0:
            raise UserError(f"{CALL_BOUND_ENV}: expected a number of seconds above 0, got {override[:40]!r}")
        k["call_bound_s"] = bound
        k["probe_timeout_s"] = max(k["probe_timeout_s"], bound)
    return k


class VendorHang(UserError):
    """A call into vendor code did not return within its bound (one line; exit 2 in a command)."""

    def __init__(self, method: str, bound_s: float, where: str = "") -> None:
        self.method = method
        self.bound_s = bound_s
        super().__init__(f"{where}{hang_text(method, bound_s)}")


def hang_text(method: str, bound_s: float) -> str:
    call = method if method.startswith(IMPORT) else f"{method}()"
    return f"{call} did not return within {bound_s:.0f}s (a hang)"


@dataclass(frozen=True)
class KnownHang:
    method: str | None      # None: a cluster start hung, in a call not known
    found_by: str           # "the preflight", "DP-001's contract probe", "cluster 'shared'"
    bound_s: float | None = None
    detail: str = ""

    def reason(self) -> str:
        if self.method is None:
            return f"an earlier cluster ({self.found_by}) hung while starting: {self.detail}"
        return f"the plugin's {hang_text(self.method, self.bound_s or 0)}, found by {self.found_by}"


class HangRecord:
    """The run's one record of vendor calls known to hang, consulted before every probe and start."""

    def __init__(self) -> None:
        self.hangs: list[KnownHang] = []

    def add(self, hang: KnownHang) -> None:
        if all(h.method != hang.method for h in self.hangs):
            self.hangs.append(hang)

    def blocking(self, methods: Iterable[str]) -> KnownHang | None:
        """The known hang a call of any of `methods` would run into (an import hang blocks all)."""
        wanted = set(methods)
        return next((h for h in self.hangs if h.method is not None
                     and (h.method.startswith(IMPORT) or h.method in wanted)), None)

    def blocks_node_start(self) -> KnownHang | None:
        """A hang that keeps any node of this plugin from starting (a start that hung, or a call
        Ray makes at every node start)."""
        return next((h for h in self.hangs if h.method is None), None) or self.blocking(NODE_START_METHODS)


def _stuck_exit(message: str) -> None:
    """A command's backstop: the call could not even be interrupted. One line, exit 2, now
    (a normal exit would wait for the hung thread forever)."""
    from conformance.sanitize import terminal
    sys.stderr.write(f"ray-conformance: error: {terminal(message)}\n")
    sys.stderr.flush()
    os._exit(int(UserError.exit_code))


def bounded_call(fn: Callable[..., Any], *args: Any, method: str, bound_s: float | None = None,
                 where: str = "", on_stuck: Callable[[str], None] | None = None,
                 grace_s: float | None = None, machinery: MachineryRecord | None = None) -> Any:
    """`fn(*args)` within the call bound (`knobs(machinery)`: stretched as the run whose record it is
    stretches it); a hang raises VendorHang naming `method`. `on_stuck` (default: a command's
    one-line exit 2) runs when the call ignores the interrupt `grace_s`."""
    import signal

    k = knobs(machinery) if bound_s is None or grace_s is None else {}
    bound = float(bound_s if bound_s is not None else k["call_bound_s"])
    grace = float(grace_s if grace_s is not None else k["stuck_grace_s"])
    if on_stuck is None and signal.getitimer(signal.ITIMER_REAL)[0] <= 0:
        # No enclosing hard timeout (a command, not a check): its backstop is this call's. Inside a
        # check the enclosing timeout's watchdog writes the report instead.
        on_stuck = lambda _msg: _stuck_exit(where + hang_text(method, bound))  # noqa: E731
    try:
        with hard_timeout(bound, f"{where}{method}", grace_s=grace, on_stuck=on_stuck):
            return fn(*args)
    except CheckTimeout as exc:
        if f"{where}{method}:" not in str(exc):
            raise               # an enclosing timeout ran out: it is that one's to report
        raise VendorHang(method, bound, where) from None
