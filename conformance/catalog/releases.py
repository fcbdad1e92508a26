"""Released suite versions and the digests of their data files (tiers/releases.yaml), append-only.

A release binds every file that decides a tier or a verdict: the checklist, the tier ladder,
the waivers, the label vocabulary, the capability profiles (from the release that introduced
`capabilities_sha256` on), the Unicode TR39 confusables table names are compared by
(`confusables_sha256`, conformance/unicode/confusables.tsv, from the release that introduced it on)
and every schema in schemas/ (validated by schemas/releases.schema.json),
names the Ray versions it certifies (`ray_versions`: a series such as "2.60", or an exact
version) and the date it was published. A verifier accepts a report only if its suite version
is a release listed here and the digests it claims are that release's. To recompute a tier and
judge waivers it needs the release's files themselves: the current files when their digests
match, otherwise the copies archived in tiers/releases/<version>/ when the release was written.

Append-only: a published release is never rewritten, so every report signed under it keeps
verifying. When the data files change (a checklist edit, a new area, a schema change, a merge
of several such branches), `--write` appends a NEW release: `conformance.__version__` if that is
not yet taken, else `<__version__>+data.<n>`; reports record that version (current_version()).

    python -m conformance.catalog.releases --write     # append a release if the data changed
    python -m conformance.catalog.releases --check     # exit 1 if no release has the current
                                                       # digests, or a release's files are gone

A merge conflict in tiers/releases.yaml: keep every entry already on the target branch, drop
the branch's own unpublished ones, and run `--write` again.
"""
from __future__ import annotations

import argparse
import functools
import shutil
import sys
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import yaml

import conformance
from conformance.catalog import data, datafiles, strict_input
from conformance.errors import UserError

HEADER = """\
# Released suite versions -> sha256 of every data file that decides a tier (checklist, tiers,
# waivers, labels, vocabulary, capabilities, confusables, schemas) and the Ray versions each release certifies (ray_versions: a series
# like "2.60" or an exact version). `ray-conformance verify` accepts a report only for a version
# listed here, with exactly these digests. Validated by schemas/releases.schema.json.
# Append-only: never edit an entry. A release is appended by the release step, `make release`
# (python -m conformance.catalog.releases --write), not by `make docs`; it archives its files too.
"""
DIGEST_FIELDS = ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256", "labels_sha256",
                 "vocabulary_sha256")
# Digests a release binds from the release that introduced them on; an older entry lacks them (and
# verify says it judged that part with its own copy). tiers/capabilities.yaml decides the capability
# profiles a report claims.
# conformance/unicode/confusables.tsv (the TR39 table names are compared by: which vendor names a
# keyring, sign and verify refuse as look-alikes) is release data too.
OPTIONAL_DIGEST_FIELDS = ("capabilities_sha256", "confusables_sha256")
# The report's `suite` block records these; each must equal the release's.
REPORT_DIGEST_FIELDS = ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256")
_ARCHIVE_NAMES = {"checklist_sha256": "checklist.yaml", "tiers_sha256": "tiers.yaml",
                  "report_schema_sha256": "report.schema.json", "waivers_sha256": "waivers.yaml",
                  "labels_sha256": "labels.yaml", "vocabulary_sha256": "vocabulary.yaml",
                  "capabilities_sha256": "capabilities.yaml", "confusables_sha256": "confusables.tsv"}
