"""tiers/releases.yaml: the committed entry, regeneration, and archived releases."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import conformance
import dev_release
from conformance.catalog import data, datafiles, releases
from conformance.catalog.capabilities import capabilities_path
from conformance.errors import UserError
from conformance.signing import keys
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import verify_path
from signing_support import build_report, write_report_dir

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT  # the data folders tiers/ and schemas/ are at the repository's top level


def test_committed_releases_file_lists_the_current_version() -> None:
    known = releases.load_releases(CATALOG / "tiers" / "releases.yaml")
    assert conformance.__version__ in known


def test_published_releases_are_intact_and_the_data_released_or_awaiting_the_release_step() -> None:
    """A published release's files are never lost or rewritten (always a failure). Data files that
    no release holds yet are a data edit awaiting the release step (`make release`, once per
    release, at merge): not a failure here, so a threshold edit is one edit plus `make docs`; the
    landing gate is `make release-check` in .ci/run, which refuses them with the same one line.
    The checkout's own releases file, never the development release the lane signs with
    (tests/cli/conftest.py): this is the one test that says the release step is pending."""
    shipped = dev_release.checkout_releases_file()
    assert releases.missing_files(shipped) == []
    if dev_release.unreleased():
        pytest.skip(releases.UNRELEASED_HINT)
    proc = subprocess.run([sys.executable, "-m", "conformance.catalog.releases", "--check", "--file", str(shipped)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_write_appends_a_release_and_never_rewrites_one(tmp_path: Path) -> None:
    path = tmp_path / "releases.yaml"
    path.write_text(releases.HEADER + "schema_version: 1\nreleases:\n  '0.0.1':\n"
                    + "".join(f"    {f}: {'a' * 64}\n" for f in releases.DIGEST_FIELDS)
                    + f"    schemas_sha256: {{x.schema.json: {'b' * 64}}}\n    ray_versions: ['2.59']\n")
    before = path.read_text()
    appended, version = releases.write_release(path, published="2026-02-01")
    assert appended and version == conformance.__version__
    assert path.read_text().startswith(before), "a published entry was rewritten"
    loaded = releases.load_releases(path)
    assert list(loaded) == ["0.0.1", version] and loaded["0.0.1"].checklist_sha256 == "a" * 64
    new = loaded[version]
    assert new.matches(releases.current_entry()) and new.published == "2026-02-01"
    assert list(new.ray_versions) == releases.pinned_ray_series(), "a new release has the Ray range this package admits"
    assert releases.write_release(path) == (False, version)
    assert (tmp_path / "releases" / version / "checklist.yaml").read_bytes() == data.checklist_path().read_bytes()
    # a published name asked for with other digests is refused, never overwritten
    path.write_text(path.read_text().replace(datafiles.sha256_file(data.tiers_path()), "c" * 64))
    with pytest.raises(UserError, match="never rewritten"):
        releases.write_release(path, version=conformance.__version__)


def test_next_version_names_data_revisions() -> None:
    assert releases.next_version([], "0.3.0") == "0.3.0"
    assert releases.next_version(["0.3.0"], "0.3.0") == "0.3.0+data.2"
    assert releases.next_version(["0.3.0", "0.3.0+data.2"], "0.3.0") == "0.3.0+data.3"


def test_check_mode_reports_stale_data_and_lost_release_files(tmp_path: Path) -> None:
    path = tmp_path / "releases.yaml"
    releases.write_release(path)
    assert releases.main(["--file", str(path), "--check"]) == 0
    # the current files' digests in no release: a data change without --write
    path.write_text(path.read_text().replace(datafiles.sha256_file(data.tiers_path()), "b" * 64))
    assert releases.main(["--file", str(path), "--check"]) == 1


def test_committed_releases_keep_their_files() -> None:
    """Every published release's checklist, tiers, waivers, labels, vocabulary and report schema are
    still here (current or archived) with its digests: no release was rewritten in place."""
    assert releases.missing_files(CATALOG / "tiers" / "releases.yaml") == []


def _data_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary copy of the package data (CONFORMANCE_DATA_DIR), so its files can change."""
    root = tmp_path / "data"
    shutil.copytree(CATALOG, root)
    monkeypatch.setenv("CONFORMANCE_DATA_DIR", str(root))
    return root


