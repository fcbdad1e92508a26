"""The SIG's register: one product, its reports in time order, and the tier it holds now.

Why: a dashboard of submissions shows each report alone, so a product whose next report falls
from stable to beta keeps reading "stable" wherever its old row is looked at. The rules here
(PyTorch RFC-0050 writes its demotion rules down; so do we):

* a product is a vendor and product spelt the same (conformance/identity.py, NFKC, trimmed);
* the reports that count are the verified ones (with a keyring; without one, every report whose
  tier could be recomputed), never a revoked one;
* its current tier is its latest counted report's (as the SIG received them, by its signed
  decisions, signing/receipts.py; then by finished_at): an earlier, higher one never outranks it;
* a later report with a lower tier demotes it: "demoted from stable on DATE" with the checks
  whose outcome changed between the two reports. A later higher one promotes it back.

Pure functions over review rows (signing/review_row.py; signing/review.py fills them, the dashboard draws them).
"""
from __future__ import annotations

from typing import Sequence

from conformance import identity
from conformance.catalog import data, datafiles
from conformance.catalog.strict_input import utc_datetime
from conformance.signing.review_row import Row

MAX_CHANGED = 10  # checks named in a demotion line (the rest counted)


def tier_order() -> list[str]:
    """Tier names, lowest first (tiers/tiers.yaml)."""
    doc = datafiles.read_yaml_or_json(data.tiers_path(), what="tiers")
    return [str(t["name"]) for t in doc["tiers"]]


def rank(order: Sequence[str], tier: str | None) -> int:
    """0 for no tier (or one the ladder does not know), 1 for the lowest, ..."""
    return order.index(tier) + 1 if tier in order else 0


def counted_rows(rows: Sequence[Row], verified_only: bool) -> list[Row]:
    """The rows whose tier counts toward their product's standing."""
    out = []
    for r in rows:
        if r.revoked or r.signature.startswith("error"):
            continue
        if verified_only and not r.signature.startswith("verified"):
            continue
        if not verified_only and r.capabilities is None:  # its tier could not be recomputed
            continue
        out.append(r)
    return out


def group(rows: Sequence[Row]) -> list[list[Row]]:
    """Rows grouped by product (vendor and product spelt the same), in first-seen order."""
    groups: list[list[Row]] = []
    for r in rows:
        for g in groups:
            if identity.same(g[0].vendor, r.vendor) and identity.same(g[0].product, r.product):
                g.append(r)
                break
        else:
            groups.append([r])
    return groups


def _when(row: Row) -> tuple[int, str, int, str]:
    """The SIG's receipt first (signing/receipts.py: a report it decided on before, by its decision's
    time; then the ones this review received), then finished_at, the vendor's claim."""
    received = (0, row.received) if row.received else (1, "")
    try:
        return (*received, 1, utc_datetime(row.finished_at).isoformat())
    except (ValueError, TypeError):
        return (*received, 0, row.finished_at)


def history(rows: Sequence[Row]) -> list[Row]:
    """One product's rows, oldest first: as the SIG received them, then by finished_at (an undated
    row first)."""
    return sorted(rows, key=_when)


def changed_checks(before: Row, after: Row) -> list[str]:
    """'ID old→new' for each check whose outcome differs, those that stopped passing first."""
    ids = sorted(set(before.outcomes) | set(after.outcomes))
    changes = [(before.outcomes.get(i) != "pass", i) for i in ids if before.outcomes.get(i) != after.outcomes.get(i)]
    return [f"{i} {before.outcomes.get(i, 'absent')}→{after.outcomes.get(i, 'absent')}" for _, i in sorted(changes)]


def standing(product_rows: Sequence[Row], counted: Sequence[Row], order: Sequence[str]) -> tuple[Row | None, str | None]:
    """(the current report, the demotion line or None) of one product."""
    current: Row | None = None
    demotion: str | None = None
    for r in history([r for r in product_rows if any(r is c for c in counted)]):
        if current is not None:
            if rank(order, r.recomputed_tier) < rank(order, current.recomputed_tier):
                changed = changed_checks(current, r)
                shown = ", ".join(changed[:MAX_CHANGED]) + (f" (+{len(changed) - MAX_CHANGED} more)"
                                                            if len(changed) > MAX_CHANGED else "")
                demotion = (f"demoted from {current.recomputed_tier} on {r.date} (submission {r.submission}, "
                            f"after {current.submission}): {shown or 'no check outcome changed'}")
            elif rank(order, r.recomputed_tier) > rank(order, current.recomputed_tier):
                demotion = None
        current = r
    return current, demotion


def mark_standing(rows: Sequence[Row], order: Sequence[str], counted: Sequence[Row]) -> None:
    """Set each row's product tier, mark the product's current report, and note a demotion on it."""
    for g in group(rows):
        current, demotion = standing(g, counted, order)
        for r in g:
            r.product_tier = current.recomputed_tier if current else None
            r.current = r is current
            r.demoted = demotion
        if current is not None and demotion:
            current.notes.append(demotion)
