"""The release's own files verify and review judge a report with: its label vocabulary, its
capability profiles and its waivers, each read from the file with the release's digest (never
the installed one when the release binds it)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from conformance.catalog import capabilities, data, releases
from conformance.signing import trust


@dataclass(frozen=True)
class ReleaseInputs:
    """The release's own files verify judges facts and capabilities with (never the installed
    ones when the release binds them). None: not available (a FAIL line says why)."""

    domain_keys: frozenset[str] | None = None
    profiles: list[dict[str, Any]] | None = None
    profiles_note: str = ""
    # The release predates binding tiers/capabilities.yaml: the verifier's copy may hold profiles
    # that did not exist then, so only the profiles the report claims are judged with it.
    claimed_only: bool = False

    def profiles_for(self, report: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The profiles a report's capabilities are recomputed with: the release's, or (for a
        release that predates binding them) this verifier's copy narrowed to the ones it claims.
        `report` is JSON: the claimed capabilities are read as signed (a release before profiles
        let any value through; verify's capabilities line judges it)."""
        if self.profiles is None or not self.claimed_only:
            return self.profiles
        claimed = report.get("capabilities")
        if not isinstance(claimed, list):
            return self.profiles
        names = {c.get("name") for c in claimed if isinstance(c, Mapping)}
        return [p for p in self.profiles if p.get("name") in names]


def release_inputs(release: releases.Release | None, releases_file: Path) -> tuple[ReleaseInputs, list[str]]:
    """The release's label vocabulary (domain keys) and capability profiles, each read from the
    file with the release's digest, and the release files this verifier lacks. Verify and review
    both recompute with these, so they never judge one report with two vocabularies."""
    if release is None:
        return ReleaseInputs(), []
    problems, note = [], ""
    labels = releases.release_file(release, "labels_sha256", releases_file)
    if labels is None:
        problems.append("tiers/labels.yaml")
    profiles: list[dict[str, Any]] | None = None
    if release.capabilities_sha256 is None:
        profiles = capabilities.load_profiles()
        note = (f" (release {release.version} predates binding tiers/capabilities.yaml: the profiles it claims are "
                "judged with this verifier's copy)")
    else:
        found = releases.release_file(release, "capabilities_sha256", releases_file)
        if found is None:
            problems.append("tiers/capabilities.yaml")
        else:
            profiles = _profiles_at(str(found), found.stat().st_mtime_ns, found.stat().st_size)
    return (ReleaseInputs(trust.domain_keys_of(labels) if labels else None, profiles, note,
                          claimed_only=release.capabilities_sha256 is None), problems)


@functools.lru_cache(maxsize=8)
def _profiles_at(path: str, mtime_ns: int, size: int) -> list[dict[str, Any]]:
    """A release's profiles file, parsed and validated once per file version."""
    return capabilities.load_profiles(Path(path))


def release_waivers(release: releases.Release | None, releases_file: Path,
                    override: Path | None) -> tuple[list[data.Waiver] | None, str]:
    """The release's waivers (None with the reason when they cannot be had)."""
    if override is not None:
        return data.load_waivers(Path(override))[0], ""
    if release is None:
        return None, "unknown release"
    path = releases.release_file(release, "waivers_sha256", releases_file)
    if path is None:
        return None, (f"this verifier lacks release {release.version}'s waivers.yaml "
                      f"(put it in {releases.archived_path(releases_file, release.version, 'waivers_sha256').parent})")
    return data.load_waivers(path)[0], ""
