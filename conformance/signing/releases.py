"""Released suite versions and the digests of their data files (tiers/releases.yaml).

A release binds every file that decides a tier: the checklist, the tier ladder, the waivers,
the label vocabulary and every schema in schemas/ (validated by schemas/releases.schema.json),
and names the Ray versions it certifies (`ray_versions`: a series such as "2.60", or an exact
version). A verifier accepts a report only if its suite version is a release listed here and
the digests it claims are that release's. To recompute a tier and judge waivers it needs the
release's files themselves: the current files when their digests match, otherwise archived
copies in tiers/releases/<version>/ (checklist.yaml, tiers.yaml, waivers.yaml, labels.yaml,
report.schema.json).

Regenerate the current version's entry (conformance.__version__) after editing any of them
(`make docs` does):

    python -m conformance.signing.releases --write     # update tiers/releases.yaml
    python -m conformance.signing.releases --check     # exit 1 if the entry is missing or stale

Before bumping the version, copy the data files of the outgoing release into
tiers/releases/<old-version>/ so reports made with it stay verifiable. `ray_versions` of an
existing entry is kept on --write; a new entry gets the Ray series this package's Ray range admits.
"""
from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml

import conformance
from conformance.catalog import data
from conformance.errors import UserError

HEADER = """\
# Released suite versions -> sha256 of every data file that decides a tier (checklist, tiers,
# waivers, labels, vocabulary, schemas) and the Ray versions each release certifies (ray_versions: a series
# like "2.60" or an exact version). `ray-conformance verify` accepts a report only for a version
# listed here, with exactly these digests. Validated by schemas/releases.schema.json.
# Regenerate the current version's entry: `python -m conformance.signing.releases --write`.
# Archived files of older releases live in tiers/releases/<version>/ (see docs/signing.md).
"""
DIGEST_FIELDS = ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256", "labels_sha256",
                 "vocabulary_sha256")
# The report's `suite` block records these; each must equal the release's.
REPORT_DIGEST_FIELDS = ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256")
_ARCHIVE_NAMES = {"checklist_sha256": "checklist.yaml", "tiers_sha256": "tiers.yaml",
                  "report_schema_sha256": "report.schema.json", "waivers_sha256": "waivers.yaml",
                  "labels_sha256": "labels.yaml", "vocabulary_sha256": "vocabulary.yaml"}
# Names of the data files in the statement's configuration (ResourceDescriptors).
DESCRIPTOR_NAMES = {"checklist_sha256": "tiers/checklist.yaml", "tiers_sha256": "tiers/tiers.yaml",
                    "waivers_sha256": "tiers/waivers.yaml", "labels_sha256": "tiers/labels.yaml",
                    "vocabulary_sha256": "tiers/vocabulary.yaml"}


@dataclass(frozen=True)
class Release:
    version: str
    checklist_sha256: str
    tiers_sha256: str
    report_schema_sha256: str
    waivers_sha256: str
    labels_sha256: str
    vocabulary_sha256: str
    schemas_sha256: tuple[tuple[str, str], ...]
    ray_versions: tuple[str, ...]

    def digest(self, field: str) -> str:
        return str(getattr(self, field))

    def descriptors(self) -> dict[str, str]:
        """{ResourceDescriptor name: sha256} for every data file of the release."""
        out = {DESCRIPTOR_NAMES[f]: self.digest(f) for f in DESCRIPTOR_NAMES}
        out.update({f"schemas/{name}": sha for name, sha in self.schemas_sha256})
        return out

    def certifies_ray(self, version: object) -> bool:
        """True when `version` (e.g. '2.60.0') is in `ray_versions` (a series or an exact version)."""
        if not isinstance(version, str):
            return False
        parts = version.split("+")[0].split(".")
        return any(parts[: len(w.split("."))] == w.split(".") for w in self.ray_versions)


def default_path() -> Path:
    return data.data_root() / "tiers" / "releases.yaml"


