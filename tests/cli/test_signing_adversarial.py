"""An adversarial reviewer's corpus (issue 9): every attack on verify / review / diff / sign that
the issue lists for identity, consistency, release binding, hostile input, diff and keys is
rejected with a one-line reason naming the check or field, and never a traceback. No Ray."""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from conformance.catalog import (
    datafiles,
    releases,
    strict_input,
)
from conformance.cli.main import main as cli_main
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, keys, pkcs8
from conformance.signing.canonical import canonical_json
from conformance.signing.keyring import key_from_file, load_keyring
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import verify_path
from signing_support import build_report, check_ids, suite, write_releases, write_report_dir

ESC = "\x1b"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """The vendor's key, an attacker's key, a keyring trusting both (each bound to its vendor)."""
    d = tmp_path_factory.mktemp("adv")
    vendor = keys.write_keypair(d / "vendor")
    attacker = keys.write_keypair(d / "attacker")
    write_releases(d / "releases.yaml")
    ring = d / "keyring.yaml"
    ring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {vendor.public_path}\n    vendors: [ExampleCorp]\n"
                    f"  - name: othercorp\n    public_key: {attacker.public_path}\n    vendors: [OtherCorp]\n")
    return {"dir": d, "vendor": vendor.private_path, "vendor_pub": vendor.public_path,
            "attacker": attacker.private_path, "attacker_pub": attacker.public_path,
            "releases": d / "releases.yaml", "keyring": ring}


def _signed(world: dict[str, Path], folder: Path, report: dict[str, Any] | None = None, key: str = "vendor") -> Path:
    write_report_dir(folder, report if report is not None else build_report())
    sign_report_dir(folder, world[key])
    return folder


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = cli_main(argv)
    except SystemExit as exc:  # argparse usage errors
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _verify(world: dict[str, Path], target: Path, capsys, *extra: str) -> tuple[int, str, str]:
    return _cli(["verify", str(target), "--keyring", str(world["keyring"]), "--releases", str(world["releases"]),
                 *extra], capsys)


def _line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line[5:].startswith(f"{name}:"))


def _one_error_line(rc: int, err: str, *needles: str) -> None:
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err


def _resign(world: dict[str, Path], folder: Path, mutate, key: str = "vendor") -> None:
    """A key holder hand-edits the statement and signs it again."""
    env = json.loads((folder / att.ENVELOPE_NAME).read_text())
    st = json.loads(base64.b64decode(env["payload"]))
    mutate(st)
    new = dsse.make_envelope(canonical_json(st), keys.load_private_key(world[key]))
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(new))
    (folder / att.BUNDLE_NAME).write_text(json.dumps(dsse.make_bundle(new)))


# --------------------------------------------------------------------------- identity

def test_honest_report_verifies_under_the_keyring(world, tmp_path: Path, capsys) -> None:
    rc, out, _ = _verify(world, _signed(world, tmp_path / "r"), capsys)
    assert rc == 0, out
    assert "PASS identity: key examplecorp is bound to vendor 'ExampleCorp'" in out
    assert "PASS bundle:" in out and "PASS validity:" in out


def test_attacker_key_in_the_keyring_cannot_sign_for_another_vendor(world, tmp_path: Path, capsys) -> None:
    rc, out, _ = _verify(world, _signed(world, tmp_path / "r", key="attacker"), capsys)
    assert rc == 1
    line = _line(out, "identity")
    assert line.startswith("FAIL") and "'ExampleCorp'" in line and "othercorp" in line and "'OtherCorp'" in line


def test_key_bound_only_to_another_vendor_is_rejected(world, tmp_path: Path, capsys) -> None:
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {world['vendor_pub']}\n    vendors: [ExampleCorpX]\n")
    folder = _signed(world, tmp_path / "r")
    rc, out, _ = _cli(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])], capsys)
    assert rc == 1 and _line(out, "identity").startswith("FAIL") and "ExampleCorpX" in _line(out, "identity")


def test_duplicate_yaml_key_in_a_keyring_entry_is_refused(world, tmp_path: Path, capsys) -> None:
    """Two public_key lines in one entry: PyYAML would keep the last (the attacker's)."""
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {world['vendor_pub']}\n"
                    f"    public_key: {world['attacker_pub']}\n    vendors: [ExampleCorp]\n")
    folder = _signed(world, tmp_path / "r", key="attacker")
    rc, _, err = _cli(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])], capsys)
    _one_error_line(rc, err, "duplicate key 'public_key'", str(ring))


