"""The checklist the committed example report (reports/example/) was made under.

The example is made again after each release (`make example` follows `make release`). Between a
data edit (a param, a check) and that release the working checklist is ahead of the example's, so
a test that judges the example's own records judges them under the release the example names
(`suite.version`), as `verify` does: a threshold edit leaves such a test green (docs/architecture.md,
"Change a threshold"), while a rule of the code that refuses the example still fails it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from conformance.catalog.data import Checklist

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json"


@lru_cache(maxsize=1)
def example_checklist() -> Checklist:
    """The checklist of the release reports/example/report.json names (its `suite.version`)."""
    from conformance.catalog.releases import default_path, load_release_data, load_releases

    version = json.loads(EXAMPLE.read_text())["suite"]["version"]
    path = default_path()
    return load_release_data(load_releases(path)[version], path)[0]
