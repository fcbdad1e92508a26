"""Issue 30, attack class 1: completeness that rests on fields the vendor writes. Each attack is a
report a key holder makes with the public CLI's files, JSON edits and re-signing; verify refuses
every one with a line naming what it recomputed. No Ray.

The classes closed: the run's arguments (one definition: conformance/run/certification.py), the
checks folder and rootdir (the recorded token, the node ids), a partial run stitched into a whole
one and companion files of another run (junit.xml and report.md judged against report.json), a
window that cannot hold the checks' durations, and a release superseded before the run started.
"""
from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.run.certification import SUITE_CHECKS, arg_problems, classify_option
from conformance.signing import keys
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import Verification, verify_path
from signing_support import CERTIFICATION_ARGS, build_report, retier, write_companions, write_releases, write_report_dir


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("completeness")
    pair = keys.write_keypair(d / "k")
    write_releases(d / "releases.yaml")
    return {"dir": d, "key": pair.private_path, "pub": pair.public_path, "releases": d / "releases.yaml"}


def _verify(world: dict[str, Path], folder: Path, releases_file: Path | None = None,
            now: datetime | None = None) -> Verification:
    return verify_path(folder, [key_from_file(world["pub"])], releases_file=releases_file or world["releases"],
                       now=now)


def _failed(v: Verification) -> dict[str, str]:
    return {line.name: line.detail for line in v.lines if not line.ok}


def _signed(world: dict[str, Path], folder: Path, report: dict[str, Any]) -> Path:
    write_report_dir(folder, report)
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    return folder


def test_the_honest_report_verifies(world: dict[str, Path], tmp_path: Path) -> None:
    v = _verify(world, _signed(world, tmp_path / "r", build_report()))
    assert v.ok, _failed(v)


# ------------------------------------------------------------------------------ the arguments
def _with_args(args: list[str]) -> dict[str, Any]:
    report = build_report()
    report["selection"]["args"] = args
    return report


NARROWED = {
    "the suite's own check selection": [*CERTIFICATION_ARGS, "--conformance-select=DP-001"],
    "an option the suite does not declare": [*CERTIFICATION_ARGS, "--conformance-only=device"],
    "a plugin loaded": [*CERTIFICATION_ARGS, "-p", "vendor_rewrites_outcomes"],
    "a builtin blocked": [*CERTIFICATION_ARGS, "-p", "no:skipping"],
    "the suite's plugin blocked": [*CERTIFICATION_ARGS, "-p", "no:ray_conformance"],
    "-k": [*CERTIFICATION_ARGS, "-k", "device"],
    "-x": [*CERTIFICATION_ARGS, "-x"],
    "an ini file": [a if a != "/dev/null" else "pytest.ini" for a in CERTIFICATION_ARGS],
    "no ini isolation": [a for a in CERTIFICATION_ARGS if a not in ("-c", "/dev/null")],
    "another checks folder": [*CERTIFICATION_ARGS[:-1], "/home/vendor/mine/checks"],
    "a folder named like the suite's": [*CERTIFICATION_ARGS[:-1], "mine/checks"],
    "another rootdir": [a if not a.startswith("--rootdir=") else "--rootdir=/tmp/elsewhere" for a in CERTIFICATION_ARGS],
    "a second folder": [*CERTIFICATION_ARGS, "$SUITE/checks/device"],
    "a node id": [*CERTIFICATION_ARGS[:-1], "$SUITE/checks/device/test_device_contract.py::test_x"],
    "no folder": CERTIFICATION_ARGS[:-1],
}


@pytest.mark.parametrize("case", sorted(NARROWED))
def test_arguments_outside_the_definition_are_not_a_certification_run(world: dict[str, Path], tmp_path: Path,
                                                                     case: str) -> None:
    v = _verify(world, _signed(world, tmp_path / "r", _with_args(NARROWED[case])), now=None)
    failed = _failed(v)
    assert "selection" in failed and "not a certification run" in failed["selection"], (case, failed)


