"""Names compared and printed the way people read them (conformance/identity.py,
conformance/sanitize.py, the TR39 table in conformance/unicode/).

By class, not by example: every invisible character class (default-ignorable code points,
variation selectors, blanks and fillers, spaces other than U+0020, unassigned and private-use
code points) is escaped when printed, refused in a declared name and ignored by the look-alike
comparison; confusables of other scripts compare equal to the Latin name they imitate."""
from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest

from conformance import identity
from conformance.report.html.model import clean_tree
from conformance.sanitize import BLANK, DEFAULT_IGNORABLE, invisible, markdown_cell, terminal
from conformance.unicode import confusables

REAL = "ExampleCorp"
# One of each class (the five first), each inserted into the real name.
INVISIBLE = {
    "combining grapheme joiner": "\u034f", "braille blank": "\u2800", "variation selector 16": "\ufe0f",
    "khmer inherent vowel": "\u17b5", "variation selector 17": "\U000e0100", "hangul filler": "\u3164",
    "halfwidth hangul filler": "\uffa0", "hangul choseong filler": "\u115f", "mongolian fvs": "\u180b",
    "tag latin a": "\U000e0041", "zero width space": "\u200b", "word joiner": "\u2060", "soft hyphen": "\u00ad",
    "no-break space": "\u00a0", "em space": "\u2003", "ideographic space": "\u3000", "null notehead": "\U0001d159",
    "unassigned": "\u0378", "private use": "\ue000", "musical format": "\U0001d173", "shorthand format": "\U0001bca0",
}


@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_every_invisible_class_is_escaped_refused_and_ignored(name: str) -> None:
    ch = INVISIBLE[name]
    spoof = f"Example{ch}Corp" if ch not in "\u00a0\u2003\u3000" else f"{REAL}{ch}"
    assert invisible(ch)
    for shown in (terminal(spoof), markdown_cell(spoof), clean_tree(spoof)):
        assert ch not in shown and f"{ord(ch):x}" in shown.lower(), shown
    assert identity.name_problems(spoof, "manifest.vendor"), spoof
    # a blank draws an empty cell: it reads as a space, like the spaces do
    assert identity.looks_alike(spoof, "Example Corp" if ord(ch) in BLANK else REAL)
    assert not identity.same(spoof, REAL) or ch in "\u00a0\u2003\u3000"  # NFKC turns those into a space


def test_plain_names_print_unchanged() -> None:
    for text in ("ExampleCorp", "NPU X1 (rev. 2)", "Ünïcödé GmbH", "富士通", "ソニー NPU", "Ascend 昇腾 910B", "✓ ok"):
        assert terminal(text) == text and not identity.name_problems(text, "x")


def test_default_ignorable_table_has_the_categories_unicode_gives_it() -> None:
    """The property's members are format characters, marks, fillers or unassigned (UCD 14.0.0)."""
    for lo, hi in DEFAULT_IGNORABLE:
        for cp in range(lo, hi + 1):
            assert unicodedata.category(chr(cp)) in {"Cf", "Mn", "Lo", "Cn"}, hex(cp)
    # every format character outside the Prepended_Concatenation_Mark class is printed escaped
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) in ("Cf", "Zs", "Co") and cp != 0x20:
            assert invisible(chr(cp)), hex(cp)


@pytest.mark.parametrize("spoof", [
    "\u0415\u0445\u0430mpleCorp",    # Cyrillic Е х а: a whole-word mix
    "\u0395xampleCorp",              # Greek Epsilon
    "Examp1eCorp", "ExampIeCorp",    # digit one, capital I for l
    "ExarnpleCorp",                  # rn for m
    "EXAMPLECORP", "examplecorp",    # case
    "\uff25xampleCorp",              # full-width (NFKC)
    " ExampleCorp  ",                # spacing
])
def test_confusable_spellings_look_alike(spoof: str) -> None:
    assert identity.looks_alike(spoof, REAL)


def test_whole_script_confusables_look_alike_without_mixing_scripts() -> None:
    cyrillic = "\u0412\u0410\u0421"  # ВАС: all Cyrillic, one script, reads "BAC"
    assert not identity.mixed_script(cyrillic) and identity.looks_alike(cyrillic, "BAC")


@pytest.mark.parametrize("a, b", [("ExampleCorp", "ExampleCo"), ("SimAcc", "SimAcc2"), ("NPU X1", "NPU X2"),
                                  ("Acme", "Acne"), ("富士通", "ソニー")])
def test_different_names_do_not_look_alike(a: str, b: str) -> None:
    assert not identity.looks_alike(a, b)


def test_words_mixing_latin_with_look_alike_scripts_are_named() -> None:
    assert identity.mixed_script_words("NPU \u0425 1") == []              # a Cyrillic word alone
    assert identity.mixed_script_words("Ex\u0430mple NPU")[0][1] == ["CYRILLIC", "LATIN"]
    assert identity.mixed_script_words("Ascend昇腾 910B") == []           # Latin with Han is allowed (TR39)
    assert identity.mixed_script_words("\u03a9-Accel 2") == []           # a Greek word beside a Latin one
    assert identity.mixed_script_words("\u00b5NPU")[0][0] == "\u03bcNPU"  # micro sign: NFKC's Greek mu in a Latin word
    problems = identity.report_name_problems({"manifest": {"vendor": "Ex\u0430mple", "product": "X1\u2800"}})
    assert len(problems) == 2 and "manifest.vendor" in problems[0] and "U+2800 BRAILLE PATTERN BLANK" in problems[1]


