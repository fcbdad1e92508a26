"""CC-010's bus bandwidth against its references and CC-008's memory over create/destroy cycles.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.collective.judges.common import (
    JUDGES,
    LEAK_MEMBERS,
)
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, agrees, is_median_of, number, param_value


def compared_at_star_size(m: Mapping[str, Any], op: str, size: int, op_bus: float) -> str:
    """Why the star comparison is not the one the release asks for ('' when it is): star_bytes
    must be the release's star_size_mib, and star_op_busbw_gbps the op's own row at that size, so
    a submitter cannot pick the size where the star's fixed costs flatter a slow backend."""
    got = m.get("star_bytes")
    if isinstance(got, bool) or not isinstance(got, (int, float)) or got != size:
        return f"star_bytes {got!r} is not star_size_mib ({size} bytes): the star comparison must be made at that size"
    rows = m.get("rows")
    if not isinstance(rows, list):
        raise MissingEvidence("metric rows is missing or not a list")
    row = next((r for r in rows if isinstance(r, Mapping) and r.get("op") == op and r.get("bytes") == size), None)
    if row is None:
        return f"rows has no {op} row at star_size_mib ({size} bytes): the compared figure has no measurement"
    if not agrees(op_bus, number(row, "busbw_gbps")):
        return (f"star_op_busbw_gbps {op_bus:.4g} is not the {op} row's busbw_gbps at {size} bytes "
                f"({number(row, 'busbw_gbps'):.4g})")
    return ""


def _trials(row: Mapping[str, Any], name: str, where: str) -> list[float]:
    values = row.get(name)
    if not isinstance(values, list) or not values:
        raise MissingEvidence(f"metric {where}.{name} is missing or empty")
    return [number({"v": v}, "v") for v in values]


def _row_medians(rows: list[Mapping[str, Any]], where: str) -> str:
    """Each row's busbw_gbps is the median of its own busbw_trials_gbps ('' when every one is)."""
    for i, row in enumerate(rows):
        bus, trials = number(row, "busbw_gbps"), _trials(row, "busbw_trials_gbps", f"{where}[{i}]")
        if not is_median_of(bus, trials):
            return (f"{where}[{i}] ({row.get('op')} at {row.get('bytes')} bytes): busbw_gbps {bus:.4g} is not the median "
                    f"of its own busbw_trials_gbps")
    return ""


def summaries_from_rows(m: Mapping[str, Any]) -> str:
    """Why CC-010's summary figures are not what its rows give ('' when they are: every summary
    recomputed from the raw trials recorded beside it, as conformance.areas.collective.busbw makes
    them): each row's and star row's busbw the median of its trials; busbw_gbps the weaker op's peak
    over the rows; host_copy_gbps the one every row records; star_busbw_gbps the star row's (the
    median of the star's trials star_by_op records) and star_op the op furthest below its star;
    star_by_op's trials the rows' own (issue 43's held-out C01, C02, C10)."""
    rows, star_rows = m.get("rows"), m.get("star_rows")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, Mapping) for r in rows):
        raise MissingEvidence("metric rows is missing or not a list of rows")
    if not isinstance(star_rows, list) or not star_rows or not all(isinstance(r, Mapping) for r in star_rows):
        raise MissingEvidence("metric star_rows is missing or not a list of rows")
    wrong = _row_medians(rows, "rows") or _row_medians(star_rows, "star_rows")
    if wrong:
        return wrong
    host = number(m, "host_copy_gbps")
    others = sorted({number(r, "host_copy_gbps") for r in rows if not agrees(number(r, "host_copy_gbps"), host)})
    if others:
        return f"host_copy_gbps {host:.4g} is not the host copy its rows record ({others[0]:.4g} GB/s): one measurement"
    ops = list(dict.fromkeys(str(r.get("op")) for r in rows))
    peaks = [max((r for r in rows if str(r.get("op")) == op), key=lambda r: number(r, "busbw_gbps")) for op in ops]
    weakest = min(peaks, key=lambda r: number(r, "busbw_gbps"))
    bus = number(m, "busbw_gbps")
    if not agrees(bus, number(weakest, "busbw_gbps")) or m.get("weakest_op") != weakest.get("op"):
        return (f"busbw_gbps {bus:.4g} ({m.get('weakest_op')}) is not the weaker op's peak over its rows "
                f"({weakest.get('op')} {number(weakest, 'busbw_gbps'):.4g} GB/s at {weakest.get('bytes')} bytes)")
    star_by_op = m.get("star_by_op")
    if not isinstance(star_by_op, Mapping) or not star_by_op:
        raise MissingEvidence("metric star_by_op is missing or empty")
    fractions: dict[str, float] = {}
    for star in star_rows:
        op = str(star.get("op"))
        row = next((r for r in rows if str(r.get("op")) == op and r.get("bytes") == star.get("bytes")), None)
        by_op = star_by_op.get(op)
        if row is None or not isinstance(by_op, Mapping):
            return f"star_rows has {op} at {star.get('bytes')} bytes, which rows or star_by_op do not record"
        star_bus = number(star, "busbw_gbps")
        if _trials(by_op, "star_trials_gbps", f"star_by_op.{op}") != _trials(star, "busbw_trials_gbps", "star_rows") \
                or _trials(by_op, "busbw_trials_gbps", f"star_by_op.{op}") != _trials(row, "busbw_trials_gbps", "rows"):
            return f"star_by_op.{op}'s trials are not those its star row and its row at {star.get('bytes')} bytes record"
        if "star_busbw_gbps" in row and not agrees(number(row, "star_busbw_gbps"), star_bus):
            return f"the {op} row's star_busbw_gbps {number(row, 'star_busbw_gbps'):.4g} is not its star row's {star_bus:.4g}"
        fractions[op] = number(row, "busbw_gbps") / star_bus if star_bus > 0 else 0.0
    judged = min(fractions, key=lambda op: fractions[op])
    star_op = str(m.get("star_op"))
    star = next(r for r in star_rows if str(r.get("op")) == judged)
    if star_op != judged or not agrees(number(m, "star_busbw_gbps"), number(star, "busbw_gbps")):
        return (f"star_op {star_op} with star_busbw_gbps {number(m, 'star_busbw_gbps'):.4g} is not what the star rows give: "
                f"{judged} is furthest below its star, whose trials' median is {number(star, 'busbw_gbps'):.4g} GB/s")
    return ""


