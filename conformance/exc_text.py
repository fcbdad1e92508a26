"""An exception as one line of a finding: `Type: its first meaningful line`.

Ray wraps a task's error (RayTaskError, ActorDiedError, ...): the error it carries (`.cause`) is
what the plugin raised, so that is what a finding names. Ray's own frame headers ("ray::Actor.m()")
and traceback banners say nothing of what went wrong and are passed over. One definition for every
area (the transport, recovery, workload and collective checks used to keep three).
"""
from __future__ import annotations

LINE_CHARS = 400   # knob: the longest line of an error a finding quotes


def first_line(exc: BaseException, limit: int = LINE_CHARS) -> str:
    """"Type: first meaningful line" of `exc`, or of the error a Ray task error carries."""
    cause = getattr(exc, "cause", None)
    base = cause if isinstance(cause, BaseException) else exc
    for line in str(base).strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("ray::", "\x1b[36mray::")) and "Traceback" not in line:
            return f"{type(base).__name__}: {line[:limit]}"
    return type(base).__name__