def test_the_definition_is_judged_as_of_the_reports_release() -> None:
    """Reports of releases up to 2026-12-02 recorded the checks folder as a path (`checks` outside
    the home folder); later ones record the token, and a bare `checks` is another folder."""
    legacy = [a.replace(SUITE_CHECKS, "conformance/checks") for a in CERTIFICATION_ARGS]
    assert arg_problems(legacy, legacy=True) == []
    assert arg_problems(legacy, legacy=False)
    assert arg_problems(CERTIFICATION_ARGS, legacy=False) == []
    assert arg_problems([*CERTIFICATION_ARGS, "-p", "no:randomly"]) == []   # blocking a foreign plugin


def test_every_option_the_suite_declares_is_classified() -> None:
    """A new --conformance-* option is part of the definition or narrows the run: never allowed
    by a prefix nobody decided on."""
    from conformance import plugin

    class Group:
        names: list[str] = []

        def addoption(self, *names: str, **_: Any) -> None:
            self.names += [n for n in names if n.startswith("--")]

    class Parser:
        def getgroup(self, *_: Any, **__: Any) -> Group:
            return Group()

    plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    assert Group.names and {n: classify_option(n) for n in Group.names if classify_option(n) == "unknown"} == {}
    assert classify_option("--conformance-select") == "narrows"


# ------------------------------------------------------------------------------ folder and node ids
@pytest.mark.parametrize("node", ["../checks/device/test_device_contract.py::test_methods",
                                  "/abs/checks/device/test_x.py::test_a", "mine.py::test_a",
                                  "device/test_x.py::helper_not_a_test"])
def test_node_ids_of_another_folder_or_rootdir_are_refused(world: dict[str, Path], tmp_path: Path,
                                                           node: str) -> None:
    report = build_report()
    report["checks"][0]["tests"] = [node]
    failed = _failed(_verify(world, _signed(world, tmp_path / "r", report)))
    assert "node ids of the suite's checks folder" in failed.get("selection", ""), failed


def test_one_test_counted_for_two_checks_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    report = build_report()
    report["checks"][1]["tests"] = list(report["checks"][0]["tests"])
    failed = _failed(_verify(world, _signed(world, tmp_path / "r", report)))
    assert "counted for more than one check" in failed.get("selection", ""), failed


# ------------------------------------------------------------------------------ stitched runs, companions
def _partial() -> dict[str, Any]:
    """What a run of a third of the checks wrote (honestly partial)."""
    report = build_report()
    for c in report["checks"][30:]:
        c.update(outcome="skip", tests=[], reason="not selected", duration_s=0.0)
    report["partial"] = True
    report["selection"]["not_run"] = [c["id"] for c in report["checks"][30:]]
    return retier(report)


def test_a_partial_run_stitched_into_a_whole_one_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    """Outcomes filled in and the selection cleaned in report.json; the run's junit.xml kept."""
    folder = write_report_dir(tmp_path / "r", _partial())
    whole = build_report()
    (folder / "report.json").write_text(json.dumps(whole, indent=2))
    (tmp_path / "whole").mkdir()
    write_companions(tmp_path / "whole", whole)                   # report.md rewritten too
    (folder / "report.md").write_bytes((tmp_path / "whole" / "report.md").read_bytes())
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    failed = _failed(_verify(world, folder))
    assert set(failed) == {"companions"}, failed
    assert "junit.xml" in failed["companions"] and "not report.json's tests" in failed["companions"]


@pytest.mark.parametrize("companion", ["junit.xml", "report.md"])
def test_a_companion_file_of_another_run_is_refused(world: dict[str, Path], tmp_path: Path, companion: str) -> None:
    other = build_report({"DP-003": "fail"})
    write_report_dir(tmp_path / "other", other)
    folder = write_report_dir(tmp_path / "r", build_report())
    (folder / companion).write_bytes((tmp_path / "other" / companion).read_bytes())
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    failed = _failed(_verify(world, folder))
    assert set(failed) == {"companions"} and companion in failed["companions"], failed
    assert "DP-003" in failed["companions"] or "tier" in failed["companions"], failed


