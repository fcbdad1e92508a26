"""What one verification reads, in the two stages verify reads it.

`Sealed`: the envelope, the Statement it signs and the report folder's files, before report.json
is known to have a shape (the signature, the subjects and the names are judged on the JSON as read).
`Judged`: the same with report.json typed (conformance/report/view.py: built once the report
schema holds) and the release it claims; the release's files are read when a check first needs
them, in the order the registry runs the checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

from conformance.catalog import data, releases
from conformance.errors import UserError
from conformance.report.view import Report
from conformance.signing import attestation as att
from conformance.signing import dsse, submission
from conformance.signing.keyring import TrustedKey
from conformance.signing.verify.lines import Verification
from conformance.signing.verify.release_files import ReleaseInputs, release_inputs, release_waivers


@dataclass(frozen=True)
class Sealed:
    """The envelope and the files beside it, as read."""

    envelope_path: Path
    envelope: dsse.Envelope
    files: submission.Folder
    digests: Mapping[str, str]        # report file name -> sha256 of the file as read
    trusted: tuple[TrustedKey, ...]
    statement: dict[str, Any] | None  # None: not our Statement (statement_why says why)
    statement_why: str

    @property
    def folder(self) -> Path:
        return self.envelope_path.parent

    @property
    def document(self) -> dict[str, Any]:
        """report.json as parsed, not yet held to any schema."""
        return self.files.report

    @property
    def report_sha256(self) -> str:
        return self.digests[att.REPORT_JSON]


@dataclass(frozen=True)
class Judged:
    """A report that passed its schema, typed, with the release it claims (None: unknown)."""

    sealed: Sealed
    report: Report
    release: releases.Release | None
    known_releases: Mapping[str, releases.Release]
    releases_file: Path
    schema_file: Path                 # the report schema report.json was validated with
    waivers_file: Path | None         # replaces the release's waivers (tests, a SIG's own copy)
    now: datetime                     # the verifier's clock
    at: date | None                   # `verify --at`
    verify_one: Callable[[Path], Verification]   # verify a shard folder the same way

    @property
    def published(self) -> str | None:
        return self.release.published if self.release is not None else None

    @cached_property
    def release_inputs(self) -> tuple[ReleaseInputs, list[str]]:
        """The release's label vocabulary and profiles, and the release files this verifier lacks."""
        return release_inputs(self.release, self.releases_file)

    @property
    def inputs(self) -> ReleaseInputs:
        return self.release_inputs[0]

    @cached_property
    def waivers(self) -> tuple[list[data.Waiver] | None, str]:
        """The release's waivers (None with the reason when they cannot be had)."""
        return release_waivers(self.release, self.releases_file, self.waivers_file)

    @cached_property
    def release_data(self) -> tuple[tuple[data.Checklist, data.Ladder] | None, str | None]:
        """The release's checklist and ladder, or None with why they cannot be loaded."""
        if self.release is None:
            return None, None
        try:
            return releases.load_release_data(self.release, self.releases_file), None
        except UserError as exc:
            return None, str(exc)
