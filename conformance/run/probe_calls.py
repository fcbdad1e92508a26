"""One call of a vendor's method inside a probe process, announced and described (stdlib only).

The device contract probe and the preflight probe run the vendor's code in a process the suite
can kill. Before each call the probe writes a CALLING line to stderr, so a probe killed for
hanging names the method it was in (conformance/areas/device/contract.py reads them); what the
call returned or raised comes back as JSON that keeps the value's Python type.
"""
from __future__ import annotations

import sys
import traceback
from typing import Any, Callable

# Written to stderr before each vendor call, so that a probe killed for hanging names the call.
CALLING = "CONTRACT_PROBE_CALLING "


def describe(value: object) -> dict[str, Any]:
    """A JSON-safe description of a return value that keeps its Python type."""
    def typename(v: object) -> str:
        return type(v).__name__

    if isinstance(value, dict):
        return {"type": "dict", "items": {str(k): {"key_type": typename(k), "type": typename(v), "repr": repr(v)}
                                          for k, v in value.items()}, "repr": repr(value)}
    if isinstance(value, (list, tuple)):
        return {"type": typename(value), "items": [describe(v) for v in value], "repr": repr(value)}
    return {"type": typename(value), "repr": repr(value),
            "value": value if isinstance(value, (str, int, float, bool)) or value is None else None}


def call(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    print(CALLING + getattr(fn, "__name__", repr(fn)), file=sys.stderr, flush=True)
    try:
        return {"ok": True, "result": describe(fn(*args))}
    except BaseException as exc:  # noqa: BLE001 - report everything, including SystemExit
        return {"ok": False, "error": f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300],
                "traceback": traceback.format_exc()[-2000:]}
