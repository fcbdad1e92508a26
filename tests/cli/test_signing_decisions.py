"""Issue 46: the SIG's decisions last. A verified report gets a signed decision (a SLSA VSA) that
`verify-decision` checks with the SIG's public key alone; an edited decision, one signed by
another key, an expired one and one whose report the SIG revoked are each refused in one line;
review shows validity, the product's current tier and its demotion; the signed revocation list
is read by verify, verify-decision, review and diff.

The report decided on is the committed example (reports/example, made by the real CLI); the
register's two reports of one product are made by the suite's own report builder and signed by
the real `sign`. No run, no Ray: each test is CLI calls in-process, well under a second apiece.
"""
from __future__ import annotations

import base64
import json
import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import verifier_clock
from conformance.catalog import datafiles
from conformance.cli.signing import main
from conformance.signing import decision, dsse, keys, validity
from conformance.signing.canonical import canonical_json
from signing_support import stable_only_check, write_product_history, write_releases

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example"


def _example_dates() -> tuple[date, date]:
    """The example's certificate: from its run's day for the installed policy's months."""
    start = date.fromisoformat(json.loads((EXAMPLE / "report.json").read_text())["finished_at"][:10])
    policy = validity.load_policy()
    assert policy is not None
    return start, validity.add_months(start, policy.valid_months) - timedelta(days=1)


@pytest.fixture(scope="module", autouse=True)
def _verified_when_received() -> Iterator[None]:
    """The verifier's clock the day the SIG received the example (a release superseded since, by a
    development release or the next one, is inside the SIG's window then: signing/release_window.py)."""
    yield from verifier_clock.pinned(EXAMPLE / "report.json")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("decisions")
    sig, other = keys.write_keypair(d / "sig"), keys.write_keypair(d / "other")
    folder = d / "example"
    shutil.copytree(EXAMPLE, folder)
    return {"dir": d, "sig": sig, "other": other, "folder": folder,
            "report_sha256": datafiles.sha256_file(folder / "report.json")}


@pytest.fixture(scope="module")
def decided(world: dict[str, Any]) -> Path:
    rc = main(["verify", str(world["folder"]), "--key", str(EXAMPLE / "example.pub"),
               "--decision-key", str(world["sig"].private_path)])
    assert rc == 0
    return world["folder"] / decision.DECISION_NAME


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    got = capsys.readouterr()
    return rc, got.out + got.err


def _edited(path: Path, out: Path, edit: Callable[[dict[str, Any]], None], resign: keys.PrivateKey | None = None) -> Path:
    env = json.loads(path.read_text())
    st = json.loads(base64.b64decode(env["payload"]))
    edit(st)
    if resign is not None:
        env = dsse.make_envelope(canonical_json(st), resign)
    else:  # the SIG's signature kept over edited bytes
        env["payload"] = dsse.b64encode(canonical_json(st))
    out.write_text(json.dumps(env))
    return out


def test_a_verified_report_gets_a_decision_the_sig_key_alone_accepts(world, decided, capsys) -> None:
    capsys.readouterr()
    st = json.loads(base64.b64decode(json.loads(decided.read_text())["payload"]))
    pred, ext = st["predicate"], st["predicate"]["rayAcceleratorConformance"]
    assert st["predicateType"] == "https://slsa.dev/verification_summary/v1"
    assert st["subject"] == [{"name": "report.json", "digest": {"sha256": world["report_sha256"]}}]
    assert pred["verificationResult"] == "PASSED" and pred["verifier"]["id"].endswith(world["sig"].keyid)
    assert pred["verifiedLevels"][0] == "RAYCONF_TIER_STABLE" and ext["tier"] == "stable"
    assert ext["statementSha256"] == pred["inputAttestations"][0]["digest"]["sha256"]
    assert ext["releaseData"]["tiers/checklist.yaml"] and ext["validUntil"] > ext["validFrom"]
    only_sig = world["dir"] / "only"  # nothing but the decision and the SIG's public key
    only_sig.mkdir()
    shutil.copy(decided, only_sig / "d.json")
    start, until = _example_dates()
    rc, out = _run(capsys, "verify-decision", str(only_sig / "d.json"), "--key", str(world["sig"].public_path),
                   "--at", str(start + timedelta(days=30)))
    assert rc == 0 and out.startswith("DECISION PASSED:"), out
    assert "tier stable" in out and "capabilities collective, device, topology, transport, workload" in out and f"valid {start} .. {until}" in out
    rc, out = _run(capsys, "verify", str(only_sig / "d.json"), "--key", str(world["sig"].public_path),
                   "--at", str(start + timedelta(days=30)))
    assert rc == 0 and "tier stable" in out
    rc, out = _run(capsys, "verify-decision", str(decided), "--key", str(world["sig"].public_path),
                   "--at", str(until - timedelta(days=20)))
    assert rc == 0 and f"expiring {start}" in out