@pytest.mark.parametrize("text, needle", [
    ('{"a": 1, "a": 2}', "duplicate key 'a'"),
    ('{"a": NaN}', "NaN"),
    ('{"a": Infinity}', "Infinity"),
    ('{"a": -Infinity}', "Infinity"),
    ("[" * 500 + "]" * 500, "nested deeper than"),
    ("[" * 100000 + "]" * 100000, "nested deeper than"),
])
def test_strict_json_reader(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(UserError, match=needle) as exc:
        strict_input.load(p, what="thing")
    assert str(p) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("text, needle", [
    ("a: 1\na: 2\n", "duplicate key 'a'"),
    ("a: .nan\n", "NaN"),
    ("a: [.inf]\n", "inf"),
    ("a: " + "[" * 200 + "]" * 200 + "\n", "nested deeper than"),
    ("a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
     "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n", "more than"),
])
def test_strict_yaml_reader(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "x.yaml"
    p.write_text(text)
    with pytest.raises(UserError, match=needle):
        strict_input.load(p, what="thing")


def test_non_utf8_and_oversize_and_special_files(tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(UserError, match="not UTF-8"):
        strict_input.load(p, what="thing")
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(strict_input.MAX_FILE_BYTES + 1)  # sparse: refused by its size, never read
    with pytest.raises(UserError, match="over the"):
        strict_input.load(big, what="thing")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="is a FIFO"):
        strict_input.load(fifo, what="thing")
    with pytest.raises(UserError, match="is a device"):
        strict_input.read_regular(Path("/dev/zero"), "thing")


# --------------------------------------------------------------------------- consistency

@pytest.mark.parametrize("field, value", [
    ("vendor", "OtherCorp"), ("product", "NPU X2"), ("finishedAt", "2027-01-01T00:00:00Z"),
    ("manifestSha256", "cd" * 32), ("rayVersion", "2.61.0"), ("environmentSha256", "00" * 32), ("tier", None),
])
def test_statement_report_mismatch_is_a_claims_failure(world, tmp_path: Path, capsys, field: str, value: Any) -> None:
    folder = _signed(world, tmp_path / "r")
    _resign(world, folder, lambda st: st["predicate"][att.EXTENSION].__setitem__(field, value))
    rc, out, _ = _verify(world, folder, capsys)
    assert rc == 1 and _line(out, "claims").startswith("FAIL") and field in _line(out, "claims") + "tier"


def test_statement_configuration_must_bind_the_release_data(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")

    def swap_labels(st: dict[str, Any]) -> None:
        for rd in st["predicate"]["configuration"]:
            if rd["name"] == "tiers/labels.yaml":
                rd["digest"]["sha256"] = "ee" * 32
    _resign(world, folder, swap_labels)
    rc, out, _ = _verify(world, folder, capsys)
    assert rc == 1 and "tiers/labels.yaml" in _line(out, "claims")


def test_corrupt_sigstore_bundle_beside_a_good_envelope_fails(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")
    (folder / att.BUNDLE_NAME).write_text("{corrupt")
    rc, out, _ = _verify(world, folder, capsys)
    assert rc == 1 and _line(out, "bundle").startswith("FAIL") and "not valid JSON" in _line(out, "bundle")


def test_bundle_carrying_another_envelope_fails(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")
    other = _signed(world, tmp_path / "o", build_report(nodes=1))
    (folder / att.BUNDLE_NAME).write_bytes((other / att.BUNDLE_NAME).read_bytes())
    rc, out, _ = _verify(world, folder, capsys)
    assert rc == 1 and "carry different envelopes" in _line(out, "bundle")
    # and verifying the bundle itself checks the envelope beside it the same way
    rc, out, _ = _verify(world, folder / att.BUNDLE_NAME, capsys)
    assert rc == 1 and "carry different envelopes" in _line(out, "bundle")


# --------------------------------------------------------------------------- release binding, waivers, validity

def _waived_report(blocks_tier_in_report: bool = False) -> dict[str, Any]:
    w = suite().waivers[0]
    # the copy a run writes (conformance.report.results): the release's entry whole, and the outcome it replaced
    return build_report({w.check: "waived"}, waivers={w.check: {"check": w.check, "issue": w.issue, "reason": w.reason,
                                                                "expires": w.expires,
                                                                "blocks_tier": blocks_tier_in_report,
                                                                "original_outcome": "fail"}})


def test_blocks_tier_comes_from_the_release_not_the_report(world, tmp_path: Path) -> None:
    w = suite().waivers[0]
    folder = _signed(world, tmp_path / "r", _waived_report(blocks_tier_in_report=False))
    strict_file = tmp_path / "waivers.json"
    strict_file.write_text(json.dumps({"schema_version": 1, "waivers": [
        {"check": w.check, "issue": w.issue, "reason": w.reason, "expires": w.expires, "blocks_tier": True}]}))
    v = verify_path(folder, [key_from_file(world["vendor_pub"])], releases_file=world["releases"],
                    waivers_file=strict_file)
    tier = next(line for line in v.lines if line.name == "tier")
    needs_it = any(w.check in t["required_checks"] for t in build_report()["tiers"])
    assert tier.ok is not needs_it, tier


def test_report_waivers_digest_must_be_the_releases(world, tmp_path: Path, capsys) -> None:
    report = build_report()
    report["suite"]["waivers_sha256"] = "ab" * 32
    rc, out, _ = _verify(world, _signed(world, tmp_path / "r", report), capsys)
    assert rc == 1 and "waivers_sha256" in _line(out, "release")


def test_verify_at_a_date_after_a_waiver_expires_requires_recertification(world, tmp_path: Path, capsys) -> None:
    w = suite().waivers[0]
    folder = _signed(world, tmp_path / "r", _waived_report())
    rc, out, _ = _verify(world, folder, capsys, "--at", "2026-06-01")
    assert rc == 0, out
    rc, out, _ = _verify(world, folder, capsys, "--at", "2099-01-01")
    line = _line(out, "validity")
    assert rc == 1 and "recertification required as of 2099-01-01" in line and w.check in line
    rc, _, err = _verify(world, folder, capsys, "--at", "next tuesday")
    _one_error_line(rc, err, "--at")


def test_ray_version_outside_the_release_window_requires_recertification(world, tmp_path: Path, capsys) -> None:
    report = build_report()
    report["environment"]["ray"] = "2.61.0"
    rc, out, _ = _verify(world, _signed(world, tmp_path / "r", report), capsys)
    line = _line(out, "validity")
    assert rc == 1 and "recertification required" in line and "2.61.0" in line


def test_release_entry_certifies_series_and_exact_versions() -> None:
    rel = releases.load_releases()[next(iter(releases.load_releases()))]
    assert rel.certifies_ray(rel.ray_versions[0] + ".0") and not rel.certifies_ray("1.0.0")
    assert not rel.certifies_ray(None) and not rel.certifies_ray(["2.60.0"])


# --------------------------------------------------------------------------- hostile input

def _tree_with(world, tmp_path: Path) -> Path:
    return _signed(world, tmp_path / "r")


def test_symlink_leaving_the_submission_is_refused(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")
    outside = tmp_path / "outside.json"
    outside.write_bytes((folder / "report.json").read_bytes())
    (folder / "report.json").unlink()
    (folder / "report.json").symlink_to(outside)
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "symlink leading outside")


def test_fifo_and_dev_zero_named_report_json(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")
    (folder / "report.json").unlink()
    os.mkfifo(folder / "report.json")
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "FIFO")
    (folder / "report.json").unlink()
    (folder / "report.json").symlink_to("/dev/zero")
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "report.json")


def test_oversize_envelope_and_too_many_signatures(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r")
    env = json.loads((folder / att.ENVELOPE_NAME).read_text())
    env["signatures"] = env["signatures"] * (dsse.MAX_SIGNATURES + 1)
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(env))
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "signatures, over the limit")
    with open(folder / att.ENVELOPE_NAME, "wb") as fh:
        fh.truncate(100 * 1024 * 1024)  # 100 MB (sparse): refused by size, never read
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "over the", "limit")


def test_600k_signatures_are_refused_by_count_before_any_is_read(world, tmp_path: Path, capsys, monkeypatch) -> None:
    """Refused by size or count, before any signature is decoded (the cap is what keeps it quick;
    no wall-clock bound here: a loaded machine would make one a false alarm)."""
    from conformance.signing import dsse
    folder = _signed(world, tmp_path / "r")
    env = json.loads((folder / att.ENVELOPE_NAME).read_text())
    env["signatures"] = [{"keyid": "", "sig": "AAAA"}] * 600_000
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(env, separators=(",", ":")))
    decoded: list[str] = []
    real_decode = dsse.b64decode
    monkeypatch.setattr(dsse, "b64decode", lambda text: decoded.append(text) or real_decode(text))
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "over the")   # by size or by count: before any is read
    assert "AAAA" not in decoded


