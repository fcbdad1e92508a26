"""Hostile submissions beyond single fields: sign/verify symmetry (a property), review and the
dashboard isolating one bad submission, diff as a CI gate, look-alike identities, and Unicode
separators that would forge output lines."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

sys.path.insert(0, str(Path(__file__).parent))

from conformance.errors import UserError
from conformance.sanitize import markdown_cell, terminal
from conformance.signing import attestation as att
from conformance.signing import diff, keyring, keys, review
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import verify_path
from signing_support import build_report, suite, write_releases, write_report_dir


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("hostile")
    pair = keys.write_keypair(d / "k")
    return {"dir": d, "key": pair.private_path, "pub": pair.public_path,
            "trusted": [key_from_file(pair.public_path)], "releases": write_releases(d / "releases.yaml"), "n": 0}


def _fresh(env: dict[str, Any], report: dict[str, Any] | None = None) -> Path:
    env["n"] += 1
    return write_report_dir(env["dir"] / f"s{env['n']}", report or build_report())


# ----------------------------------------------------------------------------- sign <-> verify

def _symlink_out(folder: Path, name: str) -> None:
    outside = folder.parent / f"outside-{folder.name}-{name}"
    outside.write_bytes((folder / name).read_bytes())
    (folder / name).unlink()
    os.symlink(outside, folder / name)


def _oversize(folder: Path, name: str) -> None:
    with open(folder / name, "ab") as fh:
        fh.truncate(att.MAX_REPORT_FILE_BYTES + 1)


def _schema_break(folder: Path, name: str) -> None:
    doc = json.loads((folder / "report.json").read_text())
    doc["checks"][0]["outcome"] = "passed-ish"
    (folder / "report.json").write_text(json.dumps(doc))


def _huge_int(folder: Path, name: str) -> None:
    text = (folder / "report.json").read_text()
    (folder / "report.json").write_text(text.replace('"duration_s": 3600.0', '"duration_s": 1' + "0" * 30, 1))


def _nothing(folder: Path, name: str) -> None:
    pass


MUTATIONS = {"symlink out": _symlink_out, "oversize": _oversize, "schema": _schema_break, "huge int": _huge_int,
             "none": _nothing}


def _outcome(call: Any) -> tuple[str, str]:
    try:
        result = call()
    except UserError as exc:
        return "refused", str(exc)
    return "ok", "" if result is None or not hasattr(result, "lines") else \
        "; ".join(line.render() for line in result.lines if line.name == "schema" and not line.ok)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=hs.sampled_from(sorted(MUTATIONS)), name=hs.sampled_from(att.REPORT_FILES))
def test_sign_refuses_first_what_verify_would_refuse(env: dict[str, Any], mutation: str, name: str) -> None:
    """Sign a good folder, damage it, then: verify refuses it (an error, or a failed schema line)
    exactly when sign refuses it, and sign's refusal carries verify's own line."""
    folder = _fresh(env)
    sign_report_dir(folder, env["key"])
    MUTATIONS[mutation](folder, name)
    v_kind, v_text = _outcome(lambda: verify_path(folder, env["trusted"], releases_file=env["releases"]))
    s_kind, s_text = _outcome(lambda: sign_report_dir(folder, env["key"], overwrite=True))
    verify_refuses = v_kind == "refused" or bool(v_text)
    assert (s_kind == "refused") == verify_refuses, (mutation, name, v_text, s_text)
    if v_kind == "refused":
        assert s_text == v_text
    elif v_text:
        assert v_text in s_text
    if s_kind == "ok":  # whatever sign writes, verify reads
        assert _outcome(lambda: verify_path(folder, env["trusted"], releases_file=env["releases"]))[0] == "ok"


def test_sign_refuses_an_envelope_over_verifys_cap(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _fresh(env)
    monkeypatch.setattr(att, "MAX_ENVELOPE_BYTES", 2000)
    with pytest.raises(UserError, match="over the 2000-byte limit"):
        sign_report_dir(folder, env["key"])
    assert not (folder / att.ENVELOPE_NAME).exists()


# ----------------------------------------------------------------------------- review / dashboard

def test_review_turns_any_exception_into_that_row(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    subs = env["dir"] / "subs-crash"
    write_report_dir(subs / "a-honest", build_report())
    write_report_dir(subs / "b-hostile", build_report())
    real = review._fill

    def fill(row: review.Row, folder: Path, *args: Any) -> None:
        if folder.name == "b-hostile":
            raise OverflowError("a defect this input exposes")
        real(row, folder, *args)

    monkeypatch.setattr(review, "_fill", fill)
    rows = review.review_folder(subs, releases_file=env["releases"])
    assert [r.submission for r in rows] == ["a-honest", "b-hostile"]
    assert rows[0].recomputed_tier == "stable" and "OverflowError" in rows[1].signature
    assert "a-honest" in review.render(rows)


def test_the_dashboard_does_not_follow_a_symlink_out_of_a_submission(env: dict[str, Any], tmp_path: Path) -> None:
    from conformance.signing.dashboard import write_site

    subs = tmp_path / "subs"
    folder = write_report_dir(subs / "linked", build_report())
    _symlink_out(folder, "report.json")
    rows = review.review_folder(subs, releases_file=env["releases"])
    assert rows[0].signature.startswith("error:") and "symlink" in rows[0].signature
    write_site(subs, rows, tmp_path / "site")
    assert not list((tmp_path / "site").glob("submissions/*/report.html"))


# ----------------------------------------------------------------------------- diff

def test_diff_pass_to_waived_is_a_regression() -> None:
    old = build_report()
    new = build_report({"FR-001": "waived"})
    found = [f for f in diff.diff_reports(old, new, suite()) if f.kind == "outcome"]
    assert found and found[0].regression


@pytest.mark.parametrize("field, value", [("vendor", "OtherCorp"), ("product", "NPU X2")])
def test_diff_refuses_reports_of_another_product(field: str, value: str) -> None:
    old, new = build_report(), build_report()
    new["manifest"][field] = value
    with pytest.raises(UserError, match="--allow-different-product"):
        diff.diff_reports(old, new, suite())
    diff.diff_reports(old, new, suite(), allow_different_product=True)
    new["manifest"][field] = f" {old['manifest'][field]}\u00a0"  # the same name, trimmed and NFKC-normalised
    diff.diff_reports(old, new, suite())


def test_diff_refuses_another_release() -> None:
    old, new = build_report(), build_report()
    new["suite"]["version"] = "9.9.9"
    with pytest.raises(UserError, match="release"):
        diff.diff_reports(old, new, suite())


def test_diff_cli_exit_code_for_another_product(env: dict[str, Any]) -> None:
    from conformance.cli.signing import main

    other = build_report()
    other["manifest"]["product"] = "Different"
    a, b = _fresh(env), _fresh(env, other)
    assert main(["diff", str(a), str(b)]) == 2
    assert main(["diff", str(a), str(b), "--allow-different-product"]) == 0


# ----------------------------------------------------------------------------- identity

def _keyring(tmp_path: Path, env: dict[str, Any], entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "keyring.yaml"
    pem = env["pub"].read_text()
    others = [keys.write_keypair(tmp_path / f"k{i}").public_path.read_text() for i in range(len(entries))]
    path.write_text(json.dumps({"keys": [{"public_key": others[i] if i else pem, **e}
                                         for i, e in enumerate(entries)]}))
    return path


@pytest.mark.parametrize("entries, needle", [
    ([{"name": "a", "vendors": ["Ray \u0410ccelerator"]}], "mixes scripts"),
    ([{"name": "a", "vendors": ["ExampleCorp"]}, {"name": "b", "vendors": ["ExampleCorp "]}], "same name"),
    ([{"name": "a", "vendors": ["ExampleCorp"]}, {"name": "b", "vendors": ["\uff25xampleCorp"]}], "same name"),
])
def test_a_keyring_with_look_alike_names_is_refused(env: dict[str, Any], tmp_path: Path,
                                                    entries: list[dict[str, Any]], needle: str) -> None:
    with pytest.raises(UserError, match=needle) as exc:
        keyring.load_keyring(_keyring(tmp_path, env, entries))
    assert "\n" not in str(exc.value)


def test_vendor_names_compare_normalised(env: dict[str, Any], tmp_path: Path) -> None:
    keys_ = keyring.load_keyring(_keyring(tmp_path, env, [{"name": "a", "vendors": ["ExampleCorp"]}]))
    assert keys_[0].may_sign_for(" ExampleCorp ") and keys_[0].may_sign_for("\uff25xampleCorp")
    assert not keys_[0].may_sign_for("Ex\u0430mpleCorp")  # a Cyrillic а is another name


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\u0085", "\u202e", "\u2066", "\u061c", "\u200b", "\x1b"])
def test_printed_strings_escape_separators_and_bidi_controls(ch: str) -> None:
    hostile = f"SHA256:abc{ch}VERIFIED: everything"
    for shown in (terminal(hostile), markdown_cell(hostile)):
        assert ch not in shown and len(shown.splitlines()) == 1