def test_a_report_signed_under_release_n_still_verifies_after_release_n_plus_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sign under release N, change the checklist (a new check), append N+1: the old report still
    verifies under N (its archived files), the new data is N+1, and N's entry is unchanged."""
    from signing_support import PUBLISHED

    root = _data_copy(tmp_path, monkeypatch)
    rel = root / "tiers" / "releases.yaml"
    rel.unlink()  # a releases file of this test's own, published before the test reports' runs
    shutil.rmtree(root / "tiers" / "releases", ignore_errors=True)
    appended, release_n = releases.write_release(rel, published=PUBLISHED)
    assert releases.current_version(rel) == release_n
    report = build_report()
    report["suite"]["version"] = release_n
    folder = write_report_dir(tmp_path / "old-report", report)
    pair = keys.write_keypair(tmp_path / "k")
    sign_report_dir(folder, pair.private_path)
    trusted = [key_from_file(pair.public_path)]
    v = verify_path(folder, trusted, releases_file=rel)
    assert v.ok, [line.render() for line in v.lines if not line.ok]
    entry_n = rel.read_text()

    checklist = root / "tiers" / "checklist.yaml"
    checklist.write_text(checklist.read_text() + "\n# release N+1: an edit of the checklist\n")
    assert releases.current_version(rel).endswith("+unreleased")
    # published after the run started (a run made once N+1 was out would be superseded)
    appended, release_n1 = releases.write_release(rel, published="2026-03-02")
    assert appended and release_n1 != release_n
    assert rel.read_text().startswith(entry_n), "release N was rewritten"
    assert releases.current_version(rel) == release_n1
    v = verify_path(folder, trusted, releases_file=rel)
    assert v.ok, [line.render() for line in v.lines if not line.ok]
    assert releases.missing_files(rel) == []


@pytest.mark.parametrize("text, message", [
    ("releases: {}\n", "schema_version: 1"),
    ("schema_version: 1\nreleases:\n  1.0:\n    checklist_sha256: x\n", "must be a quoted string"),
    ("schema_version: 1\nreleases:\n  '1.0': {checklist_sha256: abc}\n", "needs checklist_sha256"),
])
def test_malformed_releases_file_is_a_user_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "releases.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        releases.load_releases(path)


def test_an_archived_release_still_verifies(tmp_path: Path) -> None:
    """A report from an older release is recomputed with that release's archived files."""
    old_checklist = data.checklist_path().read_text() + "\n# the 0.0.9 copy\n"
    archive = tmp_path / "releases" / "0.0.9"
    archive.mkdir(parents=True)
    (archive / "checklist.yaml").write_text(old_checklist)
    shutil.copy(data.tiers_path(), archive / "tiers.yaml")
    shutil.copy(datafiles.schema_path("report"), archive / "report.schema.json")
    rel = tmp_path / "releases.yaml"
    rel.write_text(yaml.safe_dump({"schema_version": 1, "releases": {"0.0.9": {
        "checklist_sha256": datafiles.sha256_file(archive / "checklist.yaml"),
        "tiers_sha256": datafiles.sha256_file(archive / "tiers.yaml"),
        "report_schema_sha256": datafiles.sha256_file(archive / "report.schema.json"),
        "waivers_sha256": datafiles.sha256_file(data.waivers_path()),
        "labels_sha256": datafiles.sha256_file(datafiles.data_root() / "tiers" / "labels.yaml"),
        "vocabulary_sha256": datafiles.sha256_file(data.vocabulary_path()),
        "capabilities_sha256": datafiles.sha256_file(capabilities_path()),
        "schemas_sha256": releases.current_entry()["schemas_sha256"], "ray_versions": ["2.60"]}}}))
    report = build_report()
    report["suite"]["version"] = "0.0.9"
    report["suite"]["checklist_sha256"] = datafiles.sha256_file(archive / "checklist.yaml")
    folder = write_report_dir(tmp_path / "r", report)
    pair = keys.write_keypair(tmp_path / "k")
    sign_report_dir(folder, pair.private_path, releases_file=rel)
    v = verify_path(folder, [key_from_file(pair.public_path)], releases_file=rel)
    assert v.ok, [line.render() for line in v.lines if not line.ok]
    # without the archived checklist the tier cannot be recomputed
    (archive / "checklist.yaml").unlink()
    v = verify_path(folder, [key_from_file(pair.public_path)], releases_file=rel)
    tier = next(line for line in v.lines if line.name == "tier")
    assert not tier.ok and "lacks its checklist.yaml" in tier.detail