@pytest.mark.parametrize("report_text", [
    '{"checks": 5}',
    "[" * 5000 + "]" * 5000,
    json.dumps({**build_report(), "manifest": {"vendor": ["not", "a", "name"]}}),
    json.dumps({**build_report(), "checks": [{"id": 5}]}),
    json.dumps({**build_report(), "suite": "x"}),
    json.dumps({**build_report(), "environment": 7}),
])
def test_garbage_signed_reports_fail_verification_in_one_line(world, tmp_path: Path, capsys, report_text: str) -> None:
    folder = _signed(world, tmp_path / "r")
    (folder / "report.json").write_text(report_text)
    rc, out, err = _verify(world, folder, capsys)
    assert rc in (1, 2) and "Traceback" not in out + err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1


def test_ansi_and_newline_keyid_cannot_forge_output_lines(world, tmp_path: Path, capsys) -> None:
    folder = _signed(world, tmp_path / "r", key="attacker")
    env = json.loads((folder / att.ENVELOPE_NAME).read_text())
    env["signatures"][0]["keyid"] = f"x\nPASS signature: fake\n{ESC}[32mPASS identity{ESC}[0m\rVERIFIED: it"
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(env))
    (folder / att.BUNDLE_NAME).unlink()
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {world['vendor_pub']}\n    vendors: [ExampleCorp]\n")
    rc, out, _ = _cli(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])], capsys)
    assert rc == 1 and ESC not in out and "\r" not in out
    assert not any(line.startswith(("PASS signature: fake", "VERIFIED")) for line in out.splitlines())
    assert _line(out, "signature").startswith("FAIL")