# ---------------------------------------------------------------------------- the shipped table

def test_the_shipped_table_is_the_whole_of_its_named_source() -> None:
    """Every entry of confusables.txt 14.0.0 (6,311), the Soft_Dotted letters of its PropList.txt."""
    text = confusables.table_text()
    header = confusables.header_fields(text)
    assert header["Version"] == unicodedata.unidata_version == "14.0.0"   # the normaliser's Unicode version
    assert len(header["Source-SHA256"]) == 64 and header["Source"].endswith("/14.0.0/confusables.txt")
    assert len(header["Soft-Dotted-Source-SHA256"]) == 64 and header["Soft-Dotted-Source"].endswith("/PropList.txt")
    table = confusables.prototypes()
    assert len(table) == 6311
    assert table["\u0430"] == "a" and table["1"] == "l" and table["m"] == "rn" and table["\u017f"] == "f"
    assert {"i", "j", "\u0456", "\u0458", "\u1ecb"} <= confusables.soft_dotted() and "\u0131" not in confusables.soft_dotted()


def test_the_shipped_table_is_what_the_generator_makes_of_its_rows() -> None:
    """Regenerating from the table's own rows (as UCD lines) and its Soft_Dotted list gives the same
    rows: the file is the generator's output, not a hand edit."""
    text = confusables.table_text()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    source = "# Version: 14.0.0\n" + "".join(f"{src} ;\t{proto} ;\tMA\n" for src, proto in
                                           (row.split("\t") for row in rows))
    proplist = "".join(f"{cp} ; Soft_Dotted\n" for cp in confusables.header_fields(text)["Soft_Dotted"].split())
    out = confusables.generate(source, proplist)
    assert [line for line in out.splitlines() if not line.startswith("#")] == rows
    assert confusables.header_fields(out)["Soft_Dotted"] == confusables.header_fields(text)["Soft_Dotted"]


def test_the_generator_keeps_every_entry_and_the_soft_dotted_ranges() -> None:
    source = ("\ufeff# confusables.txt\n# Version: 14.0.0\n#\n"
              "0430 ;\t0061 ;\tMA\t# ( а → a ) CYRILLIC SMALL LETTER A → LATIN SMALL LETTER A\t#\n\n"
              "FF41 ;\t0061 ;\tMA\t# ( ａ → a ) FULLWIDTH\n"
              "017F ;\t0066 ;\tMA\t# ( ſ → f ) LATIN SMALL LETTER LONG S\n")
    proplist = "0069..006A    ; Soft_Dotted # L&   [2] LATIN SMALL LETTER I..J\n012F ; Other_Math # no\n"
    out = confusables.generate(source, proplist)
    rows = [line for line in out.splitlines() if not line.startswith("#")]
    assert rows == ["0430\t0061", "FF41\t0061", "017F\t0066"]
    assert "# Version: 14.0.0" in out and "# Source-SHA256: " in out and "# Soft_Dotted: 0069 006A\n" in out


@pytest.mark.parametrize("spoof, real", [
    ("\u017foo", "foo"),                    # LATIN SMALL LETTER LONG S for f (TR39 maps it to f, NFKC to s)
    ("Sof\u0074 \u017fab", "Soft fab"),
    ("Si\u0307mAcc", "SimAcc"),              # i + COMBINING DOT ABOVE prints as i
    ("Si\u0323\u0307mAcc", "Si\u0323mAcc"),  # a mark below between them changes nothing
    ("S\u0456\u0307mAcc", "SimAcc"),        # Cyrillic і, soft-dotted too
    ("Si\u0358mAcc", "SimAcc"),              # DOT ABOVE RIGHT: its prototype is U+0307
    ("\u0130ntel", "intel"),                # capital I with dot above, case folded
    ("Exa\u0301mple", "Ex\u00e1mple"),       # combining sequence and precomposed letter (NFD)
])
def test_look_alikes_through_compatibility_letters_and_combining_marks(spoof: str, real: str) -> None:
    assert identity.looks_alike(spoof, real)


@pytest.mark.parametrize("a, b", [("i\u0301", "i"), ("i\u0307\u0307", "i"), ("a\u0307", "a"), ("\u0131", "i\u0301")])
def test_a_dot_that_shows_is_not_dropped(a: str, b: str) -> None:
    """A dot above an accent, a second dot, or a dot on a letter that has none all show."""
    assert not identity.looks_alike(a, b)


def test_the_release_records_the_tables_digest(tmp_path: Path) -> None:
    """The table decides which names a keyring, sign and verify refuse: a release binds its sha256
    (confusables_sha256) and archives it like its other files."""
    import hashlib

    from conformance.catalog import releases

    digest = hashlib.sha256(confusables.table_path().read_bytes()).hexdigest()
    assert releases.current_entry()["confusables_sha256"] == digest
    path = tmp_path / "releases.yaml"
    releases.write_release(path, version="9.9.9", published="2026-12-05")
    release = releases.load_releases(path)["9.9.9"]
    assert release.confusables_sha256 == digest and release.matches(releases.current_entry())
    assert releases.release_file(release, "confusables_sha256", path) is not None
