"""A check that moves or allocates tensors, run once on each device type the manifest declares:
the one loop every such check goes through (the transport checks through `RdtCtx.each_device`,
the recovery transfer checks, the collective RDT checks).

A vendor's code differs per device type (where buffers live, how they are allocated,
synchronized and freed), so a requirement about tensors holds on every declared type. The loop
keeps each type's outcome apart: a type the check cannot run on is recorded as not applicable on
it with the reason (the check is not applicable only when that is so on every type), and a
failure on one type names the type without stopping the next.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import pytest

from conformance.report.results import NOT_APPLICABLE_PREFIX, not_applicable


class HasMetrics(Protocol):
    metrics: dict[str, Any]


def on_each_device(ctx: HasMetrics, devices: Sequence[str], run_one: Callable[[str, bool], None]) -> None:
    """Run `run_one(device, first)` on each of `devices`, in the manifest's order. `first` is
    False on the second and later types, which a check may run with the smallest payloads that
    still test its requirement (conformance.rdt.context.later_bytes).

    With more than one type, each type's metrics land under metrics[<type>] (ctx.metrics is that
    dict while the type runs) and a failure on one type does not stop the next (the reason names
    each failing type); metrics["devices"] names the types exercised (the evidence) and
    metrics["not_applicable_on"] the types the check could not run on, with the reason. Not
    applicable on every type: the check is."""
    nested = len(devices) > 1
    top = ctx.metrics
    exercised: list[str] = []
    skipped: dict[str, str] = {}
    problems: list[str] = []
    for i, device in enumerate(devices):
        if nested:
            ctx.metrics = top.setdefault(device, {})
        try:
            run_one(device, i == 0)
            exercised.append(device)
        except pytest.skip.Exception as exc:
            skipped[device] = str(exc.msg).removeprefix(NOT_APPLICABLE_PREFIX)
        except (AssertionError, pytest.fail.Exception) as exc:
            exercised.append(device)
            if not nested:
                raise
            problems.append(f"on {device}: {first_part(exc)}")
        finally:
            ctx.metrics = top
            if nested and not top.get(device):
                top.pop(device, None)
    top["devices"] = exercised
    if skipped:
        top["not_applicable_on"] = skipped
    if problems:
        raise AssertionError(" | ".join(problems))
    if not exercised:
        not_applicable("; ".join(f"on {d}: {why}" for d, why in skipped.items()))


def first_part(exc: BaseException) -> str:
    """The failure's reason without pytest's assertion introspection that follows it."""
    return str(exc).split("\nassert ")[0].strip()
