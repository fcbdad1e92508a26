"""The build mapping that ships the suite's data inside the package.

The one copy of the checklist, tier ladder, waivers, labels, releases and schemas lives in the
repository's top-level `tiers/` and `schemas/` (the design card's layout, where reviewers read
and diff them). Code finds them with importlib.resources as the data packages
`conformance.catalog.tiers` and `conformance.catalog.schemas`; this mapping makes the wheel carry
them there and makes an editable install resolve the same names to the same folders, so no second
copy is kept by hand. Everything else about the build is declared in pyproject.toml.
"""
from setuptools import find_namespace_packages, setup

DATA_PACKAGES = {"conformance.catalog.tiers": "tiers", "conformance.catalog.schemas": "schemas"}

setup(packages=find_namespace_packages(include=["conformance*"], exclude=["*.__pycache__"]) + list(DATA_PACKAGES), package_dir=DATA_PACKAGES)