def test_report_md_of_the_verifiers_own_release_must_be_its_rendering(world: dict[str, Path], tmp_path: Path) -> None:
    """Issue 43 (provenance): every statement kept, a line added by hand: for a report of the
    verifier's own release the run's rendering is the only report.md there is."""
    folder = write_report_dir(tmp_path / "r", build_report())
    text = (folder / "report.md").read_text()
    (folder / "report.md").write_text(text + "\nReviewed and approved by the SIG.\n")
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    failed = _failed(_verify(world, folder))
    assert set(failed) == {"companions"} and "this verifier's rendering" in failed["companions"], failed


@pytest.mark.parametrize("nodeid", ["vendor/device/test_x.py::test_dp_001", "device/vendor/test_x.py::test_dp_001"])
def test_tests_of_a_vendor_folder_nested_in_or_around_an_areas_are_refused(
        world: dict[str, Path], tmp_path: Path, nodeid: str) -> None:
    report = build_report()
    report["checks"][0]["tests"] = [nodeid]
    failed = _failed(_verify(world, _signed(world, tmp_path / "r", report)))
    assert "not node ids of the suite's checks folder" in failed.get("selection", ""), failed


def test_junit_xml_with_a_doctype_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    folder = write_report_dir(tmp_path / "r", build_report())
    text = (folder / "junit.xml").read_text()
    (folder / "junit.xml").write_text(text.replace("<testsuites>", '<!DOCTYPE x [<!ENTITY a "b">]>\n<testsuites>', 1))
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    assert "DOCTYPE" in _failed(_verify(world, folder)).get("companions", "")


# ------------------------------------------------------------------------------ the window
def test_a_window_too_short_for_the_checks_durations_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    report = build_report()
    for c in report["checks"]:
        c["duration_s"] = 60.0          # 91 checks of a minute each in an hour's window
    failed = _failed(_verify(world, _signed(world, tmp_path / "r", report)))
    assert "more than the run's window" in failed.get("time", ""), failed


def test_a_run_clock_past_the_window_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    report = build_report()
    report["duration_s"] = 3700.0       # started 11:00, finished 12:00
    failed = _failed(_verify(world, _signed(world, tmp_path / "r", report)))
    assert set(failed) == {"time"} and "does not fit" in failed["time"], failed


# ------------------------------------------------------------------------------ superseded releases
def _two_releases(world: dict[str, Path], path: Path, later_published: str) -> Path:
    """The test release, then a later one (another name, same digests) published on a given day."""
    doc = yaml.safe_load(world["releases"].read_text())
    (version, entry), = doc["releases"].items()
    doc["releases"] = {"0.0.1-old": entry, version: {**copy.deepcopy(entry), "published": later_published}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_run_claiming_a_release_superseded_before_it_started_is_refused(world: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    rel = _two_releases(world, tmp_path / "releases.yaml", later_published="2026-02-01")
    report = build_report()
    report["suite"]["version"] = "0.0.1-old"                 # started 2026-03-01, after the newer one
    folder = write_report_dir(tmp_path / "r", report)
    sign_report_dir(folder, world["key"], releases_file=rel)
    failed = _failed(_verify(world, folder, releases_file=rel))
    newer = list(yaml.safe_load(rel.read_text())["releases"])[1]
    assert set(failed) == {"superseded"} and newer in failed["superseded"] and "2026-02-01" in failed["superseded"]


def test_a_release_published_the_day_the_run_started_does_not_supersede_it(world: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    rel = _two_releases(world, tmp_path / "releases.yaml", later_published="2026-03-01")
    report = build_report()
    report["suite"]["version"] = "0.0.1-old"
    folder = write_report_dir(tmp_path / "r", report)
    sign_report_dir(folder, world["key"], releases_file=rel)
    # the verifier's clock inside the SIG's window after the newer release (signing/release_window.py:
    # 14 days' grace); past it the report is refused on that clock whatever it records
    v = _verify(world, folder, releases_file=rel, now=datetime(2026, 3, 10, tzinfo=timezone.utc))
    assert v.ok, _failed(v)


def test_junit_xml_in_another_encoding_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    folder = write_report_dir(tmp_path / "r", build_report())
    text = (folder / "junit.xml").read_text().replace("encoding='utf-8'", "encoding='utf-16'", 1)
    (folder / "junit.xml").write_bytes(text.encode("utf-16"))
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    assert "not UTF-8" in _failed(_verify(world, folder)).get("companions", "")
