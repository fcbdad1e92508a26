"""sign + verify end to end: the happy path, every rejection the issue lists, and exit codes."""
from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.catalog import data, datafiles, releases
from conformance.catalog.capabilities import capabilities_path
from conformance.catalog.ladder import required_checks
from conformance.cli.signing import main
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, keys
from conformance.signing.canonical import canonical_json
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import verify_path
from signing_support import FINISHED_AT, PUBLISHED, build_report, check_ids, retier, suite, write_releases, write_report_dir, write_waivers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory) -> Path:
    """Keys of both algorithms, a spare key, and a releases file matching this checkout."""
    d = tmp_path_factory.mktemp("signing")
    for alg in keys.ALGORITHMS:
        keys.write_keypair(d / alg, alg)
    keys.write_keypair(d / "other")
    write_releases(d / "releases.yaml")
    return d


def _key(env_dir: Path, alg: str = "ecdsa-p256") -> Path:
    return env_dir / alg / keys.PRIVATE_KEY_NAME


def _pub(env_dir: Path, alg: str = "ecdsa-p256") -> Path:
    return env_dir / alg / keys.PUBLIC_KEY_NAME


def signed(env_dir: Path, folder: Path, report: dict[str, Any] | None = None, alg: str = "ecdsa-p256") -> Path:
    write_report_dir(folder, report if report is not None else build_report())
    sign_report_dir(folder, _key(env_dir, alg))
    return folder


