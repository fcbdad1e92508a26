"""Fault injection around the vendor's transport: the tracing wrapper's twin that can fail on cue.

The transfer-recovery checks (FR-012..016) and the transport-usage checks (TR-015..020) transfer
with it.

A vendor transport cannot be told to fail on cue, so the suite registers, next to the vendor's
own registration, a second name (`<NAME>_RECOVERY`) whose class wraps the vendor's manager:
it is the tracing wrapper (conformance.rdt.tracing: every call recorded, per process) plus *armed
faults*. A check arms a fault in one actor process (`arm`, called through the actor); the next
receive in that process then

* `raise_after` – runs the vendor's receive, then raises InjectedReceiveError (a receive that
                  failed after touching the data: the source's copy must survive it);
* `delay`       – waits `seconds` before the vendor's receive (a transfer that is in flight
                  while the check kills its source);
* `hang`        – blocks until Ray aborts the transfer (abort_transport for this object) or
                  `seconds` pass (a transfer that runs past Ray's RDT fetch timeout);
* `exit_during` – starts the vendor's receive and ends the process `seconds` later, whether
                  or not the receive returned (a receiver that dies mid-transfer, TR-015).

Everything else is the vendor's code: abort_transport is recorded and delegated (after
releasing an injected wait), so the checks see exactly which aborts Ray issued and whether the
vendor's transport still works afterwards. The class reaches workers by value, like the tracing
wrapper (`tracing.traced_class(..., base=FaultInjectingTransport)`; conformance.rdt.registration
registers it).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

from ray.experimental.rdt.tensor_transport_manager import CommunicatorMetadata, TensorTransportMetadata

from conformance.rdt.tracing import TracedTransport

SUFFIX = "_RECOVERY"
_lock = threading.Lock()
_plans: list[dict[str, Any]] = []                 # armed faults of this process, next first
_aborts: dict[str, threading.Event] = {}          # obj_id -> set when Ray aborted its transfer


class InjectedReceiveError(RuntimeError):
    """The error the suite injects into a receive (the caller must see this text)."""


def arm(kind: str, **params: Any) -> None:
    """Arm one fault for the next receive in this process."""
    if kind not in ("raise_after", "delay", "hang", "exit_during"):
        raise ValueError(f"unknown fault {kind!r}")
    with _lock:
        _plans.append({"kind": kind, **params})


def disarm() -> int:
    with _lock:
        n = len(_plans)
        _plans.clear()
    return n


def _next_plan() -> dict[str, Any] | None:
    with _lock:
        return _plans.pop(0) if _plans else None


def _abort_event(obj_id: str) -> threading.Event:
    with _lock:
        return _aborts.setdefault(obj_id, threading.Event())


class FaultInjectingTransport(TracedTransport):
    """The tracing wrapper plus armed faults on the receive path. Registered by conformance.rdt.registration."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata, communicator_metadata: CommunicatorMetadata,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        plan = _next_plan()
        if plan is None:
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)
        kind, t0 = plan["kind"], time.monotonic()
        self._record(f"fault:{kind}", obj_id, t0, None, phase="start", wall=time.time())
        if kind == "raise_after":
            super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
            error = InjectedReceiveError(f"InjectedReceiveError: the suite failed the receive of {obj_id} "
                                         "after the transport returned")
            self._record(f"fault:{kind}", obj_id, t0, error, phase="raised")
            raise error
        if kind == "exit_during":
            threading.Timer(float(plan.get("seconds", 0.0)), os._exit, args=(1,)).start()
            super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
            time.sleep(3600)   # the timer ends the process; the receive's result is never delivered
        aborted = _abort_event(obj_id).wait(float(plan.get("seconds", 0.0)))
        self._record(f"fault:{kind}", obj_id, t0, None, phase="released", aborted=aborted)
        if aborted:
            raise RuntimeError(f"transfer of {obj_id} aborted by Ray while the suite held the receive")
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                             target_buffers)

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        _abort_event(obj_id).set()
        return super().abort_transport(obj_id, communicator_metadata)
