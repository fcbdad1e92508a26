"""Verify a signed report: every check on its own line, nothing trusted that can be recomputed.

Checks, in order:
  signature     a DSSE signature over PAE(payloadType, payload) by a trusted key
  identity      the signing key is bound (keyring `vendors`) to the report's manifest vendor
  revocation    a key revoked from a date (keyring `revoked`) counts only for reports signed before
                it (signing/revocation.py: the SIG's list of kept reports, else the release's
                publication and finished_at bound the signing date)
  names         the manifest's vendor and product print as they compare (conformance/identity.py)
  bundle        a report.sigstore.json beside report.intoto.json carries the same envelope
  statement     payloadType, Statement type and predicate type are the ones we sign
  subject NAME  each signed file digest equals the file beside the envelope (one line per subject)
  schema        report.json is valid against the release's report schema
  trust         every field of report.json and of the Statement has a trust status
                (schemas/report.trust.yaml: recomputed, cross-checked, signed claim, informational)
  release       the suite version is a known release and the data digests report.json records
                (checklist, tiers, report schema, waivers) are that release's
  release-files the release's label vocabulary and capability profiles are read from the files with
                the release's digests (never the installed ones)
  manifest      the embedded manifest is valid against the release's manifest schema
  environment   Python and torch are inside the suite's declared support (signing/embedded.py)
  claims        the signed statement agrees with report.json (vendor, product, finishedAt, tier,
                manifest digest, Ray version, environment, configuration = the release's data
                files), and every derived field (predicate lists and result, summary counts)
                equals what the per-check outcomes give
  cross-check F each fact several fields state (nodes, devices per node, domain labels, resource,
                accelerator type) is stated alike by all of them, a per-node fact on every node;
                the winner, never one field alone nor a contradicted fact, is the tier input
  time          started_at <= finished_at <= the verifier's clock (and --at), on or after the
                release's publication
  tier          the tier recomputed with compute_tiers equals the claimed tier and per-tier
                detail; waiver semantics (blocks_tier, expiry) come from the release's waivers
                file, never from the report's copy
  completeness  exactly the release's active checks are present, including all the claimed tier needs,
                each with the release's title, area and level
  waivers       each waived check cites a waiver listed in the release's waivers.yaml, unexpired at finished_at
  validity      the run's Ray version is a release version (N.N.N) the release certifies; with `at`, every waiver is
                still unexpired and the tier still holds on that date ("recertification required")
  evidence      each judged check's outcome is what its judge gives on its metrics; every check's
                figures plausible, scenarios of a pass ok, references the manifest's, tests of
                its own area (signing/evidence.py)
  summary       the summary counts are recomputed from the per-check outcomes, every key present
  shards        a merged report (`merge`): every shard in shards/<i-of-N>/ verified, one run of one
                machine, every check once, within the window, and this report their merge
                (signing/shards.py, report/merge.py)
  selection     the run executed the whole checklist, uninterrupted, with no recorded pytest
                argument that narrows it, else "not a certification run"

Unreadable input (missing files, an envelope that is not JSON or not DSSE) raises UserError
(exit 2); a failed check is a FAIL line (exit 1).
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.catalog import capabilities, data, releases, strict_input
from conformance.catalog.ladder import compute_tiers, required_checks
from conformance.catalog.strict_input import as_list, as_map
from conformance.errors import UserError
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing import dsse, embedded, evidence, revocation, submission, trust
from conformance.signing.canonical import loads_strict
from conformance.signing.keyring import TrustedKey

_NOT_CHECKED = "not checked: report.json is not schema-valid"
MAX_ARTIFACT_BYTES = 8 * 1024 ** 3  # the plugin artifact beside the report is hashed in a stream


@dataclass(frozen=True)
class Line:
    name: str
    ok: bool
    detail: str

    def render(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {terminal(self.name, limit=200)}: {terminal(self.detail)}"


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


def _envelope_doc(path: Path, within: Path | None = None) -> Any:
    raw = att.read_file(path, "verify", max_bytes=att.MAX_ENVELOPE_BYTES, within=within)
    try:
        return loads_strict(raw)
    except UnicodeDecodeError:
        raise UserError(f"{path}: envelope is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: envelope is not valid JSON (truncated?) at line {exc.lineno} "
                        f"column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise UserError(f"{path}: envelope is not valid JSON: {exc}") from None


def read_envelope(path: Path, within: Path | None = None) -> dsse.Envelope:
    return dsse.parse_envelope(_envelope_doc(path, within), str(path))


def _check_bundle(v: Verification, envelope_path: Path, env: dsse.Envelope) -> None:
    """The other file of the pair (bundle beside envelope, or envelope beside bundle) must agree."""
    names = (att.ENVELOPE_NAME, att.BUNDLE_NAME)
    if envelope_path.name not in names:
        return
    other = envelope_path.with_name(names[1 - names.index(envelope_path.name)])
    if not (other.exists() or other.is_symlink()):
        return
    bundle_path = other if other.name == att.BUNDLE_NAME else envelope_path
    try:
        bundle_doc = _envelope_doc(bundle_path, within=envelope_path.parent)
        if not isinstance(bundle_doc, dict) or bundle_doc.get("mediaType") != dsse.BUNDLE_MEDIA_TYPE \
                or not isinstance(bundle_doc.get("dsseEnvelope"), dict):
            raise UserError(f"{bundle_path.name} is not a Sigstore bundle v0.3 with a dsseEnvelope")
        same = (read_envelope(other, within=envelope_path.parent) == env)
    except UserError as exc:
        v.add("bundle", False, str(exc))
        return
    v.add("bundle", same, f"{att.BUNDLE_NAME} carries the same envelope as {att.ENVELOPE_NAME}" if same else
          f"{att.BUNDLE_NAME} and {att.ENVELOPE_NAME} carry different envelopes")


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
            actual: str | None
            actual, where = file_digests[name], "file"
        else:  # the plugin artifact: check the file when it sits beside the envelope
            beside = folder / name
            if "/" not in name and "\\" not in name and not name.startswith(".") and beside.is_file():
                try:
                    actual, where = strict_input.sha256_regular(beside, "verify", max_bytes=MAX_ARTIFACT_BYTES,
                                                                within=folder), "file"
                except UserError as exc:
                    v.add(f"subject {name}", False, str(exc))
                    continue
            else:
                actual, where = art["sha256"] if art else None, "report.json plugin_artifact (file not present)"
        if actual == claimed:
            v.add(f"subject {name}", True, f"sha256 {_short(actual)} matches the {where}")
        else:
            v.add(f"subject {name}", False, f"{where} has sha256 {_short(actual)}, signed {_short(claimed)}")


def _schema_errors(report: Any, schema_path: Path) -> str | None:
    return submission.schema_problem(report, schema_path)


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


def _check_tier(v: Verification, report: Mapping[str, Any], checklist: data.Checklist, ladder: data.Ladder,
                checks: Sequence[Mapping[str, Any]] | None = None, inputs: ReleaseInputs | None = None) -> None:
    checks = report["checks"] if checks is None else checks
    inputs = inputs or ReleaseInputs()
    recomputed, detail = compute_tiers(checks, checklist, ladder, trust.tier_context(report, inputs.domain_keys))
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
    v.add("tier", True, f"recomputed {_tier(recomputed)} equals the claim; per-tier detail matches ({len(detail)} tiers)"
                        f"{_on_vendor_word(detail, checklist)}")
    _check_capabilities(v, report, checklist, inputs)


def _on_vendor_word(detail: Sequence[Mapping[str, Any]], checklist: data.Checklist) -> str:
    """Which checks the achieved tiers require rest on the vendor's word (no judge recomputes
    them: conformance/report/judges.py)."""
    from conformance.report.judges import judge_for

    required = list(dict.fromkeys(c for t in detail if t.get("achieved") for c in t.get("required_checks") or []))
    released = checklist.by_id()
    word = sorted(c for c in required if c in released and judge_for(released[c]) is None)
    if not required:
        return ""
    if not word:
        return f"; every one of its {len(required)} required checks is recomputed from evidence"
    return (f"; {len(word)} of its {len(required)} required checks rest on the vendor's word: "
            f"{', '.join(word[:12])}{' ...' if len(word) > 12 else ''}")


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
    released = checklist.by_id()
    differing = [f"{c['id']}.{key}" for c in report["checks"] if str(c["id"]) in released
                 for key in ("title", "area", "level") if c.get(key) != getattr(released[str(c["id"])], key)]
    if differing:
        problems.append(f"title/area/level differ from the release's checklist: "
                        f"{terminal(', '.join(differing[:8]), limit=300)}{' …' if len(differing) > 8 else ''}")
    if problems:
        v.add("completeness", False, "; ".join(problems))
    else:
        v.add("completeness", True, f"all {len(expected)} checks of the release are present")


def _finished_date(report: Mapping[str, Any]) -> date | None:
    """finished_at's UTC date (None when it is not a date-time the code can compute with)."""
    value = report.get("finished_at")
    try:
        return strict_input.utc_date(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _listed_waiver(check: Mapping[str, Any], known: Sequence[data.Waiver]) -> data.Waiver | None:
    w = check.get("waiver")
    if not isinstance(w, dict):
        return None
    return next((k for k in known if k.check == check.get("id") == w.get("check") and k.issue == w.get("issue")), None)


def effective_checks(checks: Sequence[Mapping[str, Any]], known: Sequence[data.Waiver],
                     when: date | None) -> list[dict[str, Any]]:
    """The checks with each waiver replaced by the release's: blocks_tier from the released file;
    a waiver that is not listed, or expired at `when`, blocks (never counts toward a tier)."""
    out = []
    for c in checks:
        c = dict(c)
        if c.get("outcome") == "waived":
            listed = _listed_waiver(c, known)
            expired = listed is not None and when is not None and when > date.fromisoformat(listed.expires)
            c["waiver"] = {**(as_map(c.get("waiver"))),
                           "blocks_tier": listed is None or expired or listed.blocks_tier}
        out.append(c)
    return out


def _check_waivers(v: Verification, report: Mapping[str, Any], known: Sequence[data.Waiver] | None,
                   why_unknown: str = "") -> None:
    waived = [c for c in report["checks"] if c.get("outcome") == "waived"]
    if not waived:
        v.add("waivers", True, "no waived checks")
        return
    if known is None:
        v.add("waivers", False, f"cannot check: {why_unknown}")
        return
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
            problems.append(f"{c['id']}: waiver {w['issue']} is not in tiers/waivers.yaml of the release")
            continue
        # The listed expiry is authoritative, not the copy in the report.
        if when is not None and when > date.fromisoformat(listed.expires):
            problems.append(f"{c['id']}: waiver {w['issue']} expired {listed.expires}, before finished_at {when}")
    if problems:
        v.add("waivers", False, "; ".join(problems))
    else:
        v.add("waivers", True, f"{len(waived)} waived check(s), each listed in the release's tiers/waivers.yaml "
                               f"and unexpired at {when}")


_EXTENSION_FIELDS = {"schemaVersion", "suiteVersion", "tier", "reportSha256", "finishedAt", "manifestSha256",
                     "rayVersion", "environmentSha256", "vendor", "product"}


def _check_claims(v: Verification, st: Mapping[str, Any], report: Mapping[str, Any], report_sha256: str,
                  schema_sha256_fallback: str, release_data: Mapping[str, str] | None = None) -> None:
    pred, ext = st["predicate"], st["predicate"][att.EXTENSION]
    problems = []
    if ext.get("schemaVersion") != att.EXTENSION_SCHEMA_VERSION or "schemaVersion" not in ext:
        problems.append(f"{att.EXTENSION}.schemaVersion is not {att.EXTENSION_SCHEMA_VERSION}")
    unknown = sorted(set(ext) - _EXTENSION_FIELDS)
    if unknown:
        problems.append(f"{att.EXTENSION} has unknown field(s) {terminal(unknown[:5], limit=200)}")
    if ext.get("reportSha256") != report_sha256:
        problems.append(f"reportSha256 {_short(ext.get('reportSha256'))} is not report.json's {_short(report_sha256)}")
    if ext.get("tier") != report.get("tier"):
        problems.append(f"statement tier {ext.get('tier')!r} differs from report.json's {report.get('tier')!r}")
    if ext.get("suiteVersion") != report["suite"]["version"]:
        problems.append(f"statement suiteVersion {ext.get('suiteVersion')!r} differs from report.json's")
    manifest = as_map(report.get("manifest"))
    environment = as_map(report.get("environment"))
    for key, value in (("vendor", manifest.get("vendor")), ("product", manifest.get("product")),
                       ("finishedAt", report.get("finished_at")), ("manifestSha256", report.get("manifest_sha256")),
                       ("rayVersion", environment.get("ray")), ("environmentSha256", att.environment_sha256(report))):
        if ext.get(key) != value:
            problems.append(f"statement {key} {terminal(repr(ext.get(key)), limit=80)} differs from "
                            f"report.json's {terminal(repr(value), limit=80)}")
    want_config = att.configuration(report, schema_sha256_fallback, release_data)
    config = as_list(pred.get("configuration"))
    if not isinstance(pred.get("configuration"), list) \
            or not all(isinstance(rd, dict) and isinstance(rd.get("name"), str) for rd in config):
        problems.append("configuration is not a list of named ResourceDescriptors")
    got_config = {rd["name"]: rd for rd in config if isinstance(rd, dict) and isinstance(rd.get("name"), str)}
    for rd in want_config:
        if rd["name"] == att.SCHEMA_RD and "report_schema_sha256" not in report["suite"]:
            continue  # the signer filled in its own schema digest; the release check covers schemas
        if got_config.get(rd["name"]) != rd:
            problems.append(f"configuration {rd['name']} does not match report.json and the release")
    extra = sorted(set(got_config) - {rd["name"] for rd in want_config})
    if extra or len(config) != len(got_config):
        problems.append(f"configuration has unexpected or repeated descriptors {terminal(extra[:5], limit=200)}")
    lists = att.outcome_lists(report["checks"])
    for key, ids in lists.items():
        signed_ids = pred.get(key)
        if not isinstance(signed_ids, list) or not all(isinstance(i, str) for i in signed_ids) \
                or sorted(signed_ids) != ids:
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


def _check_identity(v: Verification, env: dsse.Envelope, trusted: Sequence[TrustedKey],
                    report: Mapping[str, Any]) -> None:
    """Signature by a trusted key, and that key bound to the report's vendor (naming both if not)."""
    signers = dsse.valid_signers(env, trusted) if trusted else []
    manifest = as_map(report.get("manifest"))
    vendor = manifest.get("vendor")
    # a key revoked from a date is the last choice: a report signed by the old and the new key
    # of a rotation is judged by the new one
    bound = sorted((k for k in signers if k.may_sign_for(vendor)), key=lambda k: k.revoked is not None)
    signer = bound[0] if bound else (signers[0] if signers else None)
    v.signer = signer
    if signer is None:
        hints = ", ".join(sorted({s.keyid for s in env.signatures if s.keyid})[:5]) or "none"
        v.add("signature", False, f"no valid signature by any of {len(trusted)} trusted key(s) "
                                  f"(envelope keyids: {hints})")
        return
    v.add("signature", True, f"signed by {signer.name} ({signer.keyid}, {signer.algorithm})")
    if signer.vendors is None:
        v.add("identity", True, f"key {signer.name} was given with --key (not bound to vendors; "
                                f"a --keyring binds keys to vendors)")
    elif bound:
        v.add("identity", True, f"key {signer.name} is bound to vendor {vendor!r}")
    else:
        v.add("identity", False, f"report vendor {vendor!r} is not a vendor key {signer.name} may sign for "
                                 f"(bound to {', '.join(map(repr, signer.vendors))})")


def _check_names(v: Verification, report: Mapping[str, Any]) -> None:
    """The vendor and product print as they compare: nothing invisible, no word mixing scripts."""
    problem = submission.name_problem(report)
    v.add("names", problem is None, problem if problem else
          "manifest.vendor and manifest.product have no character that prints as nothing or as a plain space, "
          "and no word mixes scripts")


def _check_revocation(v: Verification, report: Mapping[str, Any], report_sha256: str,
                      release: releases.Release | None) -> None:
    """A revoked signing key counts only for reports signed before its revocation (signing/revocation.py)."""
    if v.signer is None or v.signer.revoked is None:
        return
    ok, why = revocation.judge(v.signer, report, report_sha256, release.version if release else None,
                               release.published_date() if release else None)
    v.add("revocation", ok, why)


def _release_waivers(release: releases.Release | None, releases_file: Path,
                     override: Path | None) -> tuple[list[data.Waiver] | None, str]:
    """The release's waivers (None with the reason when they cannot be had)."""
    if override is not None:
        return data.load_waivers(Path(override))[0], ""
    if release is None:
        return None, "unknown release"
    path = releases.release_file(release, "waivers_sha256", releases_file)
    if path is None:
        return None, (f"this verifier lacks release {release.version}'s waivers.yaml "
                      f"(put it in {releases.archived_path(releases_file, release.version, 'waivers_sha256').parent})")
    return data.load_waivers(path)[0], ""


def _check_validity(v: Verification, report: Mapping[str, Any], release: releases.Release | None,
                    release_data: tuple[data.Checklist, data.Ladder] | None,
                    known: Sequence[data.Waiver] | None, at: date | None,
                    domain_keys: frozenset[str] | None = None) -> None:
    """Does the certificate still hold: Ray inside the release's window, waivers alive at `at`."""
    if release is None:
        v.add("validity", False, "cannot check: unknown release")
        return
    ray = (report.get("environment") or {}).get("ray")
    problems = []
    not_release = trust.ray_version_problem(ray)
    if not_release:
        problems.append(not_release)
    elif not release.certifies_ray(ray):
        problems.append(f"Ray {ray!r} is outside the versions release {release.version} certifies "
                        f"({', '.join(release.ray_versions)})")
    if at is not None:
        waived = [c for c in report["checks"] if c.get("outcome") == "waived"]
        for c in waived:
            listed = _listed_waiver(c, known or [])
            if listed is not None and at > date.fromisoformat(listed.expires):
                problems.append(f"{c['id']}: waiver {listed.issue} expired {listed.expires}")
        if release_data is not None and waived:
            tier, _ = compute_tiers(effective_checks(report["checks"], known or [], at), *release_data,
                                    trust.tier_context(report, domain_keys))
            if tier != report.get("tier"):
                problems.append(f"as of {at} the results give {_tier(tier)}, not {_tier(report.get('tier'))}")
    when = f" as of {at}" if at else ""
    if problems:
        v.add("validity", False, f"recertification required{when}: {'; '.join(problems)}")
    else:
        v.add("validity", True, f"Ray {ray} is within release {release.version}'s window "
                                f"({', '.join(release.ray_versions)}){'; waivers unexpired' + when if at else ''}")


def _check_facts(v: Verification, report: Mapping[str, Any], domain_keys: frozenset[str] | None = None) -> None:
    """One line per fact several fields state; a contradiction names both fields."""
    for fact in trust.facts(report, domain_keys=domain_keys).values():
        if fact.problem:
            v.add(f"cross-check {fact.name}", False, fact.problem)
        elif fact.sources:
            v.add(f"cross-check {fact.name}", True, f"{len(fact.sources)} fields agree: {fact.value!r} "
                                                   f"({', '.join(fact.sources)})")
        else:
            v.add(f"cross-check {fact.name}", True, "no field states it (not observed; no check is ruled out by it)")


def _check_time(v: Verification, report: Mapping[str, Any], release: releases.Release | None,
                now: datetime, at: date | None) -> None:
    published = release.published_date() if release is not None else None
    problems = trust.time_problems(report, now=now, at=at, published=published)
    if problems:
        v.add("time", False, "; ".join(problems))
    else:
        v.add("time", True, f"started_at <= finished_at <= the verifier's clock{' and --at' if at else ''}"
                            + (f"; on or after the release's publication ({published})" if published else ""))


def _check_superseded(v: Verification, report: Mapping[str, Any], known: Mapping[str, releases.Release]) -> None:
    """The release the report claims was still the newest when the run started."""
    version = as_map(report.get("suite")).get("version")
    started, _ = trust.parse_time(report, "started_at")
    problem = trust.superseded_problem(version, started, known)
    v.add("superseded", problem is None, problem or
          f"no release after {terminal(repr(version), limit=60)} was published before the run started")


def _check_companions(v: Verification, report: Mapping[str, Any], raw: Mapping[str, bytes]) -> None:
    """junit.xml and report.md are signed too: each states exactly what report.json states."""
    from conformance.signing.companions import companion_lines

    for name, ok, detail in companion_lines(report, raw["junit.xml"], raw["report.md"], releases.current_version()):
        v.add(name, ok, detail)


def _check_trust(v: Verification, report: Mapping[str, Any], st: Mapping[str, Any] | None) -> None:
    problems = [p for p in (submission.trust_problem("report", report),
                            submission.trust_problem("statement", st) if st is not None else None) if p]
    v.add("trust", not problems, "; ".join(problems) if problems else
          "every field of report.json and the Statement has a trust status (schemas/report.trust.yaml)")


@dataclass(frozen=True)
class ReleaseInputs:
    """The release's own files verify judges facts and capabilities with (never the installed
    ones when the release binds them). None: not available (a FAIL line says why)."""

    domain_keys: frozenset[str] | None = None
    profiles: list[dict[str, Any]] | None = None
    profiles_note: str = ""
    # The release predates binding tiers/capabilities.yaml: the verifier's copy may hold profiles
    # that did not exist then, so only the profiles the report claims are judged with it.
    claimed_only: bool = False

    def profiles_for(self, report: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The profiles a report's capabilities are recomputed with: the release's, or (for a
        release that predates binding them) this verifier's copy narrowed to the ones it claims."""
        if self.profiles is None or not self.claimed_only:
            return self.profiles
        claimed = report.get("capabilities")
        if not isinstance(claimed, list):
            return self.profiles
        names = {c.get("name") for c in claimed if isinstance(c, Mapping)}
        return [p for p in self.profiles if p.get("name") in names]


def release_inputs(release: releases.Release | None, releases_file: Path) -> tuple[ReleaseInputs, list[str]]:
    """The release's label vocabulary (domain keys) and capability profiles, each read from the
    file with the release's digest, and the release files this verifier lacks. Verify and review
    both recompute with these, so they never judge one report with two vocabularies."""
    if release is None:
        return ReleaseInputs(), []
    problems, note = [], ""
    labels = releases.release_file(release, "labels_sha256", releases_file)
    if labels is None:
        problems.append("tiers/labels.yaml")
    profiles: list[dict[str, Any]] | None = None
    if release.capabilities_sha256 is None:
        profiles = capabilities.load_profiles()
        note = (f" (release {release.version} predates binding tiers/capabilities.yaml: the profiles it claims are "
                "judged with this verifier's copy)")
    else:
        found = releases.release_file(release, "capabilities_sha256", releases_file)
        if found is None:
            problems.append("tiers/capabilities.yaml")
        else:
            profiles = _profiles_at(str(found), found.stat().st_mtime_ns, found.stat().st_size)
    return (ReleaseInputs(trust.domain_keys_of(labels) if labels else None, profiles, note,
                          claimed_only=release.capabilities_sha256 is None), problems)


def _release_inputs(v: Verification, release: releases.Release | None, releases_file: Path) -> ReleaseInputs:
    """release_inputs, with its `release-files` line."""
    inputs, problems = release_inputs(release, releases_file)
    if release is None:
        return inputs
    if problems:
        v.add("release-files", False, f"this verifier lacks release {release.version}'s {' and '.join(problems)} "
                                      f"(put them in {releases.archived_path(releases_file, release.version, 'labels_sha256').parent})")
    else:
        v.add("release-files", True, f"label vocabulary and capability profiles read from release {release.version}'s files"
                                     + inputs.profiles_note)
    return inputs


@functools.lru_cache(maxsize=8)
def _profiles_at(path: str, mtime_ns: int, size: int) -> list[dict[str, Any]]:
    """A release's profiles file, parsed and validated once per file version."""
    return capabilities.load_profiles(Path(path))


def _check_capabilities(v: Verification, report: Mapping[str, Any], checklist: data.Checklist,
                        inputs: ReleaseInputs) -> None:
    """The claimed profiles, recomputed with the release's profiles file (one entry per profile)."""
    if inputs.profiles is None:
        v.add("capabilities", False, "cannot recompute: the release's tiers/capabilities.yaml is not available")
        return
    v.add("capabilities", *capabilities.verify_claim(report, checklist, inputs.profiles_for(report) or []))


def _check_embedded(v: Verification, report: Mapping[str, Any], release: releases.Release | None,
                    releases_file: Path) -> None:
    """`manifest`: the embedded manifest against the release's manifest schema; `environment`:
    Python and torch inside the suite's declared support."""
    schema = releases.release_schema_file(release, "manifest.schema.json", releases_file) if release else None
    if release is None:
        v.add("manifest", False, "cannot check: unknown release")
    elif schema is None:
        v.add("manifest", False, f"this verifier lacks release {release.version}'s schemas/manifest.schema.json")
    else:
        problem = embedded.manifest_problem(report, schema)
        v.add("manifest", problem is None, f"the embedded manifest is not one release {release.version} accepts: {problem}"
              if problem else f"the embedded manifest is valid against release {release.version}'s manifest schema")
    problems = embedded.environment_problems(report)
    v.add("environment", not problems, "; ".join(problems) if problems else
          "Python and torch are inside the suite's declared support")


def verify_path(path: Path, trusted: Sequence[TrustedKey], *, releases_file: Path | None = None,
                waivers_file: Path | None = None, at: date | None = None,
                now: datetime | None = None) -> Verification:
    """Verify the envelope at `path` (a report folder or the envelope file) against `trusted` keys.

    Waivers come from the release's waivers file (`waivers_file` replaces it: tests, or a SIG's
    own copy). `at`: judge waivers and the Ray window as of that date (`verify --at`). `now`: the
    verifier's clock (tests pin it); no report may finish after it.
    """
    envelope_path = locate_envelope(Path(path))
    folder = envelope_path.parent
    env = read_envelope(envelope_path, within=folder if Path(path).is_dir() else None)
    read = submission.read_folder(folder)
    report = read.report
    file_digests = read.digests()
    releases_file = Path(releases_file or releases.default_path())
    known_releases = releases.load_releases(releases_file)
    v = Verification(envelope_path, report=report)
    now = now or trust.utc_now()

    _check_identity(v, env, trusted, report)
    _check_names(v, report)
    _check_bundle(v, envelope_path, env)

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
        for name in ("release", "manifest", "environment", "claims", "tier", "completeness", "waivers", "validity",
                     "evidence", "summary", "selection"):
            if name != "claims" or st is not None:
                v.add(name, False, _NOT_CHECKED)
        return _ordered(v)
    _check_trust(v, report, st)

    suite = report["suite"]
    if release is None:
        v.add("release", False, f"suite version {version!r} is not a release this verifier knows "
                                f"({', '.join(sorted(known_releases)) or 'none listed'})")
    else:
        bad = [f"{f} {_short(suite.get(f))} is not the release's {_short(release.digest(f))}"
               for f in releases.REPORT_DIGEST_FIELDS if f in suite and suite[f] != release.digest(f)]
        v.add("release", not bad, "; ".join(bad) if bad else
              f"{version} is a known release; the report's data digests match it")
    _check_revocation(v, report, file_digests[att.REPORT_JSON], release)
    inputs = _release_inputs(v, release, releases_file)
    _check_embedded(v, report, release, releases_file)
    _check_facts(v, report, inputs.domain_keys)
    _check_time(v, report, release, now, at)
    _check_superseded(v, report, known_releases)
    _check_companions(v, report, read.raw)

    known_waivers, why_no_waivers = _release_waivers(release, releases_file, waivers_file)
    release_data = None
    if release is not None:
        try:
            release_data = releases.load_release_data(release, releases_file)
        except UserError as exc:
            v.add("tier", False, f"cannot recompute: {exc}")
            v.add("completeness", False, f"cannot check: {exc}")
    if release_data is not None:
        checks = effective_checks(report["checks"], known_waivers or [], _finished_date(report))
        _check_tier(v, report, *release_data, checks=checks, inputs=inputs)
        _check_completeness(v, report, *release_data)
    elif release is None:
        v.add("tier", False, "cannot recompute: unknown release")
        v.add("completeness", False, "cannot check: unknown release")
    if st is not None:
        _check_claims(v, st, report, file_digests[att.REPORT_JSON], data.sha256_file(schema_file),
                      release.descriptors() if release else None)
    _check_waivers(v, report, known_waivers, why_no_waivers)
    _check_validity(v, report, release, release_data, known_waivers, at, inputs.domain_keys)
    for name, ok, detail in evidence.evidence_lines(report, release_data[0] if release_data else None,
                                                    release.published if release else None):
        v.add(name, ok, detail)
    from conformance.signing import shards

    if shards.is_merged(report):   # a report `merge` made: its shards travel in shards/<i-of-N>/
        def verify_one(shard: Path) -> Verification:
            return verify_path(shard, trusted, releases_file=releases_file, waivers_file=waivers_file, at=at, now=now)

        for name, ok, detail in shards.shard_lines(folder, report, verify_one, release.published if release else None):
            v.add(name, ok, detail)
    return _ordered(v)


_ORDER = ["signature", "identity", "revocation", "names", "bundle", "statement", "subjects", "subject", "companions",
          "schema", "trust", "release", "superseded", "release-files", "manifest", "environment",
          "cross-check", "time", "claims", "tier", "capabilities", "completeness", "waivers", "validity", "evidence",
          "summary", "shards", "selection"]


def _ordered(v: Verification) -> Verification:
    v.lines.sort(key=lambda line: _ORDER.index(line.name.split(" ")[0]) if line.name.split(" ")[0] in _ORDER
                 else len(_ORDER))
    return v
