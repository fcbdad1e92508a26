"""The checks verify runs, in the one order it runs them (verify_path walks CHECKS).

Two stages, with the report schema between them: the checks before it judge the envelope and
the JSON as read (`Sealed`); the checks after it take the typed report (`Judged`). When
report.json is not schema-valid, each later check's `unchecked` lines are written as
"not checked" instead. The order is the order of their inputs, not of the printed lines (those
are sorted by lines.ORDER): `revocation` reads the signer the signature check chose, `claims`
the tier the tier check recomputed; the tier check is the first to read the release's waivers
and data, so an unreadable file fails there as it always has.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from conformance.signing.verify import claims, nodes, record, release, signature, tier, waivers
from conformance.signing.verify.case import Judged, Sealed
from conformance.signing.verify.lines import Verification


@dataclass(frozen=True)
class SealedCheck:
    """A check of the envelope and the JSON as read (it runs whatever the schema says)."""

    lines: tuple[str, ...]                            # the line names it may write
    holds: Callable[[Verification, Sealed], None]
    needs_statement: bool = False                     # runs only on our Statement


@dataclass(frozen=True)
class SchemaGate:
    """The `schema` line: past it, report.json is typed (verify_path builds the `Judged`)."""

    lines: tuple[str, ...] = ("schema",)
    needs_statement: bool = False


@dataclass(frozen=True)
class ReportCheck:
    """A check of the typed report and its release."""

    lines: tuple[str, ...]
    holds: Callable[[Verification, Judged], None]
    unchecked: tuple[str, ...] = ()                   # written "not checked" when the schema fails
    needs_statement: bool = False


Check = Union[SealedCheck, SchemaGate, ReportCheck]

CHECKS: tuple[Check, ...] = (
    SealedCheck(("signature", "identity"), signature.signed_by_a_trusted_key_bound_to_the_vendor),
    SealedCheck(("names",), signature.names_print_as_they_compare),
    SealedCheck(("bundle",), signature.bundle_carries_the_same_envelope),
    SealedCheck(("statement",), signature.statement_is_ours),
    SealedCheck(("subjects", "subject"), signature.subjects_match_the_files, needs_statement=True),
    SchemaGate(),
    ReportCheck(("trust",), release.every_field_has_a_trust_status),
    ReportCheck(("release",), release.suite_is_a_known_release, unchecked=("release",)),
    ReportCheck(("revocation",), signature.revoked_key_signed_before_its_revocation),
    ReportCheck(("release-files",), release.release_files_are_available),
    ReportCheck(("manifest", "environment"), release.embedded_manifest_and_environment_are_supported,
                unchecked=("manifest", "environment")),
    ReportCheck(("cross-check",), record.facts_agree_across_fields),
    ReportCheck(("time",), record.times_are_ordered),
    ReportCheck(("superseded",), release.release_not_superseded_when_the_run_started),
    ReportCheck(("companions",), record.companions_state_what_the_report_states),
    ReportCheck(("page",), record.page_is_the_reports_page),
    ReportCheck(("tier", "capabilities"), tier.tier_recomputes_from_the_results, unchecked=("tier",)),
    ReportCheck(("completeness",), tier.checklist_is_complete, unchecked=("completeness",)),
    ReportCheck(("claims",), claims.statement_claims_match_the_report, unchecked=("claims",), needs_statement=True),
    ReportCheck(("waivers",), waivers.waivers_are_the_releases, unchecked=("waivers",)),
    ReportCheck(("validity",), waivers.certificate_still_holds, unchecked=("validity",)),
    ReportCheck(("evidence", "summary", "selection"), record.evidence_gives_each_outcome,
                unchecked=("evidence", "summary", "selection")),
    ReportCheck(("nodes",), nodes.exercised_nodes_are_the_runs_choice, unchecked=("nodes",)),
    ReportCheck(("shards",), record.shards_each_verify),
)