def _submissions(world, root: Path) -> Path:
    """Good, tampered and garbage submissions side by side."""
    subs = root / "subs"
    _signed(world, subs / "a-good")
    _signed(world, subs / "b-tampered")
    (subs / "b-tampered" / "report.md").write_text("edited\n")
    pipe_vendor = build_report()
    pipe_vendor["manifest"]["vendor"] = "Evil | verified (examplecorp) | x"
    _signed(world, subs / "c-pipe", pipe_vendor)
    for name, text in (("d-checks5", '{"checks": 5}'), ("e-deep", "[" * 10000 + "]" * 10000),
                       ("f-wrongtype", json.dumps({**build_report(), "manifest": {"vendor": ["x"]}, "checks": "no"})),
                       ("g-notjson", "{"), ("h-nan", '{"a": NaN}')):
        (subs / name).mkdir(parents=True)
        (subs / name / "report.json").write_text(text)
    (subs / "i-fifo").mkdir()
    os.mkfifo(subs / "i-fifo" / "report.json")
    (subs / "j-devzero").mkdir()
    (subs / "j-devzero" / "report.json").symlink_to("/dev/zero")
    (subs / "k-escape").mkdir()
    (subs / "k-escape" / "report.json").write_text(json.dumps({**build_report(), "manifest": {
        "vendor": f"{ESC}[2J{ESC}[32mverified\nnext row", "product": "p"}}))
    return subs


