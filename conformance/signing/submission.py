"""Reading a report folder the one way both `sign` and `verify` read it.

Why one reader: whatever verify would refuse (a symlink leaving the folder, a file over its size
cap, a number or date-time the code cannot compute with, a report that is not schema-valid, a
field without a trust status) sign must refuse first, with the same line; otherwise a vendor
signs a folder the SIG cannot even read. So both call `read_folder` (the refusals that end a
verification as an error) and `admission_lines` (the ones verify reports as FAIL lines and sign
turns into its refusal).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.catalog import datafiles
from conformance.errors import UserError
from conformance.jsontypes import Untrusted
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing import trust_table

WHAT = "report folder"  # the prefix of every refusal, the same for sign and verify


@dataclass(frozen=True)
class Folder:
    path: Path
    raw: dict[str, bytes]  # report file name -> bytes
    report: dict[str, Any]

    def digests(self) -> dict[str, str]:
        return {name: datafiles.sha256_bytes(content) for name, content in self.raw.items()}


def read_folder(folder: Path) -> Folder:
    """The report files of `folder` (regular files inside it, under the size cap) and report.json
    parsed strictly; one-line UserError otherwise."""
    folder = Path(folder)
    raw = {name: att.read_file(folder / name, WHAT, within=folder) for name in att.REPORT_FILES}
    return Folder(folder, raw, att.parse_report(raw[att.REPORT_JSON], str(folder / att.REPORT_JSON)))


def schema_problem(report: Untrusted, schema_path: Path) -> str | None:
    """The most specific schema error of report.json, or None."""
    return datafiles.compiled_schema(schema_path).first_error(report)


def report_schema_for(report: Untrusted, releases_file: Path | None = None) -> Path:
    """The schema verify validates `report` with: its release's, else this installation's (the
    release is read off the JSON as read, narrowed: the schema it picks has not held yet)."""
    from conformance.catalog import releases

    path = Path(releases_file or releases.default_path())
    suite = report.get("suite") if isinstance(report, dict) else None
    version = suite.get("version") if isinstance(suite, dict) else None
    try:
        release = releases.load_releases(path).get(version) if isinstance(version, str) else None
    except UserError:  # an unreadable releases file: verify reports it; validate with ours meanwhile
        release = None
    found = releases.release_file(release, "report_schema_sha256", path) if release else None
    return found or datafiles.schema_path("report")


def trust_problem(section: str, doc: object) -> str | None:
    """Fields of report.json (or the Statement) without a trust status, or None."""
    unknown = trust_table.unknown_fields(section, doc)
    if not unknown:
        return None
    name = "report.json" if section == "report" else "the Statement"
    return (f"{name} field(s) {terminal(', '.join(unknown), limit=300)} have no trust status "
            f"(schemas/report.trust.yaml); verify believes no field it was not told how to judge")


def name_problem(report: Untrusted) -> str | None:
    """Why the manifest's vendor or product could print like another name (verify's `names` line;
    conformance/identity.py), or None. For sign to refuse first, as it does the other lines here."""
    from conformance import identity
    from conformance.signing.compat_forms import compat_name_problems

    problems = identity.report_name_problems(report) + compat_name_problems(report) if isinstance(report, dict) else []
    return "; ".join(problems) or None


def envelope_size_problem(path: Path, size: int) -> str | None:
    """What verify's reader says of an envelope of `size` bytes at `path` (None: within the cap)."""
    if size > att.MAX_ENVELOPE_BYTES:
        return f"verify: {path} is {size} bytes, over the {att.MAX_ENVELOPE_BYTES}-byte limit"
    return None
