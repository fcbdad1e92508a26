"""The metrics PF-001..PF-003 record, built from the sweep's rows (pure: no Ray, no clock).

One home for what the checks write, so a test of `ray-conformance diff` builds its evidence
exactly as a run does. A row is bench.sweep's: {"bytes", "rdt", "object_store"?, "clone",
"ratio_to_*", "seconds", "verified"}, each of "rdt" / "object_store" / "clone" a
conformance.measure.stats summary (its `trials_gbps` the per-trial bandwidths diff's bootstrap
compares; the checklist's `merit:` names what diff gates).
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

from conformance.rdt.config import size_key


def sweep_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """PF-001's per-size figures: the transport's median, min, max, IQR and trials, its baselines'
    medians beside the trials each is the median of (the host copy's and the object store's are
    merit references `diff` reads as the host's, which verify recomputes from them) and its ratios
    to them."""
    return {size_key(r["bytes"]): {"median_gbps": r["rdt"]["median_gbps"], "min_gbps": r["rdt"]["min_gbps"],
                                   "max_gbps": r["rdt"]["max_gbps"], "iqr": r["rdt"]["iqr_gbps"],
                                   "trials_gbps": r["rdt"]["trials_gbps"], "cv": r["rdt"].get("cv"),
                                   "cv_met": r["rdt"].get("cv_met"), "batch": r["rdt"].get("batch"),
                                   "object_store_median_gbps": r.get("object_store", {}).get("median_gbps"),
                                   "object_store_trials_gbps": r.get("object_store", {}).get("trials_gbps"),
                                   "clone_median_gbps": r["clone"]["median_gbps"],
                                   "clone_trials_gbps": r["clone"]["trials_gbps"],
                                   "ratio_to_object_store": r.get("ratio_to_object_store"),
                                   "ratio_to_clone": r["ratio_to_clone"]} for r in rows}


def largest_figures(top: Mapping[str, Any], reference: float, what: str,
                    reference_trials: Sequence[float] | None = None) -> dict[str, Any]:
    """PF-002's: the largest size's bandwidth as a fraction of its reference (with the reference's
    own trials when it was measured in the run, not declared), and Ray's object store at that size
    when the sweep measured it there: the same run's cross-process path through shared memory, which
    `diff` reads as a witness of the host (merit references): a host copy is one process's memcpy and
    can hold while the host's shared-memory path slows every process-to-process transfer alike."""
    got = top["rdt"]["median_gbps"]
    out = {"largest_bytes": top["bytes"], "largest_size_gbps": got, "reference_gbps": reference,
           "largest_size_trials_gbps": top["rdt"]["trials_gbps"], "reference": what,
           "achieved_fraction": got / reference if reference else None}
    if reference_trials:
        out["reference_trials_gbps"] = list(reference_trials)
    store = (top.get("object_store") or {}).get("median_gbps")
    if store:
        out["object_store_gbps"] = store
    return out


def store_figures(top: Mapping[str, Any]) -> dict[str, Any]:
    """PF-003's: the largest size the object store carried, the transport against it."""
    rdt, store = top["rdt"]["median_gbps"], top["object_store"]["median_gbps"]
    return {"bytes": top["bytes"], "rdt_gbps": rdt, "object_store_gbps": store,
            "rdt_trials_gbps": top["rdt"]["trials_gbps"], "object_store_trials_gbps": top["object_store"]["trials_gbps"],
            "ratio_to_object_store": rdt / store if store else None}


def link_figures(classes: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """PF-004's per link class (same-node, cross-node): the median, the slowest pair, and the
    slowest as a fraction of the median (the matrix's spread, what diff gates)."""
    return {k.replace("-", "_"): {"median_gbps": statistics.median(v), "min_gbps": min(v),
                                  "min_fraction": min(v) / statistics.median(v)} for k, v in classes.items()}
