"""The two-sided reference transport ships in the package (a vendor with only the wheel has it),
the suite's own tests use it from there, and the docs point there (issue 45)."""
from __future__ import annotations

import importlib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REF = "conformance.simulated.two_sided:TwoSidedShm"


def test_the_two_sided_reference_is_importable_from_the_package() -> None:
    module, _, name = REF.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert cls.is_one_sided() is False
    assert "two_sided" in (importlib.import_module(module).__file__ or "")
    assert not hasattr(importlib.import_module("broken_transports"), "TwoSidedShm")   # one copy only


def test_its_tests_and_docs_name_it_where_it_lives() -> None:
    rows = yaml.safe_load((ROOT / "tests" / "teeth.yaml").read_text())["runs"]
    row = next(r for r in rows if r["id"] == "good/transport-two-sided")
    assert row["set"]["transport.manager"] == REF
    assert REF in (ROOT / "tests" / "ray" / "test_transport_contract.py").read_text()
    for doc in ("transport.md", "writing-a-plugin.md"):
        text = (ROOT / "docs" / doc).read_text()
        assert "conformance.simulated.two_sided" in text or "conformance/simulated/two_sided.py" in text, doc
        assert "TwoSidedShm` in `tests/broken_plugins" not in text, doc
