"""An instrumenting wrapper around the vendor's TensorTransportManager.

The lifecycle checks need to know which method Ray called, in which process, for which object,
and whether it raised: e.g. "garbage_collect ran once per freed object, on the source". The
vendor's own bookkeeping cannot be trusted for that, so the suite registers a *subclass of this
wrapper* under the transport's name instead of the vendor's class. It delegates every call to
one instance of the vendor's class and appends a record to a per-process list; the checks read
those lists from each actor (`Endpoint.transport_calls`) and from the driver.

How the wrapper reaches workers: Ray ships the registered class to each actor (pickled with
cloudpickle) when the actor is created. `traced_class()` builds a small subclass at run time
whose only content is two strings (the vendor class reference and the transport name); it is
not a module attribute, so cloudpickle sends it *by value*, while this module (its base) and
the vendor's module are imported by reference in the worker. No environment variable or file
has to reach the workers.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from typing import Any, Callable, ClassVar, Deque, Iterable

from ray.actor import ActorHandle
from ray.experimental.rdt.tensor_transport_manager import (
    CommunicatorMetadata,
    FetchRequest,
    TensorTransportManager,
    TensorTransportMetadata,
)

from conformance.imports import import_ref

MAX_RECORDS = 20000  # knob: buffer cap of the call records
_lock = threading.Lock()
_records: dict[str, Deque[dict[str, Any]]] = {}
# Calls in progress: id -> (transport, method, obj_id, start wall time). A record is appended only
# when a call returns or raises, so a call that never returns is seen here (`in_flight`).
_in_flight: dict[int, tuple[str, str, str | None, float]] = {}
_call_ids = iter(range(1, 1 << 62))



def class_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def record(transport: str, entry: dict[str, Any]) -> None:
    with _lock:
        _records.setdefault(transport, deque(maxlen=MAX_RECORDS)).append(entry)


def calls(transport: str, obj_ids: list[str] | None = None, clear: bool = False) -> list[dict[str, Any]]:
    """This process's records for a transport (optionally only those for some objects)."""
    with _lock:
        recs = list(_records.get(transport, ()))
        if clear:
            _records.pop(transport, None)
    if obj_ids is not None:
        wanted = set(obj_ids)
        recs = [r for r in recs if r.get("obj") in wanted]
    return recs