def run_verify(env_dir: Path, target: Path, capsys, *extra: str) -> tuple[int, str, str]:
    rc = main(["verify", str(target), "--key", str(_pub(env_dir)), "--releases", str(env_dir / "releases.yaml"),
               *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def lines(out: str) -> dict[str, str]:
    """{check name: 'PASS ...'/'FAIL ...'} from verify output."""
    res = {}
    for line in out.splitlines():
        if line.startswith(("PASS ", "FAIL ")):
            res[line[5:].split(":")[0]] = line
    return res


def statement_of(folder: Path) -> dict[str, Any]:
    env = json.loads((folder / att.ENVELOPE_NAME).read_text())
    return json.loads(base64.b64decode(env["payload"]))


def resign_statement(env_dir: Path, folder: Path, mutate) -> None:
    """Re-sign a hand-edited statement with the trusted key (a dishonest but key-holding signer)."""
    st_ = statement_of(folder)
    mutate(st_)
    env = dsse.make_envelope(canonical_json(st_), keys.load_private_key(_key(env_dir)))
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(env))


# --------------------------------------------------------------------------- happy path

@pytest.mark.parametrize("alg", keys.ALGORITHMS)
def test_signed_report_verifies(env_dir: Path, tmp_path: Path, capsys, alg: str) -> None:
    folder = signed(env_dir, tmp_path / "r", alg=alg)
    rc = main(["verify", str(folder), "--key", str(_pub(env_dir, alg)),
               "--releases", str(env_dir / "releases.yaml")])
    out = capsys.readouterr().out
    got = lines(out)
    assert rc == 0, out
    assert set(got) == {"signature", "identity", "names", "bundle", "statement", "subject report.json", "subject junit.xml",
                        "subject report.md", "companions", "page", "schema", "trust", "release", "superseded", "release-files",
                        "manifest", "environment", "cross-check nodes", "cross-check devices_per_node",
                        "cross-check domain_labels", "cross-check resource", "cross-check accelerator_type", "time",
                        "claims", "tier", "capabilities",
                        "completeness", "waivers",
                        "validity", "evidence", "summary", "nodes", "selection"}
    assert all(v.startswith("PASS") for v in got.values())
    assert out.rstrip().splitlines()[-1].startswith("VERIFIED")
    assert keys.keyid(keys.load_public_key(_pub(env_dir, alg))) in got["signature"]


def test_statement_contents(env_dir: Path, tmp_path: Path) -> None:
    report = build_report({check_ids()[-1]: "skip"})
    folder = signed(env_dir, tmp_path / "r", report)
    envelope = json.loads((folder / att.ENVELOPE_NAME).read_text())
    body = base64.b64decode(envelope["payload"])
    statement = json.loads(body)
    assert body == canonical_json(statement)  # exactly the canonical bytes were signed
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert statement["subject"] == [{"name": n, "digest": {"sha256": datafiles.sha256_file(folder / n)}}
                                    for n in ("report.json", "junit.xml", "report.md")]
    pred = statement["predicate"]
    assert pred["result"] == "WARNED"
    assert pred["warnedTests"] == [check_ids()[-1]] and pred["failedTests"] == []
    assert sorted(pred["passedTests"]) == sorted(check_ids()[:-1])
    s = suite()
    assert {"name": "ray-accelerator-conformance",
            "uri": f"pkg:pypi/ray-accelerator-conformance@{report['suite']['version']}"} in pred["configuration"]
    digests = {rd["name"]: rd["digest"]["sha256"] for rd in pred["configuration"] if "digest" in rd}
    # every data file that decides a tier is bound: checklist, tiers, waivers, labels, vocabulary, profiles, all schemas
    assert digests == {"tiers/checklist.yaml": s.checklist.sha256, "tiers/tiers.yaml": s.ladder.sha256,
                       "tiers/capabilities.yaml": datafiles.sha256_file(capabilities_path()),
                       "tiers/waivers.yaml": datafiles.sha256_file(data.waivers_path()),
                       "tiers/labels.yaml": datafiles.sha256_file(datafiles.data_root() / "tiers" / "labels.yaml"),
                       "tiers/vocabulary.yaml": datafiles.sha256_file(data.vocabulary_path()),
                       **{f"schemas/{p.name}": datafiles.sha256_file(p)
                          for p in (datafiles.data_root() / "schemas").glob("*.schema.json")}}
    ext = pred["rayAcceleratorConformance"]
    assert ext["tier"] == report["tier"] and ext["reportSha256"] == datafiles.sha256_file(folder / "report.json")
    assert ext["vendor"] == "ExampleCorp" and ext["finishedAt"] == FINISHED_AT
    assert ext["manifestSha256"] == report["manifest_sha256"] and ext["rayVersion"] == report["environment"]["ray"]


def test_plugin_artifact_is_a_subject_and_checked_when_present(env_dir: Path, tmp_path: Path, capsys) -> None:
    wheel = b"plugin wheel bytes"
    art = {"name": "ray_examplenpu-0.3.0-py3-none-any.whl", "sha256": datafiles.sha256_bytes(wheel)}
    folder = signed(env_dir, tmp_path / "r", build_report(plugin_artifact=art))
    assert statement_of(folder)["subject"][0] == {"name": art["name"], "digest": {"sha256": art["sha256"]}}
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 0 and "plugin_artifact (file not present)" in lines(out)[f"subject {art['name']}"]
    (folder / art["name"]).write_bytes(wheel)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 0 and "matches the file" in lines(out)[f"subject {art['name']}"]
    (folder / art["name"]).write_bytes(wheel + b"!")
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 1 and lines(out)[f"subject {art['name']}"].startswith("FAIL")


def test_bundle_and_envelope_file_paths_verify(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    for target in (folder / att.ENVELOPE_NAME, folder / att.BUNDLE_NAME):
        rc, out, _ = run_verify(env_dir, target, capsys)
        assert rc == 0, out


def test_keyring_names_the_signer(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r", alg="ed25519")
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: someone-else\n    public_key: {_pub(env_dir, 'other')}\n    vendors: [Other]\n"
                    f"  - name: examplecorp-ci\n    public_key: {_pub(env_dir, 'ed25519')}\n"
                    f"    vendors: [ExampleCorp]\n")
    rc = main(["verify", str(folder), "--keyring", str(ring), "--releases", str(env_dir / "releases.yaml")])
    out = capsys.readouterr().out
    assert rc == 0 and "signed by examplecorp-ci" in lines(out)["signature"]


# --------------------------------------------------------------------------- rejections (exit 1)

def test_wrong_key_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    rc = main(["verify", str(folder), "--key", str(_pub(env_dir, "other")),
               "--releases", str(env_dir / "releases.yaml")])
    out = capsys.readouterr().out
    got = lines(out)
    assert rc == 1
    assert got["signature"].startswith("FAIL") and "no valid signature" in got["signature"]
    assert "REJECTED" in out.splitlines()[-1] and "signature" in out.splitlines()[-1]


@pytest.mark.parametrize("name, edit", [
    ("report.json", lambda b: b.replace(b'"outcome": "pass"', b'"outcome": "pass" ', 1)),
    ("junit.xml", lambda b: b + b"<!-- -->"),
    ("report.md", lambda b: b.replace(b"Tier", b"tier")),
])
def test_file_edited_after_signing_is_rejected_by_subject_digest(env_dir: Path, tmp_path: Path, capsys,
                                                                 name: str, edit) -> None:
    folder = signed(env_dir, tmp_path / "r")
    (folder / name).write_bytes(edit((folder / name).read_bytes()))
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1
    assert got[f"subject {name}"].startswith("FAIL") and "signed" in got[f"subject {name}"]
    assert got["signature"].startswith("PASS")


def test_report_tier_edited_after_signing_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    failing = check_ids()[0]
    folder = signed(env_dir, tmp_path / "r", build_report({failing: "fail"}))
    report = json.loads((folder / "report.json").read_text())
    report["tier"] = suite().ladder.names()[-1]
    (folder / "report.json").write_text(json.dumps(report, indent=2))
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1
    assert got["subject report.json"].startswith("FAIL")
    assert got["tier"].startswith("FAIL")


def test_inflated_tier_is_rejected_by_recomputation(env_dir: Path, tmp_path: Path, capsys) -> None:
    """A key holder signs a report that claims a higher tier than its results give."""
    s = suite()
    blocker = required_checks(s.ladder.tiers[0], s.checklist)[0]
    report = build_report({blocker: "skip"})
    assert report["tier"] is None
    top = s.ladder.names()[-1]
    report["tier"] = top
    for t in report["tiers"]:
        t["achieved"], t["blocking"], t["below"] = True, [], None
    folder = signed(env_dir, tmp_path / "r", report)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1
    assert got["signature"].startswith("PASS") and got["subject report.json"].startswith("PASS")
    assert got["tier"].startswith("FAIL") and f"claims '{top}'" in got["tier"] and blocker in got["tier"]
    assert got["claims"].startswith("FAIL") and "result 'WARNED', the outcomes give 'FAILED'" in got["claims"]


def test_doctored_per_tier_detail_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report({check_ids()[0]: "fail"})
    report["tiers"][0]["blocking"] = []  # hide the blocking check, keep the (honest) tier
    folder = signed(env_dir, tmp_path / "r", report)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1 and got["tier"].startswith("FAIL") and "per-tier detail" in got["tier"]
    assert "blocking" in got["tier"]


@pytest.mark.parametrize("field", ["checklist_sha256", "tiers_sha256"])
def test_data_digest_differing_from_the_release_is_rejected(env_dir: Path, tmp_path: Path, capsys,
                                                            field: str) -> None:
    report = build_report()
    report["suite"][field] = "0" * 64
    folder = signed(env_dir, tmp_path / "r", report)
    assert any(rd.get("digest", {}).get("sha256") == "0" * 64
               for rd in statement_of(folder)["predicate"]["configuration"])
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1
    assert got["release"].startswith("FAIL") and field in got["release"]
    assert got["signature"].startswith("PASS")


def test_release_listing_other_digests_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    rel = tmp_path / "releases.yaml"
    text = (env_dir / "releases.yaml").read_text().replace(suite().checklist.sha256, "a" * 64)
    rel.write_text(text)
    rc = main(["verify", str(folder), "--key", str(_pub(env_dir)), "--releases", str(rel)])
    got = lines(capsys.readouterr().out)
    assert rc == 1
    assert got["release"].startswith("FAIL") and "checklist_sha256" in got["release"]
    assert got["tier"].startswith("FAIL") and "cannot recompute" in got["tier"]


def test_unknown_suite_version_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report()
    report["suite"]["version"] = "9.9.9"
    folder = write_report_dir(tmp_path / "r", report)
    rc = main(["sign", str(folder), "--key", str(_key(env_dir))])    # sign refuses it first
    assert "'9.9.9' is not a release listed" in _one_line_error(capsys, rc)
    assert not (folder / att.ENVELOPE_NAME).exists()
    elsewhere = tmp_path / "their-releases.yaml"          # a signer whose releases file lists it
    releases.write_release(elsewhere, version="9.9.9", published=PUBLISHED)
    sign_report_dir(folder, _key(env_dir), releases_file=elsewhere)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1 and got["release"].startswith("FAIL") and "'9.9.9' is not a release" in got["release"]


def test_missing_check_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report()
    dropped = report["checks"].pop(0)["id"]
    retier(report)
    folder = signed(env_dir, tmp_path / "r", report)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1 and got["completeness"].startswith("FAIL") and dropped in got["completeness"]


def test_duplicate_and_unknown_checks_are_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report()
    report["checks"].append(copy.deepcopy(report["checks"][0]))
    extra = copy.deepcopy(report["checks"][1])
    extra["id"] = "PF-999"
    report["checks"].append(extra)
    retier(report)
    folder = signed(env_dir, tmp_path / "r", report)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)["completeness"]
    assert rc == 1 and "duplicate ids" in got and "PF-999" in got


def test_tampered_summary_and_test_lists_are_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report({check_ids()[0]: "fail"})
    report["summary"]["fail"] = 0
    folder = signed(env_dir, tmp_path / "r", report)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 1 and "summary counts wrong for fail" in lines(out)["claims"]

    folder = signed(env_dir, tmp_path / "r2", build_report({check_ids()[0]: "fail"}))

    def launder(st_: dict[str, Any]) -> None:
        st_["predicate"]["passedTests"] += st_["predicate"]["failedTests"]
        st_["predicate"]["failedTests"] = []
    resign_statement(env_dir, folder, launder)
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1 and got["signature"].startswith("PASS")
    assert "passedTests does not match" in got["claims"] and "failedTests does not match" in got["claims"]


def test_statement_with_foreign_types_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    resign_statement(env_dir, folder, lambda s: s.update(predicateType="https://example.com/other"))
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 1 and lines(out)["statement"].startswith("FAIL")


def test_statement_with_extra_subject_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    resign_statement(env_dir, folder, lambda s: s["subject"].append(
        {"name": "../../etc/passwd", "digest": {"sha256": "0" * 64}}))
    rc, out, _ = run_verify(env_dir, folder, capsys)
    assert rc == 1 and "unexpected subject(s): ../../etc/passwd" in lines(out)["subjects"]


def test_schema_invalid_report_is_rejected(env_dir: Path, tmp_path: Path, capsys) -> None:
    report = build_report()
    folder = signed(env_dir, tmp_path / "r", report)
    del report["environment"]
    (folder / "report.json").write_text(json.dumps(report))
    resign_statement(env_dir, folder, lambda s: s["subject"][0]["digest"].update(
        sha256=datafiles.sha256_file(folder / "report.json")))
    rc, out, _ = run_verify(env_dir, folder, capsys)
    got = lines(out)
    assert rc == 1 and got["schema"].startswith("FAIL") and "environment" in got["schema"]
    assert got["tier"] == "FAIL tier: not checked: report.json is not schema-valid"


# --------------------------------------------------------------------------- waivers

def _waived_report(check: str, issue: str = "https://github.com/ray-project/ray/issues/1") -> dict[str, Any]:
    return build_report({check: "waived"}, waivers={check: {"check": check, "issue": issue,
                                                            "expires": "2026-06-30", "reason": "upstream bug"}})


def _verify_waivers(env_dir: Path, folder: Path, waivers_file: Path) -> Any:
    return verify_path(folder, [key_from_file(_pub(env_dir))], releases_file=env_dir / "releases.yaml",
                       waivers_file=waivers_file)


def _waiver(check: str, expires: str, issue: str = "https://github.com/ray-project/ray/issues/1") -> dict[str, Any]:
    return {"check": check, "issue": issue, "reason": "upstream Ray limitation", "expires": expires}


def test_listed_unexpired_waiver_passes(env_dir: Path, tmp_path: Path) -> None:
    cid = check_ids()[-1]
    folder = signed(env_dir, tmp_path / "r", _waived_report(cid))
    v = _verify_waivers(env_dir, folder, write_waivers(tmp_path / "w.json", [_waiver(cid, "2026-03-01")]))
    line = next(x for x in v.lines if x.name == "waivers")
    assert line.ok and "1 waived check(s)" in line.detail


@pytest.mark.parametrize("waivers, expect", [
    ([_waiver("DP-001", "2027-01-01")], "is not in tiers/waivers.yaml"),
    (None, "is not in tiers/waivers.yaml"),  # no waivers file at all
    ("expired", "expired 2026-02-28, before finished_at 2026-03-01"),
    ("other-issue", "is not in tiers/waivers.yaml"),
])
def test_bad_waivers_are_rejected(env_dir: Path, tmp_path: Path, waivers, expect: str) -> None:
    cid = check_ids()[-1]
    folder = signed(env_dir, tmp_path / "r", _waived_report(cid))
    if waivers == "expired":
        waivers = [_waiver(cid, "2026-02-28")]
    elif waivers == "other-issue":
        waivers = [_waiver(cid, "2027-01-01", issue="https://github.com/ray-project/ray/issues/2")]
    wfile = write_waivers(tmp_path / "w.json", waivers) if waivers is not None else tmp_path / "absent.yaml"
    v = _verify_waivers(env_dir, folder, wfile)
    line = next(x for x in v.lines if x.name == "waivers")
    assert not line.ok and expect in line.detail and not v.ok


def test_waived_without_citation_is_rejected(env_dir: Path, tmp_path: Path) -> None:
    cid = check_ids()[-1]
    folder = signed(env_dir, tmp_path / "r", build_report({cid: "waived"}))
    v = _verify_waivers(env_dir, folder, write_waivers(tmp_path / "w.json", [_waiver(cid, "2027-01-01")]))
    line = next(x for x in v.lines if x.name == "waivers")
    assert not line.ok and "waived without a waiver" in line.detail


# --------------------------------------------------------------------------- unreadable input (exit 2)

def _one_line_error(capsys, rc: int) -> str:
    out = capsys.readouterr()
    assert rc == 2
    assert out.err.count("\n") == 1 and out.err.startswith("error: ") and "Traceback" not in out.err
    return out.err


@pytest.mark.parametrize("damage, message", [
    (lambda t: t[: len(t) // 2], "not valid JSON (truncated?)"),
    (lambda t: "", "not valid JSON"),
    (lambda t: "this is not json", "not valid JSON"),
    (lambda t: "[1, 2]", "not a DSSE envelope"),
    (lambda t: json.dumps({"payloadType": dsse.PAYLOAD_TYPE, "payload": "%%%", "signatures": [{"sig": ""}]}),
     "payload is not valid base64"),
])
def test_unreadable_envelope_is_a_one_line_error(env_dir: Path, tmp_path: Path, capsys, damage, message) -> None:
    folder = signed(env_dir, tmp_path / "r")
    env = folder / att.ENVELOPE_NAME
    env.write_text(damage(env.read_text()))
    rc = main(["verify", str(env), "--key", str(_pub(env_dir)), "--releases", str(env_dir / "releases.yaml")])
    assert message in _one_line_error(capsys, rc)


@pytest.mark.parametrize("missing", ["report.json", "junit.xml", "report.md"])
def test_missing_report_file_is_a_one_line_error(env_dir: Path, tmp_path: Path, capsys, missing: str) -> None:
    folder = signed(env_dir, tmp_path / "r")
    (folder / missing).unlink()
    rc = main(["verify", str(folder), "--key", str(_pub(env_dir)), "--releases", str(env_dir / "releases.yaml")])
    assert missing in _one_line_error(capsys, rc)


def test_unsigned_folder_and_missing_key_are_one_line_errors(env_dir: Path, tmp_path: Path, capsys) -> None:
    write_report_dir(tmp_path / "r", build_report())
    rc = main(["verify", str(tmp_path / "r"), "--key", str(_pub(env_dir))])
    assert "holds no report.intoto.json" in _one_line_error(capsys, rc)
    folder = signed(env_dir, tmp_path / "s")
    rc = main(["verify", str(folder), "--key", str(tmp_path / "nope.pub")])
    assert "file not found" in _one_line_error(capsys, rc)


def test_truncated_envelope_in_a_real_process_prints_no_traceback(env_dir: Path, tmp_path: Path) -> None:
    folder = signed(env_dir, tmp_path / "r")
    env = folder / att.ENVELOPE_NAME
    env.write_bytes(env.read_bytes()[:100])
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.signing", "verify", str(env),
                           "--key", str(_pub(env_dir)), "--releases", str(env_dir / "releases.yaml")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "not valid JSON (truncated?)" in proc.stderr


# --------------------------------------------------------------------------- property tests on the file

@pytest.fixture(scope="module")
def signed_folder(env_dir: Path, tmp_path_factory) -> Path:
    return signed(env_dir, tmp_path_factory.mktemp("prop") / "r")


def _payload_and_sig_spans(text: str) -> list[int]:
    """Offsets of every character of the payload and sig strings inside the envelope file."""
    doc = json.loads(text)
    spans = []
    for value in (doc["payload"], doc["signatures"][0]["sig"]):
        start = text.index(f'"{value}"') + 1
        spans.extend(range(start, start + len(value)))
    return spans


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), replacement=st.integers(0, 255))
def test_any_byte_change_in_the_envelope_file_is_rejected(env_dir: Path, signed_folder: Path, tmp_path_factory,
                                                          where: float, replacement: int) -> None:
    """A byte anywhere in the base64 payload or signature text replaced: never accepted, never a crash."""
    original = (signed_folder / att.ENVELOPE_NAME).read_text()
    spans = _payload_and_sig_spans(original)
    pos = spans[int(where * len(spans))]
    raw = bytearray(original.encode())
    if raw[pos] == replacement:
        replacement ^= 0x01
    raw[pos] = replacement
    target = tmp_path_factory.mktemp("t") / "report.intoto.json"
    target.write_bytes(bytes(raw))
    for name in att.REPORT_FILES:
        (target.parent / name).write_bytes((signed_folder / name).read_bytes())
    try:
        v = verify_path(target, [key_from_file(_pub(env_dir))], releases_file=env_dir / "releases.yaml")
    except UserError as exc:  # e.g. the change broke the JSON or the base64: exit 2, one line
        assert "\n" not in str(exc)
        return
    assert not v.ok


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data_=st.data())
def test_any_byte_change_in_the_decoded_payload_or_signature_is_rejected(env_dir: Path, signed_folder: Path,
                                                                         tmp_path_factory, data_) -> None:
    envelope = json.loads((signed_folder / att.ENVELOPE_NAME).read_text())
    field = data_.draw(st.sampled_from(["payload", "sig"]))
    raw = bytearray(base64.b64decode(envelope["payload"] if field == "payload" else envelope["signatures"][0]["sig"]))
    pos = data_.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= data_.draw(st.integers(1, 255))
    if field == "payload":
        envelope["payload"] = base64.b64encode(bytes(raw)).decode()
    else:
        envelope["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
    target = tmp_path_factory.mktemp("t")
    for name in att.REPORT_FILES:
        (target / name).write_bytes((signed_folder / name).read_bytes())
    (target / att.ENVELOPE_NAME).write_text(json.dumps(envelope))
    v = verify_path(target, [key_from_file(_pub(env_dir))], releases_file=env_dir / "releases.yaml")
    assert not v.ok
    assert next(x for x in v.lines if x.name == "signature").ok is False


# --------------------------------------------------------------------------- sign behaviour

def test_sign_refuses_to_overwrite_and_force_resigns(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = signed(env_dir, tmp_path / "r")
    before = (folder / att.ENVELOPE_NAME).read_bytes()
    rc = main(["sign", str(folder), "--key", str(_key(env_dir))])
    assert "already signs this report.json" in _one_line_error(capsys, rc)
    assert (folder / att.ENVELOPE_NAME).read_bytes() == before
    assert main(["sign", str(folder), "--key", str(_key(env_dir, "ed25519")), "--force"]) == 0
    capsys.readouterr()
    assert (folder / att.ENVELOPE_NAME).read_bytes() != before
    rc = main(["verify", str(folder), "--key", str(_pub(env_dir, "ed25519")),
               "--releases", str(env_dir / "releases.yaml")])
    assert rc == 0


@pytest.mark.parametrize("left", [att.ENVELOPE_NAME, att.BUNDLE_NAME])
def test_sign_never_offers_force_over_an_earlier_runs_signature(env_dir: Path, tmp_path: Path, capsys,
                                                                left: str) -> None:
    """A signature (or its bundle alone) of another report.json is an earlier run's: --force would
    destroy it, so the refusal says to move it away and does not suggest --force."""
    folder = signed(env_dir, tmp_path / "r")
    for name in (att.ENVELOPE_NAME, att.BUNDLE_NAME):
        if name != left:
            (folder / name).unlink()
    before = (folder / left).read_bytes()
    report = json.loads((folder / att.REPORT_JSON).read_text())
    report["checks"][0]["duration_s"] += 1
    write_report_dir(folder, report)       # a new run's report beside the old signature
    err = _one_line_error(capsys, main(["sign", str(folder), "--key", str(_key(env_dir))]))
    assert "is not a signature of this report.json" in err and "previous/" in err and "--force" not in err
    assert (folder / left).read_bytes() == before


def test_sign_with_encrypted_key(env_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAYCONF_SIGN_PASS", "s3cret-pass")
    keys.write_keypair(tmp_path / "k", passphrase=b"s3cret-pass")
    write_report_dir(tmp_path / "r", build_report())
    rc = main(["sign", str(tmp_path / "r"), "--key", str(tmp_path / "k" / keys.PRIVATE_KEY_NAME)])
    assert "is encrypted" in _one_line_error(capsys, rc)
    assert not (tmp_path / "r" / att.ENVELOPE_NAME).exists()
    rc = main(["sign", str(tmp_path / "r"), "--key", str(tmp_path / "k" / keys.PRIVATE_KEY_NAME),
               "--passphrase-env", "RAYCONF_SIGN_PASS"])
    out = capsys.readouterr()
    assert rc == 0 and "s3cret-pass" not in out.out + out.err
    assert verify_path(tmp_path / "r", [key_from_file(tmp_path / "k" / keys.PUBLIC_KEY_NAME)],
                       releases_file=env_dir / "releases.yaml").ok


def test_sign_refuses_incomplete_or_invalid_reports(env_dir: Path, tmp_path: Path, capsys) -> None:
    folder = write_report_dir(tmp_path / "r", build_report())
    (folder / "report.md").unlink()
    rc = main(["sign", str(folder), "--key", str(_key(env_dir))])
    assert "report.md" in _one_line_error(capsys, rc)
    bad = build_report()
    bad["checks"][0]["outcome"] = "passed"
    write_report_dir(tmp_path / "b", bad)
    rc = main(["sign", str(tmp_path / "b"), "--key", str(_key(env_dir))])
    assert "checks[0].outcome" in _one_line_error(capsys, rc)
    (tmp_path / "b" / "report.json").write_text("{")
    rc = main(["sign", str(tmp_path / "b"), "--key", str(_key(env_dir))])
    assert "invalid JSON" in _one_line_error(capsys, rc)
    assert not (tmp_path / "b" / att.ENVELOPE_NAME).exists()


def test_sign_report_dir_returns_the_envelope_path(env_dir: Path, tmp_path: Path) -> None:
    folder = write_report_dir(tmp_path / "r", build_report())
    out = sign_report_dir(folder, _key(env_dir), None)
    assert out == folder / "report.intoto.json" and out.is_file() and (folder / "report.sigstore.json").is_file()


@pytest.mark.parametrize("mutate", [
    lambda s: s["predicate"].update(passedTests=[1, "x", None], configuration={"a": 1}),
    lambda s: s["predicate"].update(configuration=7, result=None),
    lambda s: s.update(subject=[1, 2]),
    lambda s: s["predicate"]["rayAcceleratorConformance"].update(tier=["x"], reportSha256=5),
])
def test_odd_types_in_a_validly_signed_statement_fail_cleanly(env_dir: Path, tmp_path: Path, mutate) -> None:
    folder = signed(env_dir, tmp_path / "r")
    resign_statement(env_dir, folder, mutate)
    v = verify_path(folder, [key_from_file(_pub(env_dir))], releases_file=env_dir / "releases.yaml")
    assert not v.ok and next(x for x in v.lines if x.name == "signature").ok
