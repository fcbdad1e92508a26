"""`review`: one row per submission, tier recomputed, signature status with and without a keyring."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalog import releases
from conformance.catalog.ladder import required_checks
from conformance.cli.signing import main
from conformance.signing import keys
from conformance.signing.sign import sign_report_dir
from signing_support import build_report, suite, write_releases, write_report_dir


@pytest.fixture(scope="module")
def submissions(tmp_path_factory) -> Path:
    """honest (signed), inflated (signed, claims a tier its results do not give), tampered, unsigned, broken."""
    root = tmp_path_factory.mktemp("review")
    pair = keys.write_keypair(root.parent / f"{root.name}-keys")
    write_releases(root.parent / f"{root.name}-releases.yaml")
    subs = root / "subs"
    listed = suite().waivers[0]  # a waiver of the release (tiers/waivers.yaml)
    honest = build_report({listed.check: "waived"},
                          waivers={listed.check: {"check": listed.check, "expires": listed.expires,   # as a run copies it
                                                  "issue": listed.issue, "reason": listed.reason,
                                                  "blocks_tier": listed.blocks_tier, "original_outcome": "fail"}})
    write_report_dir(subs / "a-honest", honest)
    s = suite()
    blocker = required_checks(s.ladder.tiers[0], s.checklist)[0]
    inflated = build_report({blocker: "fail"})
    inflated["tier"] = s.ladder.names()[-1]
    write_report_dir(subs / "b-inflated", inflated)
    write_report_dir(subs / "c-tampered", build_report())
    write_report_dir(subs / "d-unsigned", build_report(nodes=1))
    for name in ("a-honest", "b-inflated", "c-tampered"):
        sign_report_dir(subs / name, pair.private_path, releases_file=root.parent / f"{root.name}-releases.yaml")
    (subs / "c-tampered" / "report.md").write_text("edited after signing\n")
    (subs / "e-broken").mkdir()
    (subs / "e-broken" / "report.json").write_text("{not json")
    (root / "keyring.yaml").write_text(f"keys:\n  - name: examplecorp\n    public_key: {pair.public_path}\n"
                                      f"    vendors: [ExampleCorp]\n")
    return root


def _review(submissions: Path, capsys, *extra: str) -> tuple[int, str]:
    rc = main(["review", str(submissions / "subs"), "--releases",
               str(submissions.parent / f"{submissions.name}-releases.yaml"), *extra])
    return rc, capsys.readouterr().out


def test_review_json_rows_without_keyring(submissions: Path, capsys) -> None:
    rc, out = _review(submissions, capsys, "--format", "json")
    rows = {r["submission"]: r for r in json.loads(out)}
    assert rc == 1 and list(rows) == ["a-honest", "b-inflated", "c-tampered", "d-unsigned", "e-broken"]
    top = suite().ladder.names()[-1]
    a = rows["a-honest"]
    assert (a["vendor"], a["product"], a["suite_version"], a["date"]) == ("ExampleCorp", "NPU X1", releases.current_version(), "2026-03-01")
    assert a["signature"] == "unverified" and a["waived"] == [suite().waivers[0].check]
    assert a["claimed_tier"] == a["recomputed_tier"]
    b = rows["b-inflated"]
    assert b["claimed_tier"] == top and b["recomputed_tier"] is None and len(b["failing"]) == 1
    assert rows["d-unsigned"]["signature"] == "unsigned"
    assert rows["d-unsigned"]["recomputed_tier"] != top  # one node cannot reach the top tier
    assert rows["e-broken"]["signature"].startswith("error:") and "invalid JSON" in rows["e-broken"]["signature"]


def test_review_with_keyring_reports_verification(submissions: Path, capsys) -> None:
    rc, out = _review(submissions, capsys, "--format", "json", "--keyring", str(submissions / "keyring.yaml"))
    rows = {r["submission"]: r for r in json.loads(out)}
    assert rc == 1
    assert rows["a-honest"]["signature"] == "verified (examplecorp)", rows["a-honest"]["notes"]
    assert rows["b-inflated"]["signature"].startswith("signed by examplecorp; failed:")
    assert "tier" in rows["b-inflated"]["signature"]
    assert "subject" in rows["c-tampered"]["signature"]
    assert rows["d-unsigned"]["signature"] == "unsigned"


def test_review_text_and_markdown_tables(submissions: Path, capsys) -> None:
    rc, out = _review(submissions, capsys)
    header = out.splitlines()[0].split()
    assert rc == 1 and header[:4] == ["submission", "vendor", "product", "suite"]
    assert "recomputed" in out and "b-inflated" in out
    rc, out = _review(submissions, capsys, "--format", "md")
    md = out.splitlines()
    assert md[0].startswith("| submission") and set(md[1]) <= set("|-: ")
    assert sum(1 for line in md if line.startswith("| ")) == 6


def test_review_of_an_empty_or_missing_folder_is_a_user_error(tmp_path: Path, capsys) -> None:
    assert main(["review", str(tmp_path)]) == 2
    assert "no submission sub-folders" in capsys.readouterr().err
    assert main(["review", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_review_recomputes_the_capabilities_and_flags_a_forged_claim(tmp_path: Path, capsys) -> None:
    """The capability column comes from the per-check results, never from the claim: a report whose
    transport MUST failed but which claims the transport profile shows the mismatch, in the table
    and on the dashboard."""
    from conformance.catalog import capabilities as caps

    write_releases(tmp_path / "releases.yaml")
    s = suite()
    transport_must = next(c.id for c in s.checklist.active() if c.area == "transport" and c.level == "MUST")
    honest = build_report()
    forged = build_report({transport_must: "fail"})
    for report in (honest, forged):
        report["capabilities"] = caps.compute_capabilities(honest["checks"], s.checklist, caps.load_profiles(),
                                                           report["manifest"])
    write_report_dir(tmp_path / "subs" / "a-honest", honest)
    write_report_dir(tmp_path / "subs" / "b-forged", forged)
    args = ["review", str(tmp_path / "subs"), "--releases", str(tmp_path / "releases.yaml")]
    main([*args, "--format", "json"])
    rows = {r["submission"]: r for r in json.loads(capsys.readouterr().out)}
    assert "transport" in rows["a-honest"]["capabilities"] and rows["a-honest"]["capabilities"] == rows["a-honest"]["claimed_capabilities"]
    assert "transport" in rows["b-forged"]["claimed_capabilities"] and "transport" not in rows["b-forged"]["capabilities"]
    assert any("claimed capabilities" in n and "differ" in n for n in rows["b-forged"]["notes"])
    main(args)
    table = capsys.readouterr().out
    forged_line = next(line for line in table.splitlines() if line.startswith("b-forged"))
    assert "(claimed: " in forged_line and "capabilities (recomputed)" in table.splitlines()[0]
    main([*args, "--format", "html", "--out", str(tmp_path / "site")])
    capsys.readouterr()
    index = (tmp_path / "site" / "index.html").read_text()
    assert index.count("caps-mismatch") >= 2 and "1 claim(s) ≠ recomputed" in index
