"""Verify a signed report: every check on its own line, nothing trusted that can be recomputed.

Checks, in order:
  signature     a DSSE signature over PAE(payloadType, payload) by a trusted key
  statement     payloadType, Statement type and predicate type are the ones we sign
  subject NAME  each signed file digest equals the file beside the envelope (one line per subject)
  schema        report.json is valid against the release's report schema
  release       the suite version is a known release and its checklist/tier digests are that release's
  claims        the signed statement agrees with report.json, and every derived field (predicate
                lists and result, summary counts) equals what the per-check outcomes give
  tier          the tier recomputed with compute_tiers equals the claimed tier and per-tier detail
  completeness  exactly the release's active checks are present, including all the claimed tier needs
  waivers       each waived check cites a waiver listed in tiers/waivers.yaml, unexpired at finished_at
  evidence      each judged check's outcome is what its judge gives on its metrics (signing/evidence.py)
  summary       the summary counts are recomputed from the per-check outcomes, every key present
  selection     the run executed the whole checklist, else "not a certification run"

Unreadable input (missing files, an envelope that is not JSON or not DSSE) raises UserError
(exit 2); a failed check is a FAIL line (exit 1).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import jsonschema

from conformance import data
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, evidence, releases
from conformance.signing.canonical import loads_strict
from conformance.signing.keyring import TrustedKey
from conformance.tiers import compute_tiers, context_from_report, required_checks

_NOT_CHECKED = "not checked: report.json is not schema-valid"


@dataclass(frozen=True)
class Line:
    name: str
    ok: bool
    detail: str

    def render(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.name}: {self.detail}"


@dataclass
class Verification:
    """The outcome of verifying one envelope; `ok` only if every line passed."""

    envelope: Path
    lines: list[Line] = field(default_factory=list)
    signer: TrustedKey | None = None
    report: dict[str, Any] | None = None
    recomputed_tier: str | None = None
    tier_known: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.lines) and all(line.ok for line in self.lines)

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.lines.append(Line(name, ok, detail))

    def failed(self) -> list[str]:
        return [line.name for line in self.lines if not line.ok]


def locate_envelope(path: Path) -> Path:
    """A folder means its report.intoto.json (or report.sigstore.json); a file is the envelope."""
    path = Path(path)
    if path.is_dir():
        for name in (att.ENVELOPE_NAME, att.BUNDLE_NAME):
            if (path / name).is_file():
                return path / name
        raise UserError(f"verify: {path} holds no {att.ENVELOPE_NAME}; sign it first")
    if not path.exists():
        raise UserError(f"verify: no such file or directory: {path}")
    return path


def read_envelope(path: Path) -> dsse.Envelope:
    raw = att.read_file(path, "verify")
    try:
        doc = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: envelope is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: envelope is not valid JSON (truncated?) at line {exc.lineno} "
                        f"column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise UserError(f"{path}: envelope is not valid JSON: {exc}") from None
    return dsse.parse_envelope(doc, str(path))


def _short(digest: Any) -> str:
    return f"{digest[:12]}…" if isinstance(digest, str) else repr(digest)


def _parse_statement(env: dsse.Envelope) -> tuple[dict[str, Any] | None, str]:
    """The statement (from the exact signed bytes) or None with the reason."""
    if env.payload_type != dsse.PAYLOAD_TYPE:
        return None, f"payloadType {env.payload_type!r}, expected {dsse.PAYLOAD_TYPE!r}"
    try:
        st = loads_strict(env.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "payload is not UTF-8 JSON"
    if not isinstance(st, dict):
        return None, "payload is not a JSON object"
    if st.get("_type") != att.STATEMENT_TYPE:
        return None, f"_type {st.get('_type')!r}, expected {att.STATEMENT_TYPE!r}"
    if st.get("predicateType") != att.PREDICATE_TYPE:
        return None, f"predicateType {st.get('predicateType')!r}, expected {att.PREDICATE_TYPE!r}"
    pred = st.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get(att.EXTENSION), dict) \
            or not isinstance(st.get("subject"), list):
        return None, f"statement lacks subject, predicate or predicate.{att.EXTENSION}"
    return st, "in-toto Statement v1, test-result v0.1 predicate"


def _check_subjects(v: Verification, st: Mapping[str, Any], folder: Path, report: Mapping[str, Any],
                    file_digests: Mapping[str, str]) -> None:
    signed: dict[str, Any] = {}
    for s in st["subject"]:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not isinstance(s.get("digest"), dict):
            v.add("subjects", False, "a subject is not {name, digest}")
            return
        if s["name"] in signed:
            v.add("subjects", False, f"subject {s['name']!r} listed twice")
            return
        signed[s["name"]] = s["digest"].get("sha256")
    try:
        expected = att.expected_subject_names(report)
        art = att.plugin_artifact(report)
    except UserError as exc:
        v.add("subjects", False, str(exc))
        return
    extra = sorted(set(signed) - set(expected))
    if extra:
        v.add("subjects", False, f"unexpected subject(s): {', '.join(extra)}")
    for name in expected:
        claimed = signed.get(name)
        if claimed is None:
            v.add(f"subject {name}", False, "not among the signed subjects")
            continue
        if name in file_digests:
            actual, where = file_digests[name], "file"
        else:  # the plugin artifact: check the file when it sits beside the envelope
            beside = folder / name
            if "/" not in name and "\\" not in name and not name.startswith(".") and beside.is_file():
                actual, where = data.sha256_file(beside), "file"
            else:
                actual, where = art["sha256"] if art else None, "report.json plugin_artifact (file not present)"
        if actual == claimed:
            v.add(f"subject {name}", True, f"sha256 {_short(actual)} matches the {where}")
        else:
            v.add(f"subject {name}", False, f"{where} has sha256 {_short(actual)}, signed {_short(claimed)}")


def _schema_errors(report: Any, schema_path: Path) -> str | None:
    schema = json.loads(schema_path.read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(report), key=lambda e: (-len(e.absolute_path), e.message))
    return data.format_validation_error(errors[0]) if errors else None


def _norm_tiers(detail: Sequence[Mapping[str, Any]], with_required: bool) -> list[dict[str, Any]]:
    """The structured part of per-tier detail (free-text details and reasons are not compared)."""
    out = []
    for t in detail:
        row = {"name": t.get("name"), "achieved": t.get("achieved"), "below": t.get("below"),
               "blocking": sorted((str(b.get("id")), str(b.get("outcome"))) for b in t.get("blocking") or []),
               "conditions": [(c.get("kind"), c.get("met")) for c in t.get("conditions") or []]}
        if with_required:
            row["required_checks"] = sorted(t.get("required_checks") or [])
        out.append(row)
    return out


def _first_tier_difference(claimed: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]) -> str | None:
    with_required = all("required_checks" in t for t in claimed)
    a, b = _norm_tiers(claimed, with_required), _norm_tiers(actual, with_required)
    if [t["name"] for t in a] != [t["name"] for t in b]:
        return f"claimed tiers {[t['name'] for t in a]}, the release's ladder has {[t['name'] for t in b]}"
    for ct, rt in zip(a, b):
        for key in rt:
            if ct[key] != rt[key]:
                return f"tiers[{ct['name']}].{key}: claimed {ct[key]}, recomputed {rt[key]}"
    return None


def _tier(name: Any) -> str:
    return "no tier" if name is None else repr(name)


def _why_not(detail: Sequence[Mapping[str, Any]]) -> str:
    """Why the lowest unachieved tier failed: its blocking checks and unmet conditions."""
    for t in detail:
        if t["achieved"]:
            continue
        reasons = [f"{b['id']} {b['outcome']}" for b in t["blocking"]][:5]
        reasons += [c["detail"] for c in t["conditions"] if not c["met"]]
        if t["below"]:
            reasons.append(f"tier below ({t['below']}) not achieved")
        return f"; {t['name']}: {', '.join(reasons)}"
    return ""


def _check_tier(v: Verification, report: Mapping[str, Any], checklist: data.Checklist, ladder: data.Ladder) -> None:
    recomputed, detail = compute_tiers(report["checks"], checklist, ladder, context_from_report(report))
    v.recomputed_tier, v.tier_known = recomputed, True
    claimed = report.get("tier")
    if claimed != recomputed:
        v.add("tier", False, f"claims {_tier(claimed)} but the per-check results give {_tier(recomputed)}"
                             f"{_why_not(detail)}")
        return
    diff = _first_tier_difference(report.get("tiers") or [], detail)
    if diff:
        v.add("tier", False, f"tier {_tier(claimed)} matches, but the per-tier detail does not: {diff}")
        return
    v.add("tier", True, f"recomputed {_tier(recomputed)} equals the claim; per-tier detail matches ({len(detail)} tiers)")


def _check_completeness(v: Verification, report: Mapping[str, Any], checklist: data.Checklist,
                        ladder: data.Ladder) -> None:
    ids = [str(c["id"]) for c in report["checks"]]
    expected = [c.id for c in checklist.active()]
    problems = []
    dups = sorted(i for i, n in Counter(ids).items() if n > 1)
    if dups:
        problems.append(f"duplicate ids {', '.join(dups)}")
    missing = [i for i in expected if i not in set(ids)]
    unknown = sorted(set(ids) - set(expected))
    claimed = report.get("tier")
    if claimed in ladder.names():
        needed: list[str] = []
        for tier in ladder.tiers[: ladder.names().index(claimed) + 1]:
            needed += required_checks(tier, checklist)
        lacking = [i for i in dict.fromkeys(needed) if i not in set(ids)]
        if lacking:
            problems.append(f"tier {claimed!r} needs {', '.join(lacking)}, absent from the report")
    elif claimed is not None:
        problems.append(f"claimed tier {claimed!r} is not in the release's ladder")
    if missing:
        problems.append(f"missing {len(missing)} check(s): {', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}")
    if unknown:
        problems.append(f"checks not in the release checklist: {', '.join(unknown[:10])}")
    if len(ids) != len(expected) and not (missing or unknown or dups):
        problems.append(f"{len(ids)} checks, the release has {len(expected)}")
    if problems:
        v.add("completeness", False, "; ".join(problems))
    else:
        v.add("completeness", True, f"all {len(expected)} checks of the release are present")


def _finished_date(report: Mapping[str, Any]) -> date | None:
    try:
        ts = datetime.fromisoformat(str(report.get("finished_at")).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).date()


def _check_waivers(v: Verification, report: Mapping[str, Any], waivers_file: Path | None) -> None:
    waived = [c for c in report["checks"] if c.get("outcome") == "waived"]
    if not waived:
        v.add("waivers", True, "no waived checks")
        return
    known, _ = data.load_waivers(waivers_file)
    when = _finished_date(report)
    problems = []
    if when is None:
        problems.append(f"finished_at {report.get('finished_at')!r} is not a date-time")
    for c in waived:
        w = c.get("waiver")
        if not isinstance(w, dict) or not all(isinstance(w.get(k), str) and w[k] for k in ("check", "issue")) \
                or "expires" not in w:
            problems.append(f"{c['id']}: waived without a waiver {{check, issue, expires}}")
            continue
        if w["check"] != c["id"]:
            problems.append(f"{c['id']}: cites a waiver for {w['check']}")
            continue
        listed = next((k for k in known if k.check == w["check"] and k.issue == w["issue"]), None)
        if listed is None:
            problems.append(f"{c['id']}: waiver {w['issue']} is not in tiers/waivers.yaml")
            continue
        # The listed expiry is authoritative, not the copy in the report.
        if when is not None and when > date.fromisoformat(listed.expires):
            problems.append(f"{c['id']}: waiver {w['issue']} expired {listed.expires}, before finished_at {when}")
    if problems:
        v.add("waivers", False, "; ".join(problems))
    else:
        v.add("waivers", True, f"{len(waived)} waived check(s), each listed in tiers/waivers.yaml and "
                               f"unexpired at {when}")


def _check_claims(v: Verification, st: Mapping[str, Any], report: Mapping[str, Any], report_sha256: str,
                  schema_sha256_fallback: str) -> None:
    pred, ext = st["predicate"], st["predicate"][att.EXTENSION]
    problems = []
    if ext.get("reportSha256") != report_sha256:
        problems.append(f"reportSha256 {_short(ext.get('reportSha256'))} is not report.json's {_short(report_sha256)}")
    if ext.get("tier") != report.get("tier"):
        problems.append(f"statement tier {ext.get('tier')!r} differs from report.json's {report.get('tier')!r}")
    if ext.get("suiteVersion") != report["suite"]["version"]:
        problems.append(f"statement suiteVersion {ext.get('suiteVersion')!r} differs from report.json's")
    want_config = att.configuration(report, schema_sha256_fallback)
    config = pred.get("configuration") if isinstance(pred.get("configuration"), list) else []
    got_config = {rd.get("name"): rd for rd in config if isinstance(rd, dict)}
    for rd in want_config:
        if rd["name"] == att.SCHEMA_RD and "report_schema_sha256" not in report["suite"]:
            continue  # the signer filled in its own schema digest; the release check covers schemas
        if got_config.get(rd["name"]) != rd:
            problems.append(f"configuration {rd['name']} does not match report.json")
    lists = att.outcome_lists(report["checks"])
    for key, ids in lists.items():
        signed_ids = pred.get(key) if isinstance(pred.get(key), list) else []
        if sorted(map(str, signed_ids)) != ids or len(signed_ids) != len(ids):
            problems.append(f"{key} does not match the per-check outcomes")
    tier = v.recomputed_tier if v.tier_known else report.get("tier")
    result = att.predicate_result(lists, tier)
    if pred.get("result") != result:
        problems.append(f"result {pred.get('result')!r}, the outcomes give {result!r}")
    counts = Counter(c["outcome"] for c in report["checks"])
    summary = report.get("summary") or {}
    wrong = sorted(k for k in set(summary) | set(counts) if k in summary and summary[k] != counts.get(k, 0))
    if wrong:
        problems.append(f"summary counts wrong for {', '.join(wrong)}")
    if problems:
        v.add("claims", False, "; ".join(problems))
    else:
        v.add("claims", True, f"statement matches report.json; result {result} and test lists "
                              f"match the per-check outcomes")


def verify_path(path: Path, trusted: Sequence[TrustedKey], *, releases_file: Path | None = None,
                waivers_file: Path | None = None) -> Verification:
    """Verify the envelope at `path` (a report folder or the envelope file) against `trusted` keys."""
    envelope_path = locate_envelope(Path(path))
    folder = envelope_path.parent
    env = read_envelope(envelope_path)
    raw = {name: att.read_file(folder / name, "verify") for name in att.REPORT_FILES}
    report = att.parse_report(raw[att.REPORT_JSON], str(folder / att.REPORT_JSON))
    file_digests = {name: data.sha256_bytes(content) for name, content in raw.items()}
    releases_file = Path(releases_file or releases.default_path())
    known_releases = releases.load_releases(releases_file)
    v = Verification(envelope_path, report=report)

    signer = dsse.verify_envelope(env, trusted) if trusted else None
    v.signer = signer
    if signer:
        v.add("signature", True, f"signed by {signer.name} ({signer.keyid}, {signer.algorithm})")
    else:
        hints = ", ".join(sorted({s.keyid for s in env.signatures if s.keyid})) or "none"
        v.add("signature", False, f"no valid signature by any of {len(trusted)} trusted key(s) "
                                  f"(envelope keyids: {hints})")

    st, why = _parse_statement(env)
    v.add("statement", st is not None, why)
    if st is not None:
        _check_subjects(v, st, folder, report, file_digests)

    version = (report.get("suite") or {}).get("version") if isinstance(report.get("suite"), dict) else None
    release = known_releases.get(version) if isinstance(version, str) else None
    schema_file = (releases.release_file(release, "report_schema_sha256", releases_file) if release else None)
    schema_note = "" if schema_file else " (this verifier's schema; the release's schema file is not available)"
    schema_file = schema_file or data.schema_path("report")
    problem = _schema_errors(report, schema_file)
    v.add("schema", problem is None, f"report.json: {problem}" if problem else f"report.json is valid{schema_note}")
    if problem:
        for name in ("release", "claims", "tier", "completeness", "waivers", "evidence", "summary", "selection"):
            if name != "claims" or st is not None:
                v.add(name, False, _NOT_CHECKED)
        return v

    suite = report["suite"]
    if release is None:
        v.add("release", False, f"suite version {version!r} is not a release this verifier knows "
                                f"({', '.join(sorted(known_releases)) or 'none listed'})")
    else:
        bad = [f"{f} {_short(suite.get(f))} is not the release's {_short(release.digest(f))}"
               for f in releases.DIGEST_FIELDS if f in suite and suite[f] != release.digest(f)]
        v.add("release", not bad, "; ".join(bad) if bad else
              f"{version} is a known release; checklist and tier digests match it")

    release_data = None
    if release is not None:
        try:
            release_data = releases.load_release_data(release, releases_file)
        except UserError as exc:
            v.add("tier", False, f"cannot recompute: {exc}")
            v.add("completeness", False, f"cannot check: {exc}")
    if release_data is not None:
        _check_tier(v, report, *release_data)
        _check_completeness(v, report, *release_data)
    elif release is None:
        v.add("tier", False, "cannot recompute: unknown release")
        v.add("completeness", False, "cannot check: unknown release")
    if st is not None:
        _check_claims(v, st, report, file_digests[att.REPORT_JSON], data.sha256_file(schema_file))
    _check_waivers(v, report, waivers_file)
    for name, ok, detail in evidence.evidence_lines(report, release_data[0] if release_data else None):
        v.add(name, ok, detail)
    order = ["signature", "statement", "subjects", "subject", "schema", "release", "claims", "tier",
             "completeness", "waivers", "evidence", "summary", "selection"]
    v.lines.sort(key=lambda line: order.index(line.name.split(" ")[0]))
    return v
