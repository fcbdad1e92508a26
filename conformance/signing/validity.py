"""How long a certificate holds, and where it stands on a day: valid, expiring or expired.

Why a date at all: a certificate made on a Ray series in 2026 should not read "stable" forever
(Kubernetes conformance: a certification for x.y is usable for a set time after x.y). The SIG's
policy is data, the releases file's `certificates` block (schemas/releases.schema.json):

    certificates:
      valid_months: 12                  # a release that sets no valid_months of its own uses this
      expiring_within_days: 30          # "expiring" this close to the end
      ray_supported_until: {"2.59": 2027-06-30}   # the SIG's supported Ray series

A certificate holds from its run's `finished_at` day for the `valid_months` its release sets
(else the block's), and lapses sooner on the day its Ray series leaves the SIG's supported list.
Pure functions: verify, review, the dashboard and the decisions all date a certificate here.
"""
from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Mapping

from conformance.catalog import releases
from conformance.catalog.strict_input import as_map, utc_date

STATES = ("valid", "expiring", "expired")


@dataclass(frozen=True)
class Policy:
    """The releases file's `certificates` block."""

    valid_months: int
    expiring_within_days: int
    ray_supported_until: Mapping[str, date]


@dataclass(frozen=True)
class Validity:
    """From the run's day to the last day the certificate holds, and the rule that set the end."""

    valid_from: date
    valid_until: date
    rule: str

    def state(self, today: date, policy: Policy) -> str:
        return state(self.valid_until, today, policy.expiring_within_days)


def load_policy(releases_file: Path | None = None) -> Policy | None:
    """The policy of `releases_file` (default tiers/releases.yaml); None when it sets none."""
    block = releases.load_certificates(releases_file)
    if block is None:
        return None
    return Policy(int(block["valid_months"]), int(block["expiring_within_days"]),
                  {str(k): date.fromisoformat(str(v)) for k, v in (block.get("ray_supported_until") or {}).items()})


def add_months(day: date, months: int) -> date:
    """`day` plus `months` calendar months (the 31st becomes the month's last day)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def certificate_validity(report: Mapping[str, Any], release: releases.Release | None,
                         policy: Policy | None) -> Validity | None:
    """When the certificate `report` makes holds; None when nothing dates it (no policy, no
    release, a finished_at the code cannot read). `report` is JSON, narrowed: a decision dates
    any report verify read (signing/decision.py), a schema-valid one or not."""
    if policy is None or release is None:
        return None
    finished = report.get("finished_at")
    try:
        start = utc_date(finished) if isinstance(finished, str) else None
    except ValueError:
        start = None
    if start is None:
        return None
    months = release.valid_months or policy.valid_months
    until = add_months(start, months) - timedelta(days=1)
    rule = f"{months} months from the run ({start}), release {release.version}"
    ray = as_map(report.get("environment")).get("ray")
    series = ".".join(ray.split(".")[:2]) if isinstance(ray, str) else None
    supported = policy.ray_supported_until.get(series) if series else None
    if supported is not None and supported < until:
        until, rule = supported, f"Ray {series} is supported by the SIG until {supported}"
    return Validity(start, until, rule)


def state(valid_until: date, today: date, expiring_within_days: int) -> str:
    """'expired' after `valid_until`, 'expiring' within `expiring_within_days` of it, else 'valid'."""
    if today > valid_until:
        return "expired"
    if (valid_until - today).days < expiring_within_days:
        return "expiring"
    return "valid"
