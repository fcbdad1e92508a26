"""The performance area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping

from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, agrees, number, param_value

JUDGES = JudgeTable()


@JUDGES.rule(needs=("largest_size_gbps", "reference_gbps", "achieved_fraction"),
           params=("min_link_bandwidth_fraction",), decides_all=True)
def largest_size_against_reference(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    got, ref = number(m, "largest_size_gbps"), number(m, "reference_gbps")
    need = param_value(p, "min_link_bandwidth_fraction")
    if ref <= 0:
        return Verdict(FAIL, f"reference bandwidth {ref:g} GB/s is not positive")
    achieved = number(m, "achieved_fraction")
    if not agrees(achieved, got / ref):
        return Verdict(FAIL, f"achieved_fraction {achieved:.4g} is not largest_size_gbps/reference_gbps "
                             f"({got:.4g}/{ref:.4g} = {got / ref:.4g})")
    if achieved < need:
        return Verdict(FAIL, f"the largest size reaches {got:.3g} GB/s (median), {achieved:.1%} of the reference "
                             f"{ref:.3g} GB/s; the check needs >= {need:.0%}")
    return Verdict(PASS, f"{achieved:.1%} of the reference, >= {need:.0%}")


@JUDGES.rule(needs=("rdt_gbps", "object_store_gbps", "ratio_to_object_store"),
           params=("min_ratio_to_object_store",), decides_all=True)
def transport_against_object_store(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    rdt, store = number(m, "rdt_gbps"), number(m, "object_store_gbps")
    need = param_value(p, "min_ratio_to_object_store")
    if store <= 0:
        return Verdict(FAIL, f"object-store bandwidth {store:g} GB/s is not positive")
    ratio = number(m, "ratio_to_object_store")
    if not agrees(ratio, rdt / store):
        return Verdict(FAIL, f"ratio_to_object_store {ratio:.4g} is not rdt_gbps/object_store_gbps ({rdt / store:.4g})")
    if ratio < need:
        return Verdict(FAIL, f"the transport moves {rdt:.3g} GB/s, {ratio:.2f}x Ray's object store path "
                             f"({store:.3g} GB/s) between the same actors; the check needs >= {need:g}x")
    return Verdict(PASS, f"{ratio:.2f}x the object store, >= {need:g}x")


@JUDGES.rule(needs=("links", "wrong_pairs"), params=("min_fraction_of_class_median",), decides_all=True)
def links_within_class_median(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    need = param_value(p, "min_fraction_of_class_median")
    wrong = number(m, "wrong_pairs")
    links = m.get("links")
    if not isinstance(links, Mapping) or not links:
        raise MissingEvidence("metric links is missing or empty")
    if wrong != 0:
        return Verdict(FAIL, f"{wrong:g} pair(s) delivered wrong data")
    raw = _matrix_classes(m)
    if set(raw) != set(links):
        return Verdict(FAIL, f"links has classes {sorted(links)} but the matrix_gbps it summarises gives {sorted(raw)}")
    for cls, values in raw.items():
        figures = links[cls] if isinstance(links[cls], Mapping) else {}
        med, low = number(figures, "median_gbps"), number(figures, "min_gbps")
        if not (agrees(med, statistics.median(values)) and agrees(low, min(values))):
            return Verdict(FAIL, f"links.{cls} says median {med:.4g} / min {low:.4g} GB/s but its own matrix_gbps "
                                 f"gives {statistics.median(values):.4g} / {min(values):.4g}")
    slow = []
    for cls, figures in sorted(links.items()):
        if not isinstance(figures, Mapping):
            raise MissingEvidence(f"metric links.{cls} is not an object")
        med, low = number(figures, "median_gbps"), number(figures, "min_gbps")
        if low > med:
            return Verdict(FAIL, f"links.{cls}: min_gbps {low:.3g} above its median {med:.3g}")
        if low < need * med:
            slow.append(f"{cls} slowest {low:.3g} GB/s < {need:.0%} of its median {med:.3g}")
    if slow:
        return Verdict(FAIL, f"links slower than {need:.0%} of their class's median: {'; '.join(slow)}")
    return Verdict(PASS, f"every link class within {need:.0%} of its median")


def _matrix_classes(m: Mapping[str, Any]) -> dict[str, list[float]]:
    """The pairwise matrix's bandwidths by link class, as the check groups them: endpoints are
    labelled `n<node>:<device>`, a pair on one node is same_node (conformance/areas/performance/bench.link_classes)."""
    labels, matrix = m.get("endpoints"), m.get("matrix_gbps")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or len(labels) < 2:
        raise MissingEvidence("metric endpoints is missing or not a list of endpoint labels")
    if not isinstance(matrix, list) or len(matrix) != len(labels) \
            or not all(isinstance(row, list) and len(row) == len(labels) for row in matrix):
        raise MissingEvidence("metric matrix_gbps is missing or not a square matrix over the endpoints")
    out: dict[str, list[float]] = {}
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if i == j or value is None:
                continue
            cls = "same_node" if labels[i].split(":")[0] == labels[j].split(":")[0] else "cross_node"
            out.setdefault(cls, []).append(number({"v": value}, "v"))
    return out
