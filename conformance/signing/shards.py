"""Shards on disk: `ray-conformance merge SHARD_DIR... --out DIR`, and verify's `shards` line.

The merge reads each signed shard folder (report.json, junit.xml, report.md and the envelope that
signs them: a shard edited after signing is refused here already), applies the rules of
conformance.report.merge, writes the merged report.json, report.md, junit.xml and report.html
into a new folder, and copies every shard whole into DIR/shards/<i-of-N>/, where verify finds
them: `sign` then signs the merged report as any other, and `verify` of it re-verifies every
shard (its signature and every line but the shard's own partial selection), re-applies the rules
and recomputes the merge, so a merged report that is not the merge of its shards is refused.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance.catalog import data as data_module
from conformance.errors import UserError
from conformance.report import merge as mg
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing import submission

SHARDS_DIR = "shards"
# What a shard's folder carries into the merged folder: its signed files and the signature.
SHARD_FILES = (*att.REPORT_FILES, att.ENVELOPE_NAME, att.BUNDLE_NAME, "report.html")


def _signed_digest(folder: Path, name: str) -> str | None:
    """The sha256 the folder's envelope signs for `name` (None: no envelope, or not signed there)."""
    from conformance.signing import dsse
    from conformance.signing.canonical import loads_strict

    envelope = folder / att.ENVELOPE_NAME
    if not envelope.is_file():
        return None
    raw = att.read_file(envelope, "merge", max_bytes=att.MAX_ENVELOPE_BYTES, within=folder)
    try:
        statement = json.loads(dsse.parse_envelope(loads_strict(raw), str(envelope)).body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    for subject in statement.get("subject") or [] if isinstance(statement, dict) else []:
        if isinstance(subject, dict) and subject.get("name") == name and isinstance(subject.get("digest"), dict):
            value = subject["digest"].get("sha256")
            return value if isinstance(value, str) else None
    return None


def read_shard(folder: Path, what: str = "merge") -> tuple[mg.ShardReport, str]:
    """One signed shard folder: its ShardReport and its report.json's sha256; one-line UserError
    when it is unreadable, unsigned, or edited after signing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"{what}: {folder} is not a report folder")
    read = submission.read_folder(folder)
    digests = read.digests()
    for name in att.REPORT_FILES:
        signed = _signed_digest(folder, name)
        if signed is None:
            raise UserError(f"{what}: {folder}: {name} is not signed (no {att.ENVELOPE_NAME} naming it): "
                            "sign each shard first (ray-conformance sign)")
        if signed != digests[name]:
            raise UserError(f"{what}: {folder}: {name} is not the file its {att.ENVELOPE_NAME} signs "
                            "(edited after signing)")
    return mg.ShardReport(folder.name, read.report, read.raw["junit.xml"]), digests[att.REPORT_JSON]


# The claimed release's checklist and ladder (conformance.catalog.releases.load_release_data).
ReleaseData = tuple[data_module.Checklist, data_module.Ladder]


def plan_lines_problems(found: Mapping[int, mg.ShardReport], release: ReleaseData | None) -> list[str]:
    """The recorded plan's structure against the claimed release's checks and core
    (report.merge.plan_problems), one line each."""
    if release is None:
        return ["the shards' plan cannot be judged: the release's checklist and ladder are not available"]
    checklist, ladder = release
    return [p.line() for p in mg.plan_problems(found, set(checklist.by_id()), ladder.knobs.shards.core)]


def merge_folders(folders: Sequence[Path], out: Path, area_docs: Mapping[str, str]) -> dict[str, Any]:
    """Merge the shard folders into `out` (a new or empty folder); return the merged report.
    Refuses in one line (UserError): a shard set with a hole, a duplicate, a shard of another
    run or release, shards of two machines that disagree."""
    from conformance.catalog.releases import current_version
    from conformance.report.build import validate_report, write_html, write_json, write_markdown

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"merge: --out {out} exists and is not an empty folder (nothing is overwritten)")
    read = [read_shard(Path(f)) for f in folders]
    suite = read[0][0].report.get("suite") if read else None
    version = str(suite.get("version")) if isinstance(suite, Mapping) else ""
    if version != current_version():   # every other shard's is this one's (SAME_RUN)
        raise UserError(f"merge: suite.version: the shards ran release {terminal(version, limit=60)}, this suite is "
                        f"{current_version()} (merge with the suite that ran them)")
    # the release the shards claim is this suite's data (current_version is its digests' release),
    # so its ladder's knobs are the claimed release's, released or awaiting the release step
    data = data_module.load_suite_data()
    release = (data.checklist, data.ladder)
    found, problems = mg.shard_set_problems([r for r, _ in read], release[1].knobs.shards)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(terminal(f"merge: refused: {problems[0].line()}{more}", limit=600))
    plan = plan_lines_problems(found, release)
    if plan:
        more = f" (and {len(plan) - 1} more)" if len(plan) > 1 else ""
        raise UserError(terminal(f"merge: refused: {plan[0]}{more}", limit=600))
    digest_of = {id(r.report): d for r, d in read}
    digests = {i: digest_of[id(s.report)] for i, s in found.items()}
    merged = mg.merge_reports(found, digests, data, area_docs)
    validate_report(merged)
    out.mkdir(parents=True, exist_ok=True)
    write_json(merged, out)
    write_markdown(merged, out)
    (out / "junit.xml").write_bytes(mg.merged_junit(merged, found))
    write_html(merged, out)
    folder_of = {id(r.report): Path(f) for (r, _), f in zip(read, folders)}
    for i, s in found.items():
        dest = out / SHARDS_DIR / f"{i}-of-{len(found)}"
        dest.mkdir(parents=True)
        for name in SHARD_FILES:
            src = folder_of[id(s.report)] / name
            if src.is_file() and not src.is_symlink():
                shutil.copyfile(src, dest / name)
    return merged


# ------------------------------------------------------------------ verify

def is_merged(report: Mapping[str, Any]) -> bool:
    """A report `merge` made: its selection lists shards. JSON as signed: a release before merging
    did not type selection.shards, so its presence (in any form) is what marks one."""
    selection = report.get("selection")
    return isinstance(selection, Mapping) and "shards" in selection


def shard_run_problems(report: Mapping[str, Any], published: str | None) -> list[str]:
    """Why a shard is not a whole run's part: its own run cut short or altered (interrupted, not
    collected whole, an argument beyond the definition); its slice and a --check narrowing are
    the merge's to judge (the merged report's selection). JSON: the shard's report is rebuilt
    without those arguments for trust.run_problems, which judges the JSON as signed."""
    from conformance.run.certification import NARROWING_OPTIONS, legacy_forms
    from conformance.signing.trust import run_problems

    selection = dict(report.get("selection") or {})
    selection["args"] = [a for a in selection.get("args") or []
                         if not (isinstance(a, str) and a.partition("=")[0] in NARROWING_OPTIONS)]
    return run_problems({**report, "selection": selection}, legacy=legacy_forms(published))


def shard_lines(folder: Path, report: Mapping[str, Any], verify_one: Callable[[Path], Any], published: str | None,
                release: ReleaseData | None = None) -> list[tuple[str, bool, str]]:
    """verify's `shards` line of a merged report in `folder`: every listed shard in
    shards/<i-of-N>/ (and no other), each verified by `verify_one` (every line but its own
    selection passes), its report.json the one merged, the set one run of one machine under the
    claimed release's policy and its plan a partition of the release's checks (`release`: its
    checklist and ladder; report.merge), and this report the merge of them. `report` is JSON:
    selection.shards is judged as signed (see is_merged)."""
    listed = [e for e in (report.get("selection") or {}).get("shards") or [] if isinstance(e, Mapping)]
    root = folder / SHARDS_DIR
    present = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    names = [str(e.get("shard")) for e in listed]
    problems: list[str] = []
    if not listed:   # a merge of nothing is no run (and the set's rules read at least one shard)
        problems.append("selection.shards lists no shard: a merged report names every shard it merges")
    if sorted(names) != present:
        problems.append(f"{SHARDS_DIR}/ holds {', '.join(present) or 'nothing'}; selection.shards lists "
                        f"{', '.join(names) or 'none'}")
    shard_reports: list[mg.ShardReport] = []
    digests: dict[str, str] = {}
    for entry, name in zip(listed, names):
        path = root / name
        if name not in present:
            continue
        try:
            shard, digest = read_shard(path, "verify")
        except UserError as exc:
            problems.append(f"shard {name}: {exc}")
            continue
        if digest != entry.get("report_sha256"):
            problems.append(f"shard {name}: report.json has sha256 {digest[:12]}…, the merged report names "
                            f"{str(entry.get('report_sha256'))[:12]}…")
        if is_merged(shard.report):
            problems.append(f"shard {name} is itself a merged report")
            continue
        result = verify_one(path)
        # its selection is the merge's to judge; a shard that started no cluster corroborates no
        # hardware fact (the merged report states the observing shard's, cross-checked there)
        excused = {"selection"} | ({"cross-check"} if not mg.observed_cluster(shard.report) else set())
        failed = [line for line in result.lines if not line.ok and line.name.split(" ")[0] not in excused]
        problems += [f"shard {name}: {line.name}: {line.detail}" for line in failed[:3]]
        problems += [f"shard {name}: selection: {p}" for p in shard_run_problems(shard.report, published)]
        shard_reports.append(shard)
        digests[name] = digest
    if not problems and shard_reports and release is None:
        problems.append("the shards cannot be judged: the release's checklist and ladder are not available")
    elif not problems and shard_reports and release is not None:
        found, rules = mg.shard_set_problems(shard_reports, release[1].knobs.shards)
        rules_lines = [p.line() for p in rules] or plan_lines_problems(found, release)
        problems += rules_lines
        if not rules_lines:
            problems += merge_mismatch(report, found, {i: digests[f"{i}-of-{len(found)}"] for i in found})
    if problems:
        return [("shards", False, terminal("; ".join(problems), limit=900))]
    return [("shards", True, f"{len(names)} shards, each signed and verified, one run of one machine: one plan of the "
                             "release's checks, every check of it once, the core agreeing, within the release's window; "
                             "this report is their merge")]


# The merged report's fields the merge sets from its shards (tier, tiers, capabilities and summary
# are recomputed by verify's own lines).
MERGED_FIELDS = ("checks", "selection", "started_at", "finished_at", "environment", "shape", "manifest",
                 "manifest_sha256", "suite")


def merge_mismatch(report: Mapping[str, Any], found: Mapping[int, mg.ShardReport], digests: Mapping[int, str]) -> list[str]:
    """The fields of `report` that are not the merge of `found` ([] when it is)."""
    checks = mg.merged_checks(found)
    started_at, finished_at, _ = mg.first_last(found)
    first = mg.observer(found).report
    expected = {"checks": checks, "selection": mg.merged_selection(found, checks, digests), "started_at": started_at,
                "finished_at": finished_at, "environment": first.get("environment"), "shape": first.get("shape"),
                "manifest": first.get("manifest"), "manifest_sha256": first.get("manifest_sha256"),
                "suite": first.get("suite")}
    bad = [f for f in MERGED_FIELDS if json.dumps(report.get(f), sort_keys=True) != json.dumps(expected[f], sort_keys=True)]
    return [f"the merged report's {', '.join(bad)} is not the merge of its shards"] if bad else []
