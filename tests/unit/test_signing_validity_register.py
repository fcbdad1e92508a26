"""Certificate validity (signing/validity.py) and the product register (signing/register.py): pure rules."""
from __future__ import annotations

from datetime import date

from conformance.catalog.releases import Release
from conformance.signing import register, validity
from conformance.signing.review_row import Row

POLICY = validity.Policy(valid_months=12, expiring_within_days=30, ray_supported_until={})


def _release(months: int | None = None) -> Release:
    return Release("9.9", *(["a" * 64] * 6), schemas_sha256=(), ray_versions=("2.60",), valid_months=months)


def _report(finished: str = "2026-03-01T12:00:00Z", ray: str = "2.60.1") -> dict:
    return {"finished_at": finished, "environment": {"ray": ray}}


def test_a_certificate_holds_for_the_release_period_from_its_run() -> None:
    v = validity.certificate_validity(_report(), _release(), POLICY)
    assert v is not None and (v.valid_from, v.valid_until) == (date(2026, 3, 1), date(2027, 2, 28))
    six = validity.certificate_validity(_report(), _release(6), POLICY)
    assert six is not None and six.valid_until == date(2026, 8, 31) and "6 months" in six.rule
    assert validity.add_months(date(2026, 1, 31), 1) == date(2026, 2, 28)


def test_a_ray_series_the_sig_stops_supporting_ends_it_sooner() -> None:
    policy = validity.Policy(12, 30, {"2.60": date(2026, 9, 30)})
    v = validity.certificate_validity(_report(), _release(), policy)
    assert v is not None and v.valid_until == date(2026, 9, 30) and "Ray 2.60" in v.rule
    other = validity.certificate_validity(_report(ray="2.59.0"), _release(), policy)
    assert other is not None and other.valid_until == date(2027, 2, 28)


def test_nothing_dates_a_report_without_policy_release_or_finish() -> None:
    assert validity.certificate_validity(_report(), _release(), None) is None
    assert validity.certificate_validity(_report(), None, POLICY) is None
    assert validity.certificate_validity(_report(finished="yesterday"), _release(), POLICY) is None


def test_valid_expiring_expired() -> None:
    end = date(2027, 2, 28)
    assert validity.state(end, date(2026, 12, 1), 30) == "valid"
    assert validity.state(end, date(2027, 2, 1), 30) == "expiring"
    assert validity.state(end, end, 30) == "expiring"
    assert validity.state(end, date(2027, 3, 1), 30) == "expired"


ORDER = ["experimental", "beta", "stable"]


def _row(name: str, tier: str | None, finished: str, outcomes: dict[str, str], product: str = "X1") -> Row:
    return Row(name, vendor="Acme", product=product, recomputed_tier=tier, finished_at=finished,
               date=finished[:10], signature="verified (acme)", capabilities=[], outcomes=outcomes)


def test_a_later_lower_report_demotes_and_names_the_checks_that_changed() -> None:
    old = _row("a", "stable", "2026-03-01T12:00:00Z", {"FR-001": "pass", "DP-001": "pass"})
    new = _row("b", "beta", "2026-04-01T12:00:00Z", {"FR-001": "fail", "DP-001": "pass"})
    rows = [new, old]  # folder order is not time order
    register.mark_standing(rows, ORDER, counted=rows)
    assert new.current and not old.current and old.product_tier == new.product_tier == "beta"
    assert new.demoted and new.demoted.startswith("demoted from stable on 2026-04-01") and "FR-001 pass→fail" in new.demoted
    assert new.demoted in new.notes


def test_an_earlier_higher_report_never_outranks_and_a_later_higher_one_promotes() -> None:
    early = _row("a", "stable", "2026-01-01T00:00:00Z", {})
    mid = _row("b", "beta", "2026-02-01T00:00:00Z", {})
    late = _row("c", "stable", "2026-03-01T00:00:00Z", {})
    register.mark_standing([early, mid, late], ORDER, counted=[early, mid, late])
    assert late.current and late.product_tier == "stable" and late.demoted is None
    register.mark_standing([early, mid], ORDER, counted=[early, mid])
    assert mid.current and mid.product_tier == "beta"


def test_only_counted_rows_decide_and_products_stay_apart() -> None:
    verified = _row("a", "beta", "2026-01-01T00:00:00Z", {})
    revoked = _row("b", "stable", "2026-02-01T00:00:00Z", {})
    revoked.revoked = "revoked by the SIG on 2026-02-02: wrong"
    other = _row("c", "stable", "2026-02-01T00:00:00Z", {}, product="X2")
    rows = [verified, revoked, other]
    counted = register.counted_rows(rows, verified_only=True)
    assert revoked not in counted
    register.mark_standing(rows, ORDER, counted)
    assert verified.current and verified.product_tier == "beta" and revoked.product_tier == "beta"
    assert other.current and other.product_tier == "stable"
    assert [len(g) for g in register.group(rows)] == [2, 1]
