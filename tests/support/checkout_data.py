"""Whether the tests run this checkout's code and data (no tests here).

The installed package finds its data as the data packages `conformance.catalog.tiers` and
`.schemas`, which an editable install maps to the checkout it was installed from. A clone or a
worktree run with another checkout's virtual environment (PYTHONPATH=<clone>) imports its own code
but reads that other checkout's tiers/ and schemas/: after a data edit every test then judges the
old data, green or red for reasons the edit does not explain. tests/conftest.py says so in one
line at the session's start and end, naming the first file that differs (docs/architecture.md,
"Recipes"); it does not stop the session (a branch behind main's data, on main's environment, may
still want its tests run).
"""
from __future__ import annotations

from pathlib import Path

DATA_FOLDERS = ("tiers", "schemas")


def data_mismatch(checkout: Path, packaged: Path) -> str | None:
    """The first data file (`tiers/x.yaml`) whose bytes differ between the checkout's folders and the
    ones the package reads (`packaged`: the folder holding them), or None when they agree."""
    for sub in DATA_FOLDERS:
        mine, read = checkout / sub, packaged / sub
        if mine.resolve() == read.resolve():
            continue
        names = sorted({p.name for folder in (mine, read) if folder.is_dir() for p in folder.iterdir() if p.is_file()})
        for name in names:
            a, b = mine / name, read / name
            if not (a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()):
                return f"{sub}/{name}"
    return None


def checkout_problem(checkout: Path) -> str | None:
    """One line when the tests of `checkout` would run another checkout's code or data; None when not."""
    import conformance
    from conformance.catalog import datafiles

    code = Path(conformance.__file__).resolve().parent.parent
    if code != checkout.resolve():
        return (f"the tests of {checkout} import conformance from {code}: put this checkout first "
                f"(PYTHONPATH={checkout}) or run `make install` here")
    packaged = datafiles.packaged_data_root()
    differs = data_mismatch(checkout, packaged)
    if differs:
        return (f"the tests of {checkout} read the suite data from {packaged}, whose {differs} is not this "
                f"checkout's: run `make install` here (the package maps its data to the checkout it was "
                f"installed from; docs/architecture.md, Recipes)")
    return None