@pytest.mark.parametrize("field, edit", [
    ("tier", lambda st: st["predicate"]["rayAcceleratorConformance"].update(tier="beta")),
    ("digest", lambda st: st["subject"][0]["digest"].update(sha256="0" * 64)),
    ("validity", lambda st: st["predicate"]["rayAcceleratorConformance"].update(validUntil="2099-12-31")),
    ("release", lambda st: st["predicate"]["rayAcceleratorConformance"].update(suiteVersion="0.1.0+data.15")),
])
def test_an_edited_decision_is_refused_in_one_line(world, decided, capsys, field, edit) -> None:
    capsys.readouterr()
    edited = _edited(decided, world["dir"] / f"edited-{field}.json", edit)
    rc, out = _run(capsys, "verify-decision", str(edited), "--key", str(world["sig"].public_path))
    assert rc == 1 and out.count("\n") == 1 and out.startswith("REFUSED:") and "not signed by the SIG's key" in out, out


def test_a_decision_signed_by_another_key_is_refused(world, decided, capsys) -> None:
    other_key = keys.load_private_key(world["other"].private_path)
    forged = _edited(decided, world["dir"] / "forged.json", lambda st: None, resign=other_key)
    rc, out = _run(capsys, "verify-decision", str(forged), "--key", str(world["sig"].public_path))
    assert rc == 1 and out.count("\n") == 1 and "not signed by the SIG's key" in out
    # signed by the SIG, but not self-consistent (a tier its levels do not name): refused too
    sig_key = keys.load_private_key(world["sig"].private_path)
    odd = _edited(decided, world["dir"] / "odd.json",
                  lambda st: st["predicate"]["rayAcceleratorConformance"].update(tier="beta"), resign=sig_key)
    rc, out = _run(capsys, "verify-decision", str(odd), "--key", str(world["sig"].public_path))
    assert rc == 1 and "verifiedLevels are not the decision's tier" in out and out.count("\n") == 1


def test_a_decision_past_its_validity_is_refused_as_expired(world, decided, capsys) -> None:
    _, until = _example_dates()
    rc, out = _run(capsys, "verify-decision", str(decided), "--key", str(world["sig"].public_path),
                   "--at", str(until + timedelta(days=1)))
    assert rc == 1 and out.count("\n") == 1 and f"expired: the decision held until {until}" in out


def test_a_revoked_report_is_refused_by_verify_verify_decision_review_and_diff(world, decided, capsys) -> None:
    capsys.readouterr()
    d = world["dir"]
    (d / "revoked.yaml").write_text(f"revoked:\n  - report_sha256: {world['report_sha256']}\n"
                                    "    reason: CC-010 figures measured on another machine\n    date: 2026-12-02\n")
    rc, out = _run(capsys, "revoke-reports", str(d / "revoked.yaml"), "--key", str(world["sig"].private_path),
                   "--out", str(d / "revoked.json"))
    assert rc == 0 and "1 revoked report(s)" in out
    reason = "revoked by the SIG on 2026-12-02: CC-010 figures measured on another machine"
    lists = ["--revocations", str(d / "revoked.json"), "--sig-key", str(world["sig"].public_path)]
    rc, out = _run(capsys, "verify", str(world["folder"]), "--key", str(EXAMPLE / "example.pub"), *lists)
    assert rc == 1 and out.count("\n") == 1 and out.startswith("REJECTED:") and reason in out
    rc, out = _run(capsys, "verify-decision", str(decided), "--key", str(world["sig"].public_path),
                   "--revocations", str(d / "revoked.json"))
    assert rc == 1 and out.count("\n") == 1 and reason in out
    subs = d / "subs"
    shutil.copytree(EXAMPLE, subs / "example")
    rc, out = _run(capsys, "review", str(subs), "--format", "json", *lists)
    row = json.loads(out)[0]
    assert rc == 1 and row["signature"] == f"REVOKED: {reason}" and row["revoked"] == reason
    rc, out = _run(capsys, "diff", str(world["folder"]), str(world["folder"]), *lists)
    assert rc == 2 and out.count("\n") == 1 and reason in out
    # a list the SIG did not sign takes nothing back: refused as a whole
    rc, out = _run(capsys, "verify", str(world["folder"]), "--key", str(EXAMPLE / "example.pub"),
                   "--revocations", str(d / "revoked.json"), "--sig-key", str(world["other"].public_path))
    assert rc == 2 and "not signed by the SIG's key" in out and out.count("\n") == 1
    # never overwritten without --force
    rc, out = _run(capsys, "revoke-reports", str(d / "revoked.yaml"), "--key", str(world["sig"].private_path),
                   "--out", str(d / "revoked.json"))
    assert rc == 2 and "refusing to overwrite" in out