def test_review_of_a_hostile_folder_prints_a_complete_table(world, tmp_path: Path, capsys) -> None:
    subs = _submissions(world, tmp_path)
    rc, out, err = _cli(["review", str(subs), "--keyring", str(world["keyring"]), "--releases",
                         str(world["releases"]), "--format", "json"], capsys)
    rows = {r["submission"]: r for r in json.loads(out)}
    assert rc == 1 and "Traceback" not in err
    assert sorted(rows) == sorted(p.name for p in subs.iterdir())
    assert rows["a-good"]["signature"] == "verified (examplecorp)"
    assert "subject" in rows["b-tampered"]["signature"]
    assert rows["c-pipe"]["signature"].startswith("signed by examplecorp; failed: identity")
    for name in ("d-checks5", "g-notjson", "h-nan", "i-fifo", "j-devzero", "e-deep"):
        assert rows[name]["signature"].startswith("error:"), rows[name]
    assert rows["d-checks5"]["recomputed_tier"] is None and "schema-valid" in " ".join(rows["d-checks5"]["notes"])
    # Markdown: one table row per submission, every row with the same number of cells
    rc, out, _ = _cli(["review", str(subs), "--keyring", str(world["keyring"]), "--releases",
                       str(world["releases"]), "--format", "md"], capsys)
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(rows)
    cells = {len(line.replace("\\|", "").split("|")) for line in table}
    assert len(cells) == 1, table
    assert ESC not in out
    pipe_row = next(line for line in table if "c-pipe" in line)
    assert "Evil \\| verified" in pipe_row
    # text: no escape sequences, one line per submission
    rc, out, _ = _cli(["review", str(subs), "--releases", str(world["releases"])], capsys)
    assert ESC not in out and len(out.strip().splitlines()) == 2 + len(rows)


def test_review_time_bound_turns_a_slow_submission_into_an_error_row(world, tmp_path: Path, monkeypatch) -> None:
    """The bound ends a submission that never finishes, even inside one call in C that no signal
    interrupts (a regular expression backtracking without end); the next one, reviewed by a fresh
    worker under a bound a loaded machine cannot miss, is still verified."""
    import re
    import time

    from conformance.signing import bounds, review
    subs = tmp_path / "subs"
    _signed(world, subs / "a")
    _signed(world, subs / "b")
    real = review._fill

    def slow(row, folder, *args):
        if folder.name == "a":
            re.fullmatch(r"(a+)+b", "a" * 64)     # exponential, in C: SIGALRM would wait for it
        return real(row, folder, *args)
    monkeypatch.setattr(review, "_fill", slow)
    trusted, known = load_keyring(world["keyring"]), review.releases.load_releases(world["releases"])
    with bounds.BoundedWorker(lambda f: review._row(f, trusted, known, world["releases"], None)) as worker:
        started = time.monotonic()
        a = review.review_submission(subs / "a", trusted, known, world["releases"], timeout_s=0.5, worker=worker)
        assert time.monotonic() - started < 10
        b = review.review_submission(subs / "b", trusted, known, world["releases"], timeout_s=300, worker=worker)
    assert a.signature == ("error: took too long: its review ran past the bound of 0.5 s per submission "
                           "(tiers/review.yaml submission.timeout_s, or --submission-timeout)")
    assert a.over_bound.startswith("took too long")
    assert b.signature.startswith("verified") and not b.over_bound


# --------------------------------------------------------------------------- diff

def _diff(tmp_path: Path, old: Any, new: Any, capsys, *extra: str) -> tuple[int, str, str]:
    (tmp_path / "old.json").write_text(old if isinstance(old, str) else json.dumps(old))
    (tmp_path / "new.json").write_text(new if isinstance(new, str) else json.dumps(new))
    return _cli(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), *extra], capsys)


def test_diff_refuses_nan_duplicates_and_bad_tolerances(tmp_path: Path, capsys) -> None:
    cid = check_ids()[0]
    good = build_report(metrics={cid: {"busbw_gbps": 10.0}})
    nan = json.dumps(good).replace('"busbw_gbps": 10.0', '"busbw_gbps": NaN')
    rc, _, err = _diff(tmp_path, good, nan, capsys)
    _one_error_line(rc, err, "NaN")
    dup = json.loads(json.dumps(good))
    dup["checks"].append(dict(dup["checks"][0]))
    rc, _, err = _diff(tmp_path, good, dup, capsys)
    _one_error_line(rc, err, "duplicate id", cid)
    for tol in ("nan", "inf", "-0.1", "abc", "-inf"):
        rc, _, err = _diff(tmp_path, good, good, capsys, "--tolerance", tol)
        _one_error_line(rc, err, "--tolerance")