# Schemas verify reads from the release besides the report schema (the embedded manifest is
# validated against the release's manifest schema); archived as tiers/releases/<version>/<name>.
VERIFIED_SCHEMAS = ("manifest.schema.json",)
# Names of the data files in the statement's configuration (ResourceDescriptors).
DESCRIPTOR_NAMES = {"checklist_sha256": "tiers/checklist.yaml", "tiers_sha256": "tiers/tiers.yaml",
                    "waivers_sha256": "tiers/waivers.yaml", "labels_sha256": "tiers/labels.yaml",
                    "vocabulary_sha256": "tiers/vocabulary.yaml", "capabilities_sha256": "tiers/capabilities.yaml"}


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
    published: str | None = None  # YYYY-MM-DD; no run of this release can have started before it
    capabilities_sha256: str | None = None  # None: a release written before profiles were release data
    # months a certificate made with this release holds after its run finished (None: the file's
    # `certificates.valid_months`; signing/validity.py)
    valid_months: int | None = None
    confusables_sha256: str | None = None  # None: a release written before the TR39 table was release data

    def published_date(self) -> date | None:
        return date.fromisoformat(self.published) if self.published else None

    def matches(self, entry: dict[str, object]) -> bool:
        """True when `entry` (current_entry() shape) has exactly this release's digests."""
        return all(entry.get(f) == getattr(self, f) for f in (*DIGEST_FIELDS, *OPTIONAL_DIGEST_FIELDS)) \
            and entry.get("schemas_sha256") == dict(self.schemas_sha256)

    def digest(self, field: str) -> str:
        return str(getattr(self, field))

    def descriptors(self) -> dict[str, str]:
        """{ResourceDescriptor name: sha256} for every data file of the release."""
        out = {DESCRIPTOR_NAMES[f]: self.digest(f) for f in DESCRIPTOR_NAMES if getattr(self, f) is not None}
        out.update({f"schemas/{name}": sha for name, sha in self.schemas_sha256})
        return out

    def schema_digest(self, name: str) -> str | None:
        return dict(self.schemas_sha256).get(name)

    def certifies_ray(self, version: object) -> bool:
        """True when `version` (e.g. '2.60.0') is in `ray_versions` (a series or an exact version).

        Only a release version N.N.N can be (verify names anything else as such first)."""
        if not isinstance(version, str):
            return False
        parts = version.split(".")
        return any(parts[: len(w.split("."))] == w.split(".") for w in self.ray_versions)


def default_path() -> Path:
    return datafiles.data_root() / "tiers" / "releases.yaml"


def _current_paths() -> dict[str, Path]:
    return {"checklist_sha256": data.checklist_path(), "tiers_sha256": data.tiers_path(),
            "report_schema_sha256": datafiles.schema_path("report"), "waivers_sha256": data.waivers_path(),
            "labels_sha256": datafiles.data_root() / "tiers" / "labels.yaml",
            "vocabulary_sha256": data.vocabulary_path(),
            "capabilities_sha256": _capabilities_path(),
            "confusables_sha256": _confusables_path()}


def _capabilities_path() -> Path:
    from conformance.catalog.capabilities import capabilities_path

    return capabilities_path()


def _confusables_path() -> Path:
    from conformance.unicode.confusables import table_path

    return table_path()


def _schema_files() -> list[Path]:
    return sorted((datafiles.data_root() / "schemas").glob("*.schema.json"))


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
    entry: dict[str, object] = {field: datafiles.sha256_file(path) for field, path in _current_paths().items()}
    entry["schemas_sha256"] = {p.name: datafiles.sha256_file(p) for p in _schema_files()}
    return entry


# sha256 of a releases file's bytes -> its releases: verify asks for them several times a report
# and review once per submission; the same bytes are parsed and validated once per process.
_LOADED: dict[str, dict[str, Release]] = {}


def load_releases(path: Path | None = None) -> dict[str, Release]:
    """The releases a releases file lists (a one-line UserError naming the field when it is not one)."""
    path = Path(path or default_path())
    if not path.exists() and not path.is_symlink():
        raise UserError(f"releases: file not found: {path}")
    raw = strict_input.read_regular(path, "releases")
    digest = datafiles.sha256_bytes(raw)
    if digest not in _LOADED:
        _LOADED[digest] = _parse_releases(raw, path)
    return dict(_LOADED[digest])


def _parse_releases(raw: bytes, path: Path) -> dict[str, Release]:
    doc = strict_input.parse(raw, str(path), fmt="json" if path.suffix == ".json" else "yaml", what="releases")
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or not isinstance(doc.get("releases"), dict):
        raise UserError(f"releases: {path}: expected schema_version: 1 and a 'releases' mapping")
    for version, entry in doc["releases"].items():
        if not isinstance(version, str):
            raise UserError(f"releases: {path}: version {version!r} must be a quoted string")
        if not isinstance(entry, dict) or any(not isinstance(entry.get(f), str) or len(entry[f]) != 64
                                              for f in DIGEST_FIELDS):
            raise UserError(f"releases: {path}: {version}: needs {', '.join(DIGEST_FIELDS)} (sha256 hex)")
    datafiles.validate(doc, "releases", what=f"releases: {path}")
    return {version: Release(version=version, **{f: entry[f] for f in DIGEST_FIELDS},
                             **{f: entry[f] for f in OPTIONAL_DIGEST_FIELDS if f in entry},
                             schemas_sha256=tuple(sorted(entry["schemas_sha256"].items())),
                             ray_versions=tuple(entry["ray_versions"]), published=entry.get("published"),
                             valid_months=entry.get("valid_months"))
            for version, entry in doc["releases"].items()}