def in_flight(transport: str, obj_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """This process's calls of a transport that have started and not yet returned."""
    now = time.time()
    with _lock:
        calls_now = [c for c in _in_flight.values() if c[0] == transport]
    wanted = None if obj_ids is None else set(obj_ids)
    return [{"m": m, "obj": obj, "running_s": round(now - t, 3)} for _, m, obj, t in calls_now
            if wanted is None or obj in wanted]


def _tensor_summary(tensors: Iterable[object] | None) -> list[list[Any]]:
    out = []
    for t in tensors or []:
        shape = getattr(t, "shape", None)
        out.append([list(shape) if shape is not None else None, str(getattr(t, "dtype", type(t).__name__)),
                    getattr(getattr(t, "device", None), "type", None)])
    return out


def _meta_summary(meta: object) -> dict[str, Any]:
    tm = getattr(meta, "tensor_meta", None) or []
    return {"tensor_meta": [[list(s) if s is not None else None, str(d)] for s, d in tm],
            "tensor_device": getattr(meta, "tensor_device", None), "type": type(meta).__name__}


class TracedTransport(TensorTransportManager):
    """Delegates to INNER_REF's class and records every call. Use `traced_class()`."""

    INNER_REF: ClassVar[str] = ""
    TRANSPORT_NAME: ClassVar[str] = ""
    BACKEND_NAME: ClassVar[str] = ""     # the name the inner class is known by (built-ins: GLOO)

    @classmethod
    def inner_class(cls) -> Any:
        return import_ref(cls.INNER_REF)

    def __init__(self) -> None:
        self._inner = self.inner_class()()
        self._record("__init__", None, time.monotonic(), None)

    def __getattr__(self, name: str) -> Any:
        # Vendor-specific extras (e.g. memory registration helpers) stay reachable.
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    # -------------------------------------------------------------- recording
    def _record(self, method: str, obj_id: str | None, t0: float, error: BaseException | None,
                **extra: Any) -> None:
        entry = {"m": method, "obj": obj_id, "pid": os.getpid(), "thread": threading.current_thread().name,
                 "tid": threading.get_ident(),   # Ray's own threads all read "Dummy-N": the ident tells them apart
                 "t": time.time(), "dur_s": time.monotonic() - t0, "ok": error is None,
                 "err": None if error is None else f"{type(error).__name__}: {error}"[:300]}
        entry.update(extra)
        record(self.TRANSPORT_NAME, entry)

    def _call(self, method: str, obj_id: str | None, fn: Callable[..., Any], *args: Any,
              summarize: Callable[[Any], Any] | None = None,
              **extra: Any) -> Any:
        t0 = time.monotonic()
        with _lock:
            call_id = next(_call_ids)
            _in_flight[call_id] = (self.TRANSPORT_NAME, method, obj_id, time.time())
        try:
            result = fn(*args)
        except BaseException as exc:
            self._record(method, obj_id, t0, exc, **extra)
            raise
        finally:
            with _lock:
                _in_flight.pop(call_id, None)
        more = summarize(result) if summarize else {}
        self._record(method, obj_id, t0, None, **extra, **more)
        return result

    # -------------------------------------------------------------- the interface
    def tensor_transport_backend(self) -> str:
        backend: str = self._inner.tensor_transport_backend()
        return backend

    @classmethod
    def is_one_sided(cls) -> bool:
        return bool(cls.inner_class().is_one_sided())

    @classmethod
    def can_abort_transport(cls) -> bool:
        return bool(cls.inner_class().can_abort_transport())

    def actor_has_tensor_transport(self, actor: ActorHandle[Any]) -> bool:
        actor_id = getattr(getattr(actor, "_actor_id", None), "hex", lambda: None)()
        has: bool = self._call("actor_has_tensor_transport", None, self._inner.actor_has_tensor_transport, actor,
                               actor=actor_id,
                               summarize=lambda r: {"result": repr(r)[:80], "result_type": type(r).__name__})
        return has

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: list[Any]) -> Any:
        return self._call("extract_tensor_transport_metadata", obj_id,
                          self._inner.extract_tensor_transport_metadata, obj_id, rdt_object,
                          tensors=_tensor_summary(rdt_object), summarize=lambda r: {"meta": _meta_summary(r)})

    def get_communicator_metadata(self, src_actor: ActorHandle[Any], dst_actor: ActorHandle[Any], backend: str | None = None) -> Any:
        return self._call("get_communicator_metadata", None, self._inner.get_communicator_metadata,
                          src_actor, dst_actor, self.BACKEND_NAME or backend,
                          src=src_actor is not None, dst=dst_actor is not None)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata, communicator_metadata: CommunicatorMetadata,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        tensors: list[Any] = self._call("recv_multiple_tensors", obj_id, self._inner.recv_multiple_tensors, obj_id,
                                        tensor_transport_metadata, communicator_metadata, target_buffers,
                                        summarize=lambda r: {"tensors": _tensor_summary(r)})
        return tensors

    def fetch_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata, communicator_metadata: CommunicatorMetadata,
                               target_buffers: list[Any] | None = None) -> Any:
        return self._call("fetch_multiple_tensors", obj_id, self._inner.fetch_multiple_tensors, obj_id,
                          tensor_transport_metadata, communicator_metadata, target_buffers)

    def wait_fetch_complete(self, fetch_request: FetchRequest, timeout: float = -1) -> list[Any]:
        tensors: list[Any] = self._call("wait_fetch_complete", getattr(fetch_request, "obj_id", None),
                                        self._inner.wait_fetch_complete, fetch_request, timeout,
                                        summarize=lambda r: {"tensors": _tensor_summary(r)})
        return tensors

    def send_multiple_tensors(self, tensors: list[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        # Ray does not pass the object id here; the checks match sends by tensor shapes.
        self._call("send_multiple_tensors", None, self._inner.send_multiple_tensors, tensors,
                   tensor_transport_metadata, communicator_metadata, tensors_sent=_tensor_summary(tensors))

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata, tensors: list[Any]) -> None:
        self._call("garbage_collect", obj_id, self._inner.garbage_collect, obj_id, tensor_transport_meta, tensors)

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        self._call("abort_transport", obj_id, self._inner.abort_transport, obj_id, communicator_metadata)


def traced_class(inner: type, transport_name: str, backend_name: str | None = None,
                 base: type[TracedTransport] = TracedTransport) -> type:
    """A subclass of `base` (this tracing wrapper, or its fault-injecting twin in
    conformance.rdt.faults) for `inner`, registered as `transport_name`; shipped to workers by
    value (see module doc): it is no module attribute, only its base is imported by reference."""
    attrs = {"INNER_REF": class_ref(inner), "TRANSPORT_NAME": transport_name.upper(),
             "BACKEND_NAME": (backend_name or "").upper(), "__module__": base.__module__,
             "__doc__": f"{base.__name__} of {class_ref(inner)} registered as {transport_name.upper()}."}
    return type(f"{base.__name__}_{transport_name.upper()}", (base,), attrs)
