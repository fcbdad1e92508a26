"""tiers/releases.yaml: the committed entry, regeneration, and archived releases."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


from signing_support import build_report, write_report_dir  # noqa: E402

import conformance  # noqa: E402
from conformance.catalog import data  # noqa: E402
from conformance.errors import UserError  # noqa: E402
from conformance.signing import attestation as att  # noqa: E402
from conformance.signing import keys, releases  # noqa: E402
from conformance.signing.keyring import key_from_file  # noqa: E402
from conformance.signing.verify import verify_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT  # the data folders tiers/ and schemas/ are at the repository's top level


def test_committed_releases_file_lists_the_current_version() -> None:
    known = releases.load_releases(CATALOG / "tiers" / "releases.yaml")
    assert conformance.__version__ in known


def test_committed_entry_matches_the_data_files() -> None:
    """Fails when checklist/tiers/schema changed without `python -m conformance.signing.releases --write`."""
    proc = subprocess.run([sys.executable, "-m", "conformance.signing.releases", "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_update_entry_writes_current_digests_and_keeps_other_releases(tmp_path: Path) -> None:
    path = tmp_path / "releases.yaml"
    path.write_text("schema_version: 1\nreleases:\n  '0.0.1':\n"
                    + "".join(f"    {f}: {'a' * 64}\n" for f in releases.DIGEST_FIELDS)
                    + f"    schemas_sha256: {{x.schema.json: {'b' * 64}}}\n    ray_versions: ['2.59']\n")
    changed, entry = releases.update_entry(path, "0.2.0")
    assert changed and entry == {**releases.current_entry(), "ray_versions": releases.pinned_ray_series()}
    assert entry["checklist_sha256"] == data.sha256_file(data.checklist_path())
    assert entry["waivers_sha256"] == data.sha256_file(data.waivers_path())
    assert set(entry["schemas_sha256"]) >= {"report.schema.json", "checklist.schema.json", "releases.schema.json"}
    assert releases.update_entry(path, "0.2.0") == (False, entry)
    loaded = releases.load_releases(path)
    assert sorted(loaded) == ["0.0.1", "0.2.0"] and loaded["0.0.1"].checklist_sha256 == "a" * 64
    assert path.read_text().startswith("# Released suite versions")


def test_check_mode_reports_a_stale_entry(tmp_path: Path) -> None:
    path = tmp_path / "releases.yaml"
    releases.update_entry(path)
    assert releases.main(["--file", str(path), "--check"]) == 0
    path.write_text(path.read_text().replace(data.sha256_file(data.tiers_path()), "b" * 64))
    assert releases.main(["--file", str(path), "--check"]) == 1


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
    shutil.copy(data.schema_path("report"), archive / "report.schema.json")
    rel = tmp_path / "releases.yaml"
    rel.write_text(yaml.safe_dump({"schema_version": 1, "releases": {"0.0.9": {
        "checklist_sha256": data.sha256_file(archive / "checklist.yaml"),
        "tiers_sha256": data.sha256_file(archive / "tiers.yaml"),
        "report_schema_sha256": data.sha256_file(archive / "report.schema.json"),
        "waivers_sha256": data.sha256_file(data.waivers_path()),
        "labels_sha256": data.sha256_file(data.data_root() / "tiers" / "labels.yaml"),
        "vocabulary_sha256": data.sha256_file(data.vocabulary_path()),
        "schemas_sha256": releases.current_entry()["schemas_sha256"], "ray_versions": ["2.60"]}}}))
    report = build_report()
    report["suite"]["version"] = "0.0.9"
    report["suite"]["checklist_sha256"] = data.sha256_file(archive / "checklist.yaml")
    folder = write_report_dir(tmp_path / "r", report)
    pair = keys.write_keypair(tmp_path / "k")
    att.sign_report_dir(folder, pair.private_path)
    v = verify_path(folder, [key_from_file(pair.public_path)], releases_file=rel)
    assert v.ok, [line.render() for line in v.lines if not line.ok]
    # without the archived checklist the tier cannot be recomputed
    (archive / "checklist.yaml").unlink()
    v = verify_path(folder, [key_from_file(pair.public_path)], releases_file=rel)
    tier = next(line for line in v.lines if line.name == "tier")
    assert not tier.ok and "lacks its checklist.yaml" in tier.detail