def load_certificates(path: Path | None = None) -> dict[str, Any] | None:
    """The releases file's `certificates` block (how long a certificate holds: the SIG's policy,
    not a release entry), schema-validated with the file; None when the file sets none."""
    path = Path(path or default_path())
    load_releases(path)  # validates the whole file, the block included
    doc = datafiles.read_yaml_or_json(path, what="releases")
    block = doc.get("certificates")
    return dict(block) if isinstance(block, dict) else None


def _certificates_yaml(block: dict[str, Any] | None) -> str:
    """The `certificates` block as the top of a new releases file writes it ('' for none)."""
    if not block:
        return ""
    return yaml.safe_dump({"certificates": block}, sort_keys=False, default_flow_style=False)


# The one line a data edit that no release holds yet gets (the release test's skip, `--check`'s error).
UNRELEASED_HINT = ("no release has the current data files' digests (a data edit awaiting the release step): "
                   "run `make release` (python -m conformance.catalog.releases --write) before landing")


def current_version(path: Path | None = None) -> str:
    """The release a run of this installation belongs to: the latest one whose digests are the
    current files' (`<__version__>+unreleased` when none is: run `--write`; verify refuses it)."""
    path = Path(path or default_path())
    entry = current_entry()
    try:
        known = load_releases(path) if path.exists() else {}
    except UserError:
        known = {}
    matching = [v for v, r in known.items() if r.matches(entry)]
    return matching[-1] if matching else f"{conformance.__version__}+unreleased"


def next_version(taken: Sequence[str], base: str | None = None) -> str:
    """`base` (conformance.__version__) if free, else `<base>+data.<n>` with the first free n >= 2."""
    base = base or conformance.__version__
    if base not in taken:
        return base
    n = 2
    while f"{base}+data.{n}" in taken:
        n += 1
    return f"{base}+data.{n}"


def _archive(path: Path, release: Release) -> list[Path]:
    """Copy each current data file whose digest is `release`'s into its archive folder, once
    (a file unchanged since an earlier release is not copied again).

    Done when a release is written (and for older releases still matching), so the files exist
    after the current ones change."""
    written = []
    wanted = [(archived_path(path, release.version, f), current, getattr(release, f), _ARCHIVE_NAMES[f])
              for f, current in _current_paths().items()]
    wanted += [(_archive_dir(path, release.version) / name, datafiles.data_root() / "schemas" / name,
                release.schema_digest(name), name) for name in VERIFIED_SCHEMAS]
    for target, current, digest, name in wanted:
        if digest is None or target.exists() or not current.is_file() or datafiles.sha256_file(current) != digest \
                or any(datafiles.sha256_file(p) == digest for p in _archived_named(path, name)):
            continue  # not this release's file, or already archived (by this or another release)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(current, target)
        written.append(target)
    return written


def _entry_yaml(version: str, entry: dict[str, object]) -> str:
    keys = (*DIGEST_FIELDS, *OPTIONAL_DIGEST_FIELDS, "schemas_sha256", "ray_versions", "valid_months", "published")
    body = yaml.safe_dump({version: {k: entry[k] for k in keys if k in entry}}, sort_keys=False,
                          default_flow_style=False)
    return "".join(f"  {line}\n" for line in body.splitlines())


def write_release(path: Path | None = None, *, version: str | None = None,
                  published: str | None = None) -> tuple[bool, str]:
    """Append a release for the current data files and Ray window unless one already has them.

    Never touches an existing entry: the file's bytes up to the new entry stay as they were.
    Returns (appended, version). `version`: the name to use (default next_version());
    `published`: its date (default today, UTC). Archives the release's files beside the file.
    """
    path = Path(path or default_path())
    known = load_releases(path) if path.exists() else {}
    entry = current_entry()
    for release in known.values():
        _archive(path, release)  # an older release whose files are still current: keep a copy
    window = pinned_ray_series()
    matching = [v for v, r in known.items() if r.matches(entry) and list(r.ray_versions) == window]
    if matching:
        return False, matching[-1]
    version = version or next_version(list(known))
    if version in known:
        raise UserError(f"releases: {path}: release {version} is published with other digests; "
                        f"a published release is never rewritten (choose a new version)")
    entry["ray_versions"] = window  # the Ray range this package admits: a new window is a new release
    # the file's certificate policy (a new file: the installed releases file's) sets the release's period
    certificates = load_certificates(path) if path.exists() else _installed_certificates(path)
    if certificates:
        entry["valid_months"] = certificates["valid_months"]
    entry["published"] = published or datetime.now(timezone.utc).date().isoformat()
    text = path.read_text() if path.exists() else \
        HEADER + "schema_version: 1\n" + _certificates_yaml(certificates) + "releases:\n"
    if not text.endswith("\n"):
        text += "\n"
    new_text = text + _entry_yaml(version, entry)
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_text(new_text)
    new = load_releases(tmp)[version]  # the appended file must still be a valid releases file
    tmp.replace(path)
    _archive(path, new)
    return True, version


