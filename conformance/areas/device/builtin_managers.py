"""Run the hardware-free contract checks against Ray's own built-in AcceleratorManagers.

A self-test of the checks: Ray's managers are the reference implementations, so a failure is
either a real Ray defect or a bug in a check. `python -m conformance.areas.device.builtin_managers` prints
the Markdown table recorded in docs/builtin-managers.md.
"""
from __future__ import annotations

import sys
from typing import Any

from tabulate import tabulate

from conformance.areas.device.contract import (ProbeFailed, env_var_applicable, problems_env_var_written, problems_no_stray_vars,
                                  problems_resource_name, problems_round_trip, problems_types, problems_unset_is_none,
                                  run_contract_probe)

CHECKS = {
    "DP-001": lambda p: problems_types(p),
    "DP-002": lambda p: problems_resource_name(p, None),
    "DP-003": problems_round_trip,
    "DP-004": problems_unset_is_none,
    "DP-005": problems_env_var_written,
    "DP-016": problems_no_stray_vars,
}
ENV_VAR_CHECKS = {"DP-003", "DP-004", "DP-005", "DP-016"}


def builtin_manager_refs() -> list[str]:
    from ray._private.accelerators import get_all_accelerator_managers

    return sorted(f"{m.__module__}:{m.__qualname__}" for m in get_all_accelerator_managers())


def judge(ref: str, timeout_s: float = 60.0) -> dict[str, Any]:  # knob: hang guard of the probe subprocess (a tool, not a check)
    """{check id: (outcome, detail)} for one manager."""
    try:
        probe = run_contract_probe(ref, python_path=[], env={}, quantities=[0.5, 1.0, 1.5, 2.0], timeout_s=timeout_s)
    except ProbeFailed as exc:
        return {cid: ("error", str(exc)) for cid in CHECKS}
    applicable, why = env_var_applicable(probe)
    result = {}
    for cid, fn in CHECKS.items():
        if cid in ENV_VAR_CHECKS and not applicable:
            result[cid] = ("not_applicable", why)
            continue
        problems = fn(probe)
        result[cid] = ("fail", "; ".join(problems)) if problems else ("pass", "")
    return result


def table() -> tuple[str, dict[str, dict[str, Any]]]:
    results = {ref: judge(ref) for ref in builtin_manager_refs()}
    rows = []
    notes = []
    for ref, res in results.items():
        rows.append([ref.split(":")[1]] + [res[c][0] for c in CHECKS])
        for cid, (outcome, detail) in res.items():
            if outcome not in ("pass",):
                notes.append(f"- `{ref.split(':')[1]}` {cid} {outcome}: {detail}")
    md = tabulate(rows, headers=["manager"] + list(CHECKS), tablefmt="github")
    return md + ("\n\n" + "\n".join(notes) if notes else ""), results


if __name__ == "__main__":
    md, _ = table()
    print(md)
    sys.exit(0)
