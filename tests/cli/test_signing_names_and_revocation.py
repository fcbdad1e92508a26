"""Issue 30, class 5 and deliverables 4-5: what the SIG sees cannot mislead or stall, and a key
can be revoked from a date on.

* names: a keyring refuses invisible characters and look-alike names; verify's `names` line
  refuses a report whose vendor or product could print like another's; review marks duplicate
  submissions of one product and look-alike spellings (text, json and the dashboard);
* bounded pages: one report with hundreds of charts or rows draws within the page's caps and
  says what it left out; a page that takes too long is cut by --submission-timeout;
* revocation: reports signed before the key's revocation stay valid, later ones do not, and
  `revoked.reports` makes the SIG's own record the only anchor.
"""
from __future__ import annotations

import copy
import json
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from conformance.cli.signing import main
from conformance.errors import UserError
from conformance.report.html import limits
from conformance.report.html.page import render_report_page
from conformance.signing import keyring, keys, review, revocation
from conformance.signing.sign import sign_report_dir
from html_samples import example_report
from signing_support import build_report, write_releases, write_report_dir


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("names")
    pair = keys.write_keypair(d / "k")
    other = keys.write_keypair(d / "other")
    return {"dir": d, "key": pair.private_path, "pub": pair.public_path, "other_pub": other.public_path,
            "releases": write_releases(d / "releases.yaml")}


def _signed(world: dict[str, Any], name: str, report: dict[str, Any]) -> Path:
    folder = write_report_dir(world["dir"] / "subs" / name, report)
    sign_report_dir(folder, world["key"])
    return folder


def _keyring(world: dict[str, Any], path: Path, *entries: dict[str, Any]) -> Path:
    pems = [world["pub"], world["other_pub"]]
    path.write_text(json.dumps({"keys": [{"name": f"k{i}", "public_key": str(pems[i]), "vendors": ["ExampleCorp"],
                                          **e} for i, e in enumerate(entries)]}))
    return path


def _verify(world: dict[str, Any], folder: Path, ring: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])])
    return rc, capsys.readouterr().out


def _line(out: str, name: str) -> str:
    return next((line for line in out.splitlines() if line.split(" ", 1)[-1].startswith(name + ":")), "")


# ----------------------------------------------------------------------------- keyring names

@pytest.mark.parametrize("ch", ["\u034f", "\u2800", "\ufe0f", "\u17b5", "\U000e0100", "\u3164", "\u00a0", "\u200b"])
def test_a_keyring_vendor_with_an_invisible_character_is_refused(world: dict[str, Any], tmp_path: Path,
                                                                 ch: str) -> None:
    ring = _keyring(world, tmp_path / "ring.json", {}, {"vendors": [f"ExampleCorp{ch}"]})
    with pytest.raises(UserError, match=r"keys\[1\]\.vendors\[0\]: .*print as nothing") as exc:
        keyring.load_keyring(ring)
    assert ch not in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("first, second", [
    ({"vendors": ["BAC"]}, {"vendors": ["\u0412\u0410\u0421"]}),          # whole-script Cyrillic ВАС
    ({"vendors": ["Example"]}, {"vendors": ["Examp1e"]}),                 # digit for letter
    ({"name": "simacc-ci"}, {"name": "SIMACC-CI"}),                       # key names too
])
def test_keyring_names_that_look_alike_are_refused(world: dict[str, Any], tmp_path: Path,
                                                   first: dict[str, Any], second: dict[str, Any]) -> None:
    with pytest.raises(UserError, match="same name"):
        keyring.load_keyring(_keyring(world, tmp_path / "ring.json", first, second))


def test_one_vendor_on_two_keys_is_a_rotation_not_a_look_alike(world: dict[str, Any], tmp_path: Path) -> None:
    ring = keyring.load_keyring(_keyring(world, tmp_path / "ring.json", {}, {}))
    assert [k.vendors for k in ring] == [("ExampleCorp",), ("ExampleCorp",)]