def _installed_certificates(path: Path) -> dict[str, Any] | None:
    """The installed releases file's certificate policy, for a new releases file elsewhere."""
    installed = default_path()
    if Path(path).resolve() == installed.resolve() or not installed.is_file():
        return None
    try:
        return load_certificates(installed)
    except UserError:
        return None


def missing_files(path: Path | None = None) -> list[str]:
    """'<version>: <file>' for every release file this checkout can no longer produce (neither
    current nor archived with the release's digest): a release rewritten in place, or lost."""
    path = Path(path or default_path())
    out = []
    for release in load_releases(path).values():
        for field in _ARCHIVE_NAMES:
            if getattr(release, field) is not None and release_file(release, field, path) is None:
                out.append(f"{release.version}: {_ARCHIVE_NAMES[field]}")
        for name in VERIFIED_SCHEMAS:
            if release.schema_digest(name) is not None and release_schema_file(release, name, path) is None:
                out.append(f"{release.version}: {name}")
    return out


def _archive_dir(releases_file: Path, version: str) -> Path:
    return Path(releases_file).parent / "releases" / version


def archived_path(releases_file: Path, version: str, field: str) -> Path:
    return _archive_dir(releases_file, version) / _ARCHIVE_NAMES[field]


def _archived_named(releases_file: Path, name: str) -> list[Path]:
    """Every archived copy of the file called `name`, any release (releases share unchanged files)."""
    root = Path(releases_file).parent / "releases"
    return sorted(root.glob(f"*/{name}")) if root.is_dir() else []


def _archived_copies(releases_file: Path, field: str) -> list[Path]:
    return _archived_named(releases_file, _ARCHIVE_NAMES[field])


def _file_with_digest(want: str | None, candidates: Sequence[Path]) -> Path | None:
    if want is None:
        return None
    for candidate in candidates:
        if candidate.is_file() and datafiles.sha256_file(candidate) == want:
            return candidate
    return None


def release_file(release: Release, field: str, releases_file: Path) -> Path | None:
    """The file whose sha256 equals the release's digest for `field`: the current copy, else the
    release's archived copy, else another release's archived copy with the same digest (None also
    when the release does not bind `field`: an optional digest it predates)."""
    own = archived_path(releases_file, release.version, field)
    return _file_with_digest(getattr(release, field),
                             (_current_paths()[field], own, *_archived_copies(releases_file, field)))


def release_schema_file(release: Release, name: str, releases_file: Path) -> Path | None:
    """schemas/<name> with the release's digest: current, archived with the release, or archived
    with another release (tiers/releases/*/<name>)."""
    return _file_with_digest(release.schema_digest(name),
                             (datafiles.data_root() / "schemas" / name, _archive_dir(releases_file, release.version) / name,
                              *_archived_named(releases_file, name)))


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
    parser = argparse.ArgumentParser(prog="python -m conformance.catalog.releases",
                                     description="Show, append or check the release of the current data files.")
    parser.add_argument("--file", type=Path, default=None, help="releases file (default: tiers/releases.yaml)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true",
                      help="append a release for the current data files (never rewrites one)")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 if no release has the current digests or a release's files are gone")
    args = parser.parse_args(argv)
    path = Path(args.file or default_path())
    try:
        if args.write:
            appended, version = write_release(path)
            print(f"{'appended' if appended else 'unchanged'}: release {version} in {path}")
            return 0
        entry = current_entry()
        if args.check:
            known = load_releases(path)
            if not any(r.matches(entry) for r in known.values()):
                print(f"releases: {path}: {UNRELEASED_HINT}", file=sys.stderr)
                return 1
            lost = missing_files(path)
            if lost:
                print(f"releases: the files of published releases are gone or were rewritten: {', '.join(lost)} "
                      f"(restore them in tiers/releases/<version>/; never edit a published release)",
                      file=sys.stderr)
                return 1
            print(f"releases: {current_version(path)} is current")
            return 0
        sys.stdout.write(yaml.safe_dump({current_version(path): entry}, sort_keys=True))
        return 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
