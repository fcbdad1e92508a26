"""The Ray window is one fact in four places, and they agree.

pyproject.toml's Ray range (what pip lets a vendor keep), the two Ray versions `make test`
certifies on (constraints.txt: the project's pin, the whole suite; constraints-ray-oldest.txt:
the window's oldest, device + transport data in tests/certify/test_wheel_install.py), and the
`ray_versions` of the current release in tiers/releases.yaml (what `verify` accepts): the release
names exactly the series so tested, and the range admits exactly those.
"""
from __future__ import annotations

from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

import conformance
from conformance.catalog import releases

ROOT = Path(__file__).resolve().parents[2]


def _pin(constraints: str, name: str) -> Version:
    for line in (ROOT / constraints).read_text().splitlines():
        req, _, version = line.split("#")[0].strip().partition("==")
        if req.strip().lower() == name:
            return Version(version.strip())
    raise AssertionError(f"{constraints} pins no {name}")


def _requirements(name: str) -> list[Requirement]:
    return [r for r in map(Requirement, requires(conformance.SUITE_NAME) or []) if r.name.lower() == name]


def _series(v: Version) -> str:
    return f"{v.major}.{v.minor}"


def test_the_release_certifies_exactly_the_tested_ray_series() -> None:
    tested = sorted({_series(_pin("constraints-ray-oldest.txt", "ray")), _series(_pin("constraints.txt", "ray"))},
                    key=Version)
    assert len(tested) >= 2, "the window is proven on at least two Ray releases"
    # The release step writes the pinned series into the release it appends: what the next release names.
    assert releases.pinned_ray_series() == tested
    current = releases.load_releases().get(releases.current_version())
    if current is None:
        return   # a data edit awaiting `make release` (no release holds the data yet; .ci/run's release-check)
    assert list(current.ray_versions) == tested, (current.ray_versions, tested)


def test_the_package_admits_the_window_and_nothing_else() -> None:
    oldest, newest = _pin("constraints-ray-oldest.txt", "ray"), _pin("constraints.txt", "ray")
    reqs = _requirements("ray")
    assert reqs, "the package must name Ray"
    for req in reqs:   # the main dependency and the `jobs` extra's ray[default]
        assert not any(s.operator == "==" for s in req.specifier), f"{req}: an exact pin replaces a vendor's Ray"
        assert req.specifier.contains(oldest) and req.specifier.contains(newest), req
        below = Version(f"{oldest.major}.{oldest.minor - 1}.0")
        above = Version(f"{newest.major}.{newest.minor + 1}.0")
        assert not req.specifier.contains(below) and not req.specifier.contains(above), \
            f"{req} admits a Ray series make test does not certify"


def test_torch_is_a_range_that_holds_the_projects_pin() -> None:
    (req,) = _requirements("torch")
    assert not any(s.operator == "==" for s in req.specifier), f"{req}: an exact pin replaces a vendor's torch"
    assert req.specifier.contains(_pin("constraints.txt", "torch"))
    assert req.specifier.contains(Version("2.14.1+vendor")), "a vendor's newer torch build must be kept"