# ----------------------------------------------------------------------------- verify: names

def _signed_anyway(world: dict[str, Any], name: str, report: dict[str, Any],
                   monkeypatch: pytest.MonkeyPatch) -> Path:
    """Signed by a signer that skips the names rule (an older or altered `sign`): what verify still refuses."""
    from conformance.signing import submission

    folder = write_report_dir(world["dir"] / "subs" / name, report)
    with monkeypatch.context() as m:
        m.setattr(submission, "name_problem", lambda report: None)
        sign_report_dir(folder, world["key"])
    return folder


@pytest.mark.parametrize("field, value", [("vendor", "ExampleCorp\u034f"), ("product", "NPU X1\u2800"),
                                          ("product", "NPU X\ufe0f1"), ("vendor", "Ex\u0430mpleCorp")])
def test_verify_refuses_names_that_print_like_others(world: dict[str, Any], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], field: str, value: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    report = build_report()
    report["manifest"][field] = value
    folder = _signed_anyway(world, f"names-{field}-{ord(value[-1]):x}", report, monkeypatch)
    rc = main(["verify", str(folder), "--key", str(world["pub"]), "--releases", str(world["releases"])])
    out = capsys.readouterr().out
    assert rc == 1 and _line(out, "names").startswith("FAIL") and f"manifest.{field}" in _line(out, "names")
    assert not any(ch in out for ch in "\u034f\u2800\ufe0f")         # printed escaped


@pytest.mark.parametrize("field, value", [("vendor", "ExampleCorp\u034f"), ("product", "NPU X1\u2800"),
                                          ("vendor", "Ex\u0430mpleCorp")])
def test_sign_refuses_first_the_names_verify_refuses_in_one_line(world: dict[str, Any], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 field: str, value: str) -> None:
    """The signer applies verify's own rule (submission.name_problem), through the real CLI."""
    report = build_report()
    report["manifest"][field] = value
    folder = write_report_dir(tmp_path / "sub", report)
    rc = main(["sign", str(folder), "--key", str(world["key"])])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "verify would say: FAIL names" in err and f"manifest.{field}" in err
    assert not (folder / "report.intoto.json").exists()
    assert not any(ch in err for ch in "\u034f\u2800")


# ----------------------------------------------------------------------------- keyring: key names

@pytest.mark.parametrize("name", ["OtherCorp", "0therCorp", "OTHERCORP", "othercorp-ci", "OtherCorp official",
                                  "\uff2ftherCorp"])