@pytest.mark.parametrize("after", [None, "fast", True, {"x": 1}, []])
def test_diff_metric_that_became_non_numeric_is_a_regression(tmp_path: Path, capsys, after: Any) -> None:
    figures = {"largest_size_gbps": 1.0, "reference_gbps": 2.0}   # PF-002's figure of merit: achieved_fraction
    old = build_report(metrics={"PF-002": {**figures, "achieved_fraction": 0.5}})
    new = build_report(metrics={"PF-002": {**figures, "achieved_fraction": after}})
    rc, out, _ = _diff(tmp_path, old, new, capsys)
    assert rc == 1 and "no longer a number" in out


# --------------------------------------------------------------------------- keys

def test_keygen_uses_scrypt_and_old_pbkdf2_keys_still_load_with_a_warning(tmp_path: Path, capsys,
                                                                           monkeypatch) -> None:
    monkeypatch.setenv("KEY_PASS", "correct horse")
    assert cli_main(["keygen", "--out", str(tmp_path / "k"), "--passphrase-env", "KEY_PASS"]) == 0
    pem = (tmp_path / "k" / keys.PRIVATE_KEY_NAME).read_bytes()
    assert pkcs8.kdf_weakness(pem) is None and b"ENCRYPTED PRIVATE KEY" in pem
    der = base64.b64decode(b"".join(pem.splitlines()[1:-1]))
    assert pkcs8._oid(pkcs8.OID_SCRYPT) in der
    assert keys.load_private_key(tmp_path / "k" / keys.PRIVATE_KEY_NAME, b"correct horse")
    # a key written by the old code: PBKDF2 with 2,048 iterations
    old = keys.generate_private_key()
    weak = tmp_path / "weak.key"
    weak.write_bytes(old.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.BestAvailableEncryption(b"correct horse")))
    weak.chmod(0o600)
    assert "2048 iterations" in (pkcs8.kdf_weakness(weak.read_bytes()) or "")
    folder = write_report_dir(tmp_path / "r", build_report())
    capsys.readouterr()
    assert cli_main(["sign", str(folder), "--key", str(weak), "--passphrase-env", "KEY_PASS"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning:") and "2048 iterations" in err and len(err.strip().splitlines()) == 1


def test_sign_refuses_a_group_or_world_readable_key(world, tmp_path: Path, capsys) -> None:
    pair = keys.write_keypair(tmp_path / "k")
    pair.private_path.chmod(0o644)
    folder = write_report_dir(tmp_path / "r", build_report())
    rc, _, err = _cli(["sign", str(folder), "--key", str(pair.private_path)], capsys)
    _one_error_line(rc, err, "0644", "chmod 600")
    assert not (folder / att.ENVELOPE_NAME).exists()
    rc, _, _ = _cli(["sign", str(folder), "--key", str(pair.private_path), "--allow-insecure-key-mode"], capsys)
    assert rc == 0 and (folder / att.ENVELOPE_NAME).exists()


def test_reports_are_written_without_nan(tmp_path: Path) -> None:
    from conformance.report.build import write_json
    with pytest.raises(ValueError):
        write_json({"x": float("nan")}, tmp_path)


def test_plugin_artifact_or_envelope_symlinked_outside_is_refused(world, tmp_path: Path, capsys) -> None:
    wheel = tmp_path / "elsewhere.whl"
    wheel.write_bytes(b"wheel")
    art = {"name": "plugin.whl", "sha256": datafiles.sha256_bytes(b"wheel")}
    folder = _signed(world, tmp_path / "r", build_report(plugin_artifact=art))
    (folder / "plugin.whl").symlink_to(wheel)
    rc, out, _ = _verify(world, folder, capsys)
    assert rc == 1 and "symlink leading outside" in _line(out, "subject plugin.whl")
    (folder / "plugin.whl").unlink()
    outside = tmp_path / "env.json"
    outside.write_bytes((folder / att.ENVELOPE_NAME).read_bytes())
    (folder / att.ENVELOPE_NAME).unlink()
    (folder / att.ENVELOPE_NAME).symlink_to(outside)
    rc, _, err = _verify(world, folder, capsys)
    _one_error_line(rc, err, "symlink leading outside")
