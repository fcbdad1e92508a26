"""No import cycle among the suite's own modules (lazy, function-level imports included; and none
with the `if TYPE_CHECKING:` hints counted too), and every module imports on its own. The run's
state module stays a leaf: session, fixtures and the areas all import it, it imports none of them."""
from __future__ import annotations

import importlib

import pytest

from conformance.import_graph import cycles, import_graph, module_names

GRAPH = import_graph()
# Importing these runs something by design (a CLI, the injection every Ray worker preloads).
RUNS_ON_IMPORT = {"conformance.cluster.hosts.__main__", "conformance.cluster.inject_autoinstall", "conformance.cluster.inject_pth_hook"}


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_no_type_only_import_closes_a_cycle() -> None:
    """With the `if TYPE_CHECKING:` imports counted, still no cycle: a hint that points back up names
    a small Protocol of the lower module (catalog.clusters.ShapedCheck, catalog.soak.SoakedChecklist,
    run.state.StashedRun) or a type moved down (signing.review_row.Row)."""
    assert cycles(import_graph(type_checking=True)) == []


def test_session_and_fixtures_do_not_import_each_other() -> None:
    assert "conformance.run.session" not in GRAPH["conformance.run.fixtures"]
    assert "conformance.run.fixtures" not in GRAPH["conformance.run.session"]


def test_run_state_imports_nothing_of_the_suite() -> None:
    assert GRAPH["conformance.run.state"] == set()


def test_the_graph_sees_lazy_imports_and_type_checking_ones_only_when_asked() -> None:
    import ast

    from conformance.import_graph import _imports
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import conformance.b\n"
                     "def f():\n    from conformance import c\n    from . import d\n")
    mods = {"conformance.b", "conformance.c", "conformance.d"}
    assert _imports(tree, "conformance.a", False, mods) == {"typing", "conformance.c", "conformance.d"}
    assert _imports(tree, "conformance.a", False, mods, type_checking=True) == \
        {"typing", "conformance.b", "conformance.c", "conformance.d"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(set(module_names()) - RUNS_ON_IMPORT))
def test_every_module_imports(name: str) -> None:
    importlib.import_module(name)