def test_a_key_named_as_another_vendor_is_refused_in_one_line(world: dict[str, Any], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str], name: str) -> None:
    """A key name is printed "signed by NAME": one that reads as a vendor the key does not sign for
    (spelt alike, look-alike characters, case, or that vendor as a word of it) is refused."""
    ring = _keyring(world, tmp_path / "ring.json", {"vendors": ["OtherCorp"], "name": "other-2026"},
                    {"name": name})
    folder = _signed(world, "key-names", build_report()) if not (world["dir"] / "subs" / "key-names").exists() \
        else world["dir"] / "subs" / "key-names"
    rc = main(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "keys[1].name" in err and "reads as the vendor 'OtherCorp'" in err


def test_a_key_named_as_its_own_vendor_is_fine(world: dict[str, Any], tmp_path: Path) -> None:
    ring = _keyring(world, tmp_path / "ring.json", {"vendors": ["OtherCorp"], "name": "othercorp-ci"},
                    {"name": "ExampleCorp 2026"})
    assert [k.name for k in keyring.load_keyring(ring)] == ["othercorp-ci", "ExampleCorp 2026"]


# ----------------------------------------------------------------------------- revocation

def test_a_revocation_dated_in_the_future_is_refused_in_one_line(world: dict[str, Any], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Refused, not read as today: no one knows the first day a key will be in other hands."""
    tomorrow = date.fromordinal(keyring.utc_today().toordinal() + 1).isoformat()
    ring = _keyring(world, tmp_path / "ring.json", {"revoked": {"from": tomorrow, "reason": "scheduled rotation"}})
    folder = _signed(world, "future-revocation", build_report())
    rc = main(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "keys[0].revoked.from" in err and "in the future" in err
    today = keyring.utc_today().isoformat()
    ring = _keyring(world, tmp_path / "ring.json", {"revoked": {"from": today, "reason": "rotated today"}})
    assert keyring.load_keyring(ring)[0].revoked.since.isoformat() == today  # type: ignore[union-attr]
    assert keyring.load_keyring(_keyring(world, tmp_path / "r2.json", {"revoked": {"from": tomorrow, "reason": "x"}}),
                                today=date.fromisoformat(tomorrow))[0].revoked is not None


# ----------------------------------------------------------------------------- revocation as of a date

@pytest.mark.parametrize("since, ok", [("2026-06-01", True), ("2026-03-02", True), ("2026-03-01", False),
                                       ("2026-02-01", False)])
def test_a_key_revoked_from_a_date_keeps_only_the_reports_signed_before(
        world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], since: str, ok: bool) -> None:
    folder = world["dir"] / "subs" / "revocation"
    if not folder.exists():
        _signed(world, "revocation", build_report())  # finished 2026-03-01T12:00:00Z
    ring = _keyring(world, tmp_path / "ring.json", {"revoked": {"from": since, "reason": "rotated to k1"}})
    rc, out = _verify(world, folder, ring, capsys)
    line = _line(out, "revocation")
    assert (rc == 0) == ok and line.startswith("PASS" if ok else "FAIL"), out
    assert f"revoked from {since} (rotated to k1)" in line
    if ok:
        assert "finished_at is the signer's claim" in line


def test_a_revocation_with_a_list_keeps_exactly_the_reports_the_sig_recorded(
        world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = _signed(world, "kept", build_report())
    backdated = build_report()
    backdated["manifest"]["product"] = "NPU X1 (made after the theft)"
    later = _signed(world, "backdated", backdated)  # finished_at claims the same early date
    digest = keys_sha256(kept / "report.json")
    ring = _keyring(world, tmp_path / "ring.yaml",
                    {"revoked": {"from": "2026-06-01", "reason": "compromised", "reports": [digest]}})
    rc, out = _verify(world, kept, ring, capsys)
    assert rc == 0 and "one of the 1 report(s) the keyring keeps" in _line(out, "revocation")
    rc, out = _verify(world, later, ring, capsys)
    assert rc == 1 and "is not one of the 1 report(s)" in _line(out, "revocation")
    rows = review.review_folder(world["dir"] / "subs", keyring.load_keyring(ring), releases_file=world["releases"])
    assert next(r for r in rows if r.submission == "backdated").signature == "signed by k0; failed: revocation"


def keys_sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_report_naming_a_release_published_after_the_revocation_was_signed_after_it() -> None:
    key = keyring.TrustedKey("k", None, "SHA256:x", "ecdsa-p256-sha256", ("ExampleCorp",),  # type: ignore[arg-type]
                             keyring.Revocation(date(2026, 6, 1), "compromised"))
    report = {"finished_at": "2026-05-01T00:00:00Z"}
    ok, why = revocation.judge(key, report, "ab" * 32, "0.1.0+data.9", date(2026, 6, 1))
    assert not ok and "published 2026-06-01, so it was signed after the revocation" in why
    assert revocation.judge(key, report, "ab" * 32, "0.1.0", date(2026, 1, 1))[0]
    assert not revocation.judge(key, {"finished_at": "soon"}, "ab" * 32, "0.1.0", date(2026, 1, 1))[0]


def test_an_unquoted_yaml_date_is_read_as_written(world: dict[str, Any], tmp_path: Path) -> None:
    ring = tmp_path / "ring.yaml"
    ring.write_text(f"keys:\n  - name: k\n    public_key: {world['pub']}\n    vendors: [ExampleCorp]\n"
                    "    revoked:\n      from: 2026-11-01\n      reason: rotated\n")
    assert keyring.load_keyring(ring)[0].revoked == keyring.Revocation(date(2026, 11, 1), "rotated")


def test_a_bad_revocation_is_one_line_naming_the_field_exit_2(world: dict[str, Any], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    ring = _keyring(world, tmp_path / "ring.json", {"revoked": {"from": "2026-11-31", "reason": "x"}})
    folder = _signed(world, "bad-ring", build_report())
    rc = main(["verify", str(folder), "--keyring", str(ring), "--releases", str(world["releases"])])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "keys[0].revoked.from" in err


# ----------------------------------------------------------------------------- review: duplicates

@pytest.fixture(scope="module")
def review_dir(world: dict[str, Any]) -> Path:
    root = world["dir"] / "review"
    for name in ("a-first", "b-again"):
        sign_report = build_report()
        folder = write_report_dir(root / name, sign_report)
        sign_report_dir(folder, world["key"])
    lookalike = build_report()
    lookalike["manifest"]["product"] = "NPU \u04251"           # a Cyrillic Х, one script in its word
    write_report_dir(root / "c-lookalike", lookalike)
    hidden = build_report()
    hidden["manifest"]["vendor"] = "ExampleCorp\u034f"
    hidden["manifest"]["product"] = "NPU X2"
    write_report_dir(root / "d-hidden", hidden)
    write_report_dir(root / "e-other", {**build_report(), "manifest": {**build_report()["manifest"],
                                                                       "vendor": "OtherCorp"}})
    return root


def test_review_marks_duplicates_and_look_alikes(world: dict[str, Any], review_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ring = _keyring(world, tmp_path / "ring.json", {})
    main(["review", str(review_dir), "--keyring", str(ring), "--releases", str(world["releases"]),
          "--format", "json"])
    rows = {r["submission"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["a-first"]["signature"] == rows["b-again"]["signature"] == "verified (k0)"
    assert rows["a-first"]["duplicate_of"] == ["b-again"] and rows["b-again"]["duplicate_of"] == ["a-first"]
    assert set(rows["c-lookalike"]["looks_like"]) == {"a-first", "b-again"}
    assert any("U+0425 CYRILLIC CAPITAL LETTER HA" in n for n in rows["c-lookalike"]["notes"])
    assert any("U+034F COMBINING GRAPHEME JOINER" in n for n in rows["d-hidden"]["notes"])
    assert any("keyring's vendor 'ExampleCorp'" in n for n in rows["d-hidden"]["notes"])
    assert rows["e-other"]["duplicate_of"] == rows["e-other"]["looks_like"] == []
    main(["review", str(review_dir), "--releases", str(world["releases"])])
    text = capsys.readouterr().out
    assert "same product as" in text and "DUPLICATE of b-again" in text and "LOOK-ALIKE of a-first, b-again" in text
    assert "\u034f" not in text and "ExampleCorp\\u034f" in text


def test_the_dashboard_marks_them_too(world: dict[str, Any], review_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert main(["review", str(review_dir), "--format", "html", "--out", str(out),
                 "--releases", str(world["releases"])]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="duplicates">2 duplicate submission(s)' in index and 'id="lookalikes">3 look-alike' in index
    assert "DUPLICATE of b-again" in index and "LOOK-ALIKE of a-first, b-again" in index
    assert "\u034f" not in index and "ExampleCorp\\u034f" in index


# ----------------------------------------------------------------------------- bounded pages

def _many_charts(n: int) -> dict[str, Any]:
    report = copy.deepcopy(example_report())
    data = report["sections"]["Transport"]["data"]
    sweep = next(iter(data["sweep"].values()))
    data["sweep"] = {f"dev{i}": copy.deepcopy(sweep) for i in range(n)}
    return report


def test_a_page_draws_within_its_caps_and_says_what_it_left_out() -> None:
    report = _many_charts(6)
    report["checks"] = report["checks"] * 3
    page, capped = render_report_page(report, page_limits=limits.PageLimits(charts=3, points=256, rows=50))
    assert page.count('class="chart"') <= 3 + 1 and page.count("chart not drawn") >= 3
    assert any("not drawn: the page already has 3 charts" in c for c in capped)
    assert any(c.startswith("checks: 50 of ") for c in capped)
    assert 'id="capped"' in page and "does not show everything in report.json" in page


def test_a_page_over_its_byte_cap_is_replaced_by_one_that_says_so() -> None:
    page, capped = render_report_page(example_report(), page_limits=limits.PageLimits(page_bytes=100_000))
    assert len(page) < 2000 and "over the cap of 100000 bytes" in page and capped[-1].startswith("page: ")
    assert '<meta name="generator" content="ray-accelerator-conformance">' in page


def test_review_html_of_a_report_with_hundreds_of_charts_is_bounded(world: dict[str, Any], tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    write_report_dir(subs / "many", _many_charts(300))
    out = tmp_path / "site"
    started = time.monotonic()
    rows = review.review_folder(subs, None, releases_file=world["releases"])
    from conformance.signing.dashboard import write_site

    index = write_site(subs, rows, out).read_text(encoding="utf-8")
    page = (out / "submissions" / "many" / "report.html").read_text(encoding="utf-8")
    assert page.count('class="chart"') <= limits.DEFAULT.charts + 2   # + the topology picture and a recovery chart
    assert "page capped: chart" in index and time.monotonic() - started < 300


def test_a_page_that_takes_too_long_is_cut_by_the_submission_timeout(world: dict[str, Any], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.signing import dashboard

    def slow(*args: Any, **kwargs: Any) -> tuple[str, list[str]]:
        time.sleep(30)
        return "", []

    monkeypatch.setattr(dashboard, "render_report_page", slow)
    subs = tmp_path / "subs"
    write_report_dir(subs / "slow", build_report())
    rows = review.review_folder(subs, None, releases_file=world["releases"])
    started = time.monotonic()
    index = dashboard.write_site(subs, rows, tmp_path / "site", timeout_s=0.5).read_text(encoding="utf-8")
    assert time.monotonic() - started < 20 and "no page: took too long: its review and drawing its page ran past the " \
        "bound of 0.5 s per submission" in index
    assert not (tmp_path / "site" / "submissions").exists()


def test_a_report_signed_by_the_old_and_the_new_key_is_judged_by_the_new_one(
        world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.signing import dsse

    folder = _signed(world, "two-signatures", build_report())
    envelope = json.loads((folder / "report.intoto.json").read_text())
    new_key = keys.write_keypair(tmp_path / "new")
    body = dsse.b64decode(envelope["payload"])
    envelope["signatures"].append(dsse.make_envelope(body, keys.load_private_key(new_key.private_path))["signatures"][0])
    (folder / "report.intoto.json").write_text(json.dumps(envelope))
    (folder / "report.sigstore.json").unlink()  # a Sigstore bundle carries one signature
    ring = tmp_path / "ring.json"
    ring.write_text(json.dumps({"keys": [
        {"name": "old", "public_key": str(world["pub"]), "vendors": ["ExampleCorp"],
         "revoked": {"from": "2026-02-01", "reason": "rotated to new"}},
        {"name": "new", "public_key": str(new_key.public_path), "vendors": ["ExampleCorp"]}]}))
    rc, out = _verify(world, folder, ring, capsys)
    assert rc == 0 and "signed by new" in _line(out, "signature") and _line(out, "revocation") == ""