def _current_paths() -> dict[str, Path]:
    return {"checklist_sha256": data.checklist_path(), "tiers_sha256": data.tiers_path(),
            "report_schema_sha256": data.schema_path("report"), "waivers_sha256": data.waivers_path(),
            "labels_sha256": data.data_root() / "tiers" / "labels.yaml",
            "vocabulary_sha256": data.vocabulary_path()}


def _schema_files() -> list[Path]:
    return sorted((data.data_root() / "schemas").glob("*.schema.json"))


def pinned_ray_series() -> list[str]:
    """The Ray series this package's Ray range admits (`ray>=2.59,<2.61` -> ['2.59', '2.60']), the
    default window of a new release: the range is the window `make test` certifies."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.version import Version

    try:
        reqs = [Requirement(r) for r in requires(conformance.SUITE_NAME) or []]
    except PackageNotFoundError:
        reqs = []
    for req in reqs:
        if req.name.lower() != "ray" or req.marker is not None:
            continue
        floors = [Version(s.version) for s in req.specifier if s.operator in (">=", "==")]
        ceilings = [Version(s.version) for s in req.specifier if s.operator in ("<", "==")]
        if floors and ceilings:
            low, high = max(floors), min(ceilings)
            series = [f"{low.major}.{minor}" for minor in range(low.minor, high.minor + 1)
                      if req.specifier.contains(f"{low.major}.{minor}.0")]
            if low.major == high.major and series:
                return series
    raise UserError("releases: cannot tell which Ray versions this release certifies; "
                    "set ray_versions in tiers/releases.yaml")


def current_entry() -> dict[str, object]:
    """Digests of the data files in this installation (the current release's entry, less ray_versions)."""
    entry: dict[str, object] = {field: data.sha256_file(path) for field, path in _current_paths().items()}
    entry["schemas_sha256"] = {p.name: data.sha256_file(p) for p in _schema_files()}
    return entry


def load_releases(path: Path | None = None) -> dict[str, Release]:
    path = Path(path or default_path())
    doc = data.read_yaml_or_json(path, what="releases")
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or not isinstance(doc.get("releases"), dict):
        raise UserError(f"releases: {path}: expected schema_version: 1 and a 'releases' mapping")
    for version, entry in doc["releases"].items():
        if not isinstance(version, str):
            raise UserError(f"releases: {path}: version {version!r} must be a quoted string")
        if not isinstance(entry, dict) or any(not isinstance(entry.get(f), str) or len(entry[f]) != 64
                                              for f in DIGEST_FIELDS):
            raise UserError(f"releases: {path}: {version}: needs {', '.join(DIGEST_FIELDS)} (sha256 hex)")
    data.validate(doc, "releases", what=f"releases: {path}")
    return {version: Release(version, *(entry[f] for f in DIGEST_FIELDS),
                             tuple(sorted(entry["schemas_sha256"].items())), tuple(entry["ray_versions"]))
            for version, entry in doc["releases"].items()}


def _entry_of(release: Release) -> dict[str, object]:
    return {**{f: release.digest(f) for f in DIGEST_FIELDS}, "schemas_sha256": dict(release.schemas_sha256),
            "ray_versions": list(release.ray_versions)}


def render(releases: dict[str, dict[str, object]]) -> str:
    keys = (*DIGEST_FIELDS, "schemas_sha256", "ray_versions")
    ordered = {v: {f: releases[v][f] for f in keys} for v in sorted(releases)}
    body = yaml.safe_dump({"schema_version": 1, "releases": ordered}, sort_keys=False, default_flow_style=False)
    return HEADER + body


def update_entry(path: Path | None = None, version: str | None = None) -> tuple[bool, dict[str, object]]:
    """Write the current files' digests as `version`'s entry (default: conformance.__version__).

    Other versions' entries are kept, and so is this version's `ray_versions`. Returns (changed, entry).
    """
    path = Path(path or default_path())
    version = version or conformance.__version__
    existing: dict[str, dict[str, object]] = {}
    if path.exists():
        try:
            existing = {v: _entry_of(r) for v, r in load_releases(path).items()}
        except UserError:
            if version not in _raw_versions(path):
                raise
            existing = {}  # an entry of the old format: rewritten below
    entry = current_entry()
    entry["ray_versions"] = (existing.get(version) or {}).get("ray_versions") or _raw_ray_versions(path, version) \
        or pinned_ray_series()
    changed = existing.get(version) != entry
    if changed:
        existing[version] = entry
        path.write_text(render(existing))
    return changed, entry


def _raw_versions(path: Path) -> dict[str, object]:
    doc = data.read_yaml_or_json(path, what="releases")
    return doc.get("releases") or {} if isinstance(doc, dict) else {}


def _raw_ray_versions(path: Path, version: str) -> list[str] | None:
    if not path.exists():
        return None
    entry = _raw_versions(path).get(version)
    value = entry.get("ray_versions") if isinstance(entry, dict) else None
    return list(value) if isinstance(value, list) else None


def archived_path(releases_file: Path, version: str, field: str) -> Path:
    return Path(releases_file).parent / "releases" / version / _ARCHIVE_NAMES[field]


def release_file(release: Release, field: str, releases_file: Path) -> Path | None:
    """The file whose sha256 equals the release's digest for `field`: current copy, else archived."""
    want = release.digest(field)
    for candidate in (_current_paths()[field], archived_path(releases_file, release.version, field)):
        if candidate.is_file() and data.sha256_file(candidate) == want:
            return candidate
    return None


def load_release_data(release: Release, releases_file: Path) -> tuple[data.Checklist, data.Ladder]:
    """The release's checklist and tier ladder, read from files with the release's exact digests."""
    paths = {f: release_file(release, f, releases_file) for f in ("checklist_sha256", "tiers_sha256")}
    missing = [_ARCHIVE_NAMES[f] for f, p in paths.items() if p is None]
    if missing:
        raise UserError(f"release {release.version}: this verifier lacks its {' and '.join(missing)} "
                        f"(put them in {archived_path(releases_file, release.version, 'tiers_sha256').parent})")
    return _load_release_files(str(paths["checklist_sha256"]), release.checklist_sha256,
                               str(paths["tiers_sha256"]), release.tiers_sha256)


@functools.lru_cache(maxsize=16)
def _load_release_files(checklist: str, checklist_sha256: str, tiers: str,
                        tiers_sha256: str) -> tuple[data.Checklist, data.Ladder]:
    """Parsed once per (file, digest): the digests were just checked, so the cache is content-addressed."""
    loaded = data.load_checklist(Path(checklist))
    ladder = data.load_ladder(Path(tiers), checklist=loaded)
    if (loaded.sha256, ladder.sha256) != (checklist_sha256, tiers_sha256):  # changed while being read
        _load_release_files.cache_clear()
        raise UserError(f"release data changed while being read: {checklist}, {tiers}")
    return loaded, ladder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.signing.releases",
                                     description="Show, write or check the current release's digests.")
    parser.add_argument("--file", type=Path, default=None, help="releases file (default: tiers/releases.yaml)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="update the current version's entry")
    mode.add_argument("--check", action="store_true", help="exit 1 if the entry is missing or stale")
    args = parser.parse_args(argv)
    version = conformance.__version__
    try:
        if args.write:
            changed, entry = update_entry(args.file, version)
            print(f"{'updated' if changed else 'unchanged'}: {version} in {args.file or default_path()}")
            return 0
        entry = current_entry()
        if args.check:
            known = load_releases(args.file).get(version)
            if known is None or any(known.digest(f) != entry[f] for f in DIGEST_FIELDS) \
                    or dict(known.schemas_sha256) != entry["schemas_sha256"]:
                print(f"releases: the entry for {version} is {'missing' if known is None else 'stale'}; "
                      f"run: python -m conformance.signing.releases --write", file=sys.stderr)
                return 1
            print(f"releases: {version} is current")
            return 0
        sys.stdout.write(yaml.safe_dump({version: entry}, sort_keys=True))
        return 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
