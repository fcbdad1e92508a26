"""The layers, held by the import graph (lazy imports included; conformance/import_graph.py).

* Areas never import each other: an area's package and its checks import the core layers
  (run, catalog, cluster, report, rdt) and their own area, nothing of another area.
* The core never imports an area: run/, catalog/, cluster/, report/ and signing/ reach the
  areas only through the registry (`conformance.areas`, which only reads the declarations).
  The CLI and the plugin are the shell above both and may import anything.

Edges that broke these rules when the layers were drawn are listed in KNOWN_CROSSINGS, each
with the reason it is still there: the test fails on any new crossing, and on a listed one that
is gone (so the list only shrinks). An area declared later (collective) has no entry at all.
"""
from __future__ import annotations

from conformance.areas import AREAS
from conformance.import_graph import import_graph

GRAPH = import_graph()
CORE = ("conformance.run", "conformance.catalog", "conformance.cluster", "conformance.report", "conformance.measure",
        "conformance.signing", "conformance.rdt")
REGISTRY = "conformance.areas"

# Every edge that broke the rules when the layers were drawn has gone (the transport, performance
# and recovery areas' shared RDT harness is core now: conformance/rdt/). A crossing added later
# fails the first test; if one must stay for a while, list it here with its reason.
KNOWN_CROSSINGS: dict[tuple[str, str], str] = {}


def _area_of(module: str) -> str | None:
    for prefix in ("conformance.areas.", "conformance.checks."):
        if module.startswith(prefix):
            name = module[len(prefix):].split(".")[0]
            return name if any(a.name == name for a in AREAS) else None
    return None


def _is_core(module: str) -> bool:
    return any(module == c or module.startswith(c + ".") for c in CORE)


def crossings() -> set[tuple[str, str]]:
    out = set()
    for src, dsts in GRAPH.items():
        for dst in dsts:
            to = _area_of(dst)
            if to is None:
                continue
            frm = _area_of(src)
            if (frm is not None and frm != to) or (frm is None and _is_core(src)):
                out.add((src, dst))
    return out


def test_areas_do_not_import_each_other_and_core_does_not_import_areas() -> None:
    new = sorted(crossings() - set(KNOWN_CROSSINGS))
    assert not new, "layer crossings (an area importing another, or core importing an area):\n  " + \
        "\n  ".join(f"{a} -> {b}" for a, b in new)


def test_the_known_crossings_only_shrink() -> None:
    gone = sorted(set(KNOWN_CROSSINGS) - crossings())
    assert not gone, "no longer crossing, drop from KNOWN_CROSSINGS:\n  " + "\n  ".join(f"{a} -> {b}" for a, b in gone)


def test_core_reaches_the_areas_only_through_the_registry() -> None:
    """The registry imports the declarations only (area.py modules), not the areas' code."""
    assert {d for d in GRAPH[REGISTRY] if d.startswith("conformance.areas.")} <= \
        {f"conformance.areas.{a.name}.area" for a in AREAS} | {f"conformance.areas.{a.name}" for a in AREAS}


def test_an_area_declaration_imports_nothing_heavy() -> None:
    for a in AREAS:
        deps = GRAPH[f"conformance.areas.{a.name}.area"]
        assert deps <= {"conformance.run.area", f"conformance.areas.{a.name}"}, (a.name, deps)