def test_review_shows_validity_the_current_tier_and_the_demotion_and_signs_decisions(world, tmp_path, capsys) -> None:
    subs, releases, keyring, _ = write_product_history(tmp_path)
    failed = stable_only_check()
    args = ["review", str(subs), "--releases", str(releases), "--keyring", str(keyring)]
    capsys.readouterr()
    rc, out = _run(capsys, *args, "--format", "json", "--at", "2027-03-15",
                   "--decision-key", str(world["sig"].private_path), "--decisions", str(tmp_path / "decisions"))
    rows = {r["submission"]: r for r in json.loads(out)}
    assert rc == 0, out
    march, april = rows["a-x1-march"], rows["b-x1-april"]
    assert march["recomputed_tier"] == "stable" and april["recomputed_tier"] == "beta"
    assert march["product_tier"] == april["product_tier"] == "beta" and april["current"] and not march["current"]
    assert april["demoted"].startswith("demoted from stable on 2026-04-01") and f"{failed} pass→fail" in april["demoted"]
    assert (march["validity"], march["valid_until"]) == ("expired", "2027-02-28")
    assert (april["validity"], april["valid_until"]) == ("expiring", "2027-03-31")
    assert rows["c-x2"]["product_tier"] == "stable" and rows["c-x2"]["current"]
    assert april["decision"] == "b-x1-april.decision.intoto.json"
    rc, out = _run(capsys, "verify-decision", str(tmp_path / "decisions" / april["decision"]),
                   "--key", str(world["sig"].public_path), "--at", "2026-12-01")
    assert rc == 0 and "tier beta" in out
    rc, out = _run(capsys, "verify-decision", str(tmp_path / "decisions" / march["decision"]),
                   "--key", str(world["sig"].public_path), "--at", "2027-03-15")
    assert rc == 1 and "expired" in out
    rc, out = _run(capsys, *args, "--at", "2027-03-15")
    line = next(x for x in out.splitlines() if x.startswith("b-x1-april"))
    assert "expiring (until 2027-03-31)" in line and "beta (this report); demoted from stable on 2026-04-01" in line


def test_hostile_decisions_and_options_are_one_line_each(world, decided, capsys) -> None:
    capsys.readouterr()
    sig_key = keys.load_private_key(world["sig"].private_path)
    pub = str(world["sig"].public_path)
    for name, edit in (("int-tier", lambda st: st["predicate"]["rayAcceleratorConformance"].update(tier=5)),
                       ("float-data", lambda st: st["predicate"]["rayAcceleratorConformance"]["releaseData"]
                        .update({"x": "1"})),
                       ("not-a-vsa", lambda st: st.update(predicateType="https://example.com/x"))):
        signed = _edited(decided, world["dir"] / f"{name}.json", edit, resign=sig_key)
        rc, out = _run(capsys, "verify-decision", str(signed), "--key", pub)
        assert rc == 1 and out.count("\n") == 1 and "not a decision this suite writes" in out, (name, out)
    (world["dir"] / "junk.json").write_text("{not json")
    rc, out = _run(capsys, "verify-decision", str(world["dir"] / "junk.json"), "--key", pub)
    assert rc == 2 and out.count("\n") == 1 and "not a JSON DSSE envelope" in out
    rc, out = _run(capsys, "review", str(world["dir"]), "--decision-key", str(world["sig"].private_path),
                   "--decisions", str(world["dir"] / "d"))
    assert rc == 2 and "--keyring" in out and out.count("\n") == 1


def test_a_decision_is_never_checked_with_a_vendor_keyring(world, decided, tmp_path, capsys) -> None:
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: sig\n    public_key: {world['sig'].public_path}\n    vendors: [ExampleCorp]\n")
    rc, out = _run(capsys, "verify", str(decided), "--keyring", str(ring))
    assert rc == 2 and "--key SIG_PUB" in out and out.count("\n") == 1


def test_a_new_release_takes_its_period_from_the_certificates_block(tmp_path) -> None:
    import yaml

    from conformance.catalog import releases
    from conformance.errors import UserError

    path = write_releases(tmp_path / "releases.yaml")
    doc = yaml.safe_load(path.read_text())
    policy = validity.load_policy()
    assert policy is not None and doc["certificates"]["valid_months"] == policy.valid_months
    assert all(entry["valid_months"] == policy.valid_months for entry in doc["releases"].values())
    doc["certificates"]["valid_months"] = 0
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match="certificates.valid_months"):
        releases.load_releases(path)
