"""One row of the SIG's review: a submission as review judged it (signing/review.py fills it,
signing/register.py sets its product's standing, the dashboard draws it).

Its own module, below both: the review calls the register, and the register's functions read and
mark rows, so the row cannot live in the review without a circle (even one of type hints only).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Row fields the review computes with but never prints (per-check outcomes: bounded by the checklist)
_INTERNAL = ("outcomes",)


@dataclass
class Row:
    submission: str
    vendor: str = "?"
    product: str = "?"
    suite_version: str = "?"
    date: str = "?"
    claimed_tier: str | None = None
    recomputed_tier: str | None = None
    # certified capability profiles: what the report claims (None: it claims none, an older
    # report) and what its per-check results certify (None: could not be recomputed)
    claimed_capabilities: list[str] | None = None
    capabilities: list[str] | None = None
    signature: str = "unverified"
    failing: list[str] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # other submissions of the same vendor and product (spelt the same after NFKC and trimming)
    duplicate_of: list[str] = field(default_factory=list)
    # other submissions whose vendor (and product) look like this one's but are spelt differently
    looks_like: list[str] = field(default_factory=list)
    finished_at: str = "?"
    ray_version: str = "?"
    report_sha256: str | None = None
    # the certificate's validity (signing/validity.py) as of the review's day: valid, expiring,
    # expired, or "?" (nothing dates it)
    validity: str = "?"
    valid_until: str | None = None
    revoked: str | None = None        # the SIG's revocation line, when its list names this report
    decision: str | None = None       # the decision file the SIG signed on it (this review or before)
    # its product's standing (signing/register.py): the current tier (the latest verified report's),
    # whether this row is that report, and the demotion the latest report made, if any
    product_tier: str | None = None
    current: bool = False
    demoted: str | None = None
    outcomes: dict[str, str] = field(default_factory=dict)
    # when the SIG received this report.json: its earliest signed decision on it (signing/receipts.py;
    # None: never decided on, received by this review), and the submissions of the same product the
    # SIG received earlier that this one claims to have finished before (a re-dated report?)
    received: str | None = None
    redated_before: list[str] = field(default_factory=list)
    # the submission's bounds (tiers/review.yaml): "" within them, else why not ("too large: ...",
    # "took too long: ..."); and the seconds its review took (its page gets what is left)
    over_bound: str = ""
    review_s: float = 0.0

    def public(self) -> dict[str, Any]:
        """The row as review's JSON and the dashboard show it."""
        out = asdict(self)
        for name in _INTERNAL:
            out.pop(name, None)
        return out

    def cells(self) -> list[str]:
        return [self.submission, self.vendor, self.product, self.suite_version, self.date,
                self.claimed_tier or "none", self.recomputed_tier or "none", self.capabilities_cell(), self.signature,
                ", ".join(self.failing) or "-", ", ".join(self.waived) or "-", self.same_product_cell(),
                self.validity_cell(), self.product_cell()]

    def validity_cell(self) -> str:
        return f"{self.validity} (until {self.valid_until})" if self.valid_until else self.validity

    def product_cell(self) -> str:
        text = self.product_tier or "none"
        text += " (this report)" if self.current else ""
        return f"{text}; {self.demoted}" if self.demoted and self.current else text

    def same_product_cell(self) -> str:
        marks = ([f"DUPLICATE of {', '.join(self.duplicate_of)}"] if self.duplicate_of else []) + \
                ([f"LOOK-ALIKE of {', '.join(self.looks_like)}"] if self.looks_like else []) + \
                ([f"RE-DATED? finished before {', '.join(self.redated_before)}"] if self.redated_before else [])
        return "; ".join(marks) or "-"


    @property
    def capabilities_mismatch(self) -> bool:
        """The report claims capabilities its own results do not certify (or the reverse)."""
        return (self.claimed_capabilities is not None and self.capabilities is not None
                and sorted(self.claimed_capabilities) != sorted(self.capabilities))

    def capabilities_cell(self) -> str:
        if self.capabilities is None:
            return "?"
        text = ", ".join(self.capabilities) or "none"
        if self.capabilities_mismatch:
            text += f" (claimed: {', '.join(self.claimed_capabilities or []) or 'none'})"
        return text