@JUDGES.rule(needs=("busbw_gbps", "host_copy_gbps", "host_fraction"),
           params=("min_host_copy_fraction", "min_link_fraction"), decides_all=True,
           references=(("nominal_link_gbps", "collective.nominal_link_gbps"),))
def bus_bandwidth_against_references(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The weaker op's peak bus bandwidth over the sizes against the same run's host copy; the op
    furthest below the star reference (the same op, at the same size, the same run, the same
    members, by the simplest correct implementation over Ray's object store: at the sweep's
    largest size since release 0.1.0+data.18, at the op's peak before) against it, when the release has
    min_star_fraction (releases before it held the weaker op to one object-store put/get of the
    same bytes, min_object_store_fraction, or to the host copy alone: their reports are judged as
    they were); and against the manifest's nominal link when one is declared. Since 0.1.0+data.18
    (star_size_mib) a pass's summaries are also what its rows give (summaries_from_rows)."""
    verdict = _against_references(m, p, manifest)
    if verdict.outcome == PASS and "star_size_mib" in p and "min_star_fraction" in p:
        wrong = summaries_from_rows(m)
        if wrong:
            return Verdict(FAIL, wrong)
    return verdict


def _against_references(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    bus, host = number(m, "busbw_gbps"), number(m, "host_copy_gbps")
    if host <= 0:
        return Verdict(FAIL, f"host copy bandwidth {host:g} GB/s is not positive")
    store_part = ""
    if "min_star_fraction" in p:
        star, op_bus, star_fraction = (number(m, "star_busbw_gbps"), number(m, "star_op_busbw_gbps"),
                                       number(m, "star_fraction"))
        if star <= 0:
            return Verdict(FAIL, f"the star reference's bus bandwidth {star:g} GB/s is not positive")
        if not agrees(star_fraction, op_bus / star):
            return Verdict(FAIL, f"star_fraction {star_fraction:.4g} is not star_op_busbw_gbps/star_busbw_gbps "
                                 f"({op_bus:.4g}/{star:.4g})")
        need_star = param_value(p, "min_star_fraction")
        op = str(m.get("star_op") or "the op")
        at = ""
        if "star_size_mib" in p:   # since 0.1.0+data.18: compared at that size, the row there is the evidence
            wrong = compared_at_star_size(m, op, int(param_value(p, "star_size_mib") * 2**20), op_bus)
            if wrong:
                return Verdict(FAIL, wrong)
            at = f" at {param_value(p, 'star_size_mib'):g} MiB"
        if star_fraction < need_star:
            return Verdict(FAIL, f"{op}'s bus bandwidth{at} is {op_bus:.3g} GB/s, {star_fraction:.1%} of the simplest "
                                 f"correct {op} over Ray's object store (a star through one actor) doing the same op "
                                 f"at that size between the same members in this run ({star:.3g} GB/s); the check needs "
                                 f">= {need_star:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {star_fraction:.0%} of the star over the object store"
    elif "min_object_store_fraction" in p:   # releases before the star: one put/get of the same bytes
        store, store_fraction = number(m, "object_store_gbps"), number(m, "object_store_fraction")
        if store <= 0:
            return Verdict(FAIL, f"object store bandwidth {store:g} GB/s is not positive")
        if not agrees(store_fraction, bus / store):
            return Verdict(FAIL, f"object_store_fraction {store_fraction:.4g} is not busbw_gbps/object_store_gbps "
                                 f"({bus:.4g}/{store:.4g})")
        need_store = param_value(p, "min_object_store_fraction")
        if store_fraction < need_store:
            return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {store_fraction:.1%} of Ray's object store "
                                 f"moving the same bytes between the same members in this run ({store:.3g} GB/s); the "
                                 f"check needs >= {need_store:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {store_fraction:.0%} of the object store"
    fraction = number(m, "host_fraction")
    if not agrees(fraction, bus / host):
        return Verdict(FAIL, f"host_fraction {fraction:.4g} is not busbw_gbps/host_copy_gbps ({bus:.4g}/{host:.4g})")
    need = param_value(p, "min_host_copy_fraction")
    if fraction < need:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {fraction:.2%} of this host's "
                             f"memory copy ({host:.3g} GB/s); the check needs >= {need:.1%}")
    if m.get("nominal_link_gbps") is None:
        return Verdict(PASS, f"{fraction:.2%} of the host copy, >= {need:.1%}{store_part} (no nominal link declared)")
    link, link_fraction = number(m, "nominal_link_gbps"), number(m, "link_fraction")
    if link <= 0 or not agrees(link_fraction, bus / link):
        return Verdict(FAIL, f"link_fraction {link_fraction:.4g} is not busbw_gbps/nominal_link_gbps ({bus:.4g}/{link:.4g})")
    need_link = param_value(p, "min_link_fraction")
    if link_fraction < need_link:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {link_fraction:.1%} of the "
                             f"nominal link ({link:.3g} GB/s, collective.nominal_link_gbps); the check needs >= {need_link:.0%}")
    return Verdict(PASS, f"{fraction:.2%} of the host copy{store_part} and {link_fraction:.1%} of the nominal link")



def members_short(rows: list[list[float]], growth: list[Any], key: str) -> str | None:
    """CC-008's cycles run in LEAK_MEMBERS members, so every row and the growth hold one figure per
    member of those: the count is the check's, never what the record kept (a leaking member's
    column dropped is a finding)."""
    if any(len(r) != LEAK_MEMBERS for r in rows) or len(growth) != LEAK_MEMBERS:
        return (f"memory.{key} / memory.growth_mib record {sorted({len(r) for r in rows})} / {len(growth)} member(s); "
                f"the cycles run in {LEAK_MEMBERS}")
    return None


@JUDGES.rule(needs=("memory",), params=("max_growth_mib", "leak_warmup_cycles"), decides_all=False,
           counts=(("memory.cycles", "leak_cycles"), ("memory.payload_mib", "leak_payload_mib")))
def member_memory_growth(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The memory each member holds after the warm-up cycles and after the last may differ by at
    most max_growth_mib; growth_mib must be what its own rows give. The rows are `held_mib` (host
    memory the member holds: anonymous, and shared outside Ray's object store) or, in reports of
    releases before that reading, `rss_mib` (its resident total)."""
    memory = m.get("memory")
    if not isinstance(memory, Mapping):
        raise MissingEvidence("metric memory is missing")
    key = "held_mib" if "held_mib" in memory else "rss_mib"
    rows, growth = memory.get(key), memory.get("growth_mib")
    warmup, allowed = int(param_value(p, "leak_warmup_cycles")), param_value(p, "max_growth_mib")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows) or not isinstance(growth, list) \
            or not growth:
        raise MissingEvidence("metric memory.held_mib (or memory.rss_mib) / memory.growth_mib is missing or not lists")
    rows = [[number({"v": x}, "v") for x in row] for row in rows]  # every figure recorded is a number
    if len(rows) != number(memory, "cycles") or not 1 <= warmup <= len(rows):
        return Verdict(FAIL, f"memory.{key} has {len(rows)} row(s) for {memory.get('cycles')!r} cycles")
    first, last = rows[warmup - 1], rows[-1]
    if len(first) != len(growth) or len(last) != len(growth):
        return Verdict(FAIL, f"memory.growth_mib does not have one figure per member of memory.{key}")
    short = members_short(rows, growth, key)
    if short is not None:
        return Verdict(FAIL, short)
    for i, g in enumerate(growth):
        g = number({"v": g}, "v")
        derived = last[i] - first[i]
        if abs(g - derived) > 0.15:  # knob: both are rounded to 0.1 MiB (a rounding bound, no threshold)
            return Verdict(FAIL, f"memory.growth_mib[{i}] is {g:g} but its {key} rows give {derived:.1f}")
        if g > allowed:
            return Verdict(FAIL, f"the memory member {i} holds grew by {g:.0f} MiB over the create/destroy "
                                 f"cycles (at most {allowed:g} MiB)")
    return Verdict(PASS, f"growth within {allowed:g} MiB per member")
