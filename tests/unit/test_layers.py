"""The layers, held by the import graph (lazy imports included; conformance/import_graph.py).

* Areas never import each other: an area's package and its checks import the core layers
  (timing, catalog, cluster, report, run, rdt, collective) and their own area, nothing of another area.
* The core never imports an area: the base modules, timing/, catalog/, cluster/, report/, run/,
  rdt/, collective/, signing/ and the docs generators (docgen/) reach the areas only through the registry
  (`conformance.areas`, which only reads the declarations). The CLI and the plugin are the shell
  above both and may import anything.
* The registry (`conformance.areas` and each `<area>/area.py`) stands on the catalog floor: it
  imports nothing above it, so every core layer above may read it, and a floor below the catalog
  (the base, timing/) that reads it points up (upward_edges places it there).
* The core in layers (CORE_LAYERS): base -> timing -> catalog -> cluster -> report -> run
  -> rdt/collective -> signing -> the shell; an import points down, with no exception.

Edges that broke these rules when the layers were drawn are listed in KNOWN_CROSSINGS, each
with the reason it is still there: the test fails on any new crossing, and on a listed one that
is gone (so the list only shrinks). An area declared later (collective) has no entry at all.
"""
from __future__ import annotations

from conformance.areas import AREAS
from conformance.import_graph import import_graph

GRAPH = import_graph()
CORE = ("conformance.run", "conformance.catalog", "conformance.cluster", "conformance.report", "conformance.measure",
        "conformance.signing", "conformance.rdt", "conformance.collective", "conformance.timing", "conformance.sanitize",
        "conformance.identity", "conformance.exit_codes", "conformance.jsontypes", "conformance.handles", "conformance.unicode", "conformance.docgen",
        "conformance.compat")
REGISTRY = "conformance.areas"
REGISTRY_PACKAGE = "areas (the registry)"   # how upward_edges names the registry's floor

# Every edge that broke the rules when the layers were drawn has gone (the transport, performance
# and recovery areas' shared RDT harness is core now: conformance/rdt/; the collective harness the
# collective and workload areas share: conformance/collective/). A crossing added later
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
        assert deps <= {"conformance.catalog.area", f"conformance.areas.{a.name}"}, (a.name, deps)


# ---------------------------------------------------------------------------- the core's own order
# The core's packages, bottom to top: a package imports its own layer and the layers below, never
# one above (lazy imports count; `if TYPE_CHECKING:` hints do not). The shell (cli, plugin, the
# example, the reference plugin) sits on top and may import anything.
CORE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "errors", "exit_codes", "handles", "imports", "jsontypes", "measure", "import_graph", "host_memory", "sanitize",
     "identity", "unicode", "exc_text"),   # "": conformance/__init__.py (the version)
    ("timing",),       # bounds on waiting: hard timeouts, bounded waits, the scenario clock, the host's load
    ("catalog",),      # the data and its loaders; the vendor's code loaded and called under bounds
    ("cluster", "leftovers"),   # live Ray clusters; what a plugin left on them
    ("report",),       # records -> outcomes -> report files
    ("run",),          # one run inside pytest (writes the report at its end)
    ("rdt", "collective"),   # the harnesses the checks use: RDT, the collective backend
    ("signing", "compat"),   # statements, verify, review; another Ray's source against the plugin (no cluster)
    ("cli", "docgen", "plugin", "example", "simulated"),
)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer_of() -> dict[str, int]:
    return {pkg: i for i, layer in enumerate(CORE_LAYERS) for pkg in layer}


def _is_registry(module: str) -> bool:
    return module == REGISTRY or (module.startswith(REGISTRY + ".") and module.endswith(".area"))


def _place(module: str) -> tuple[str, int] | None:
    """The module's package and its layer, or None off the order (an area's code, a check).
    The registry (`conformance.areas`, each `<area>/area.py`) stands on the catalog floor: a
    lower floor that imports it points up, like any other upward import."""
    layer = _layer_of()
    if _is_registry(module):
        return REGISTRY_PACKAGE, layer["catalog"]
    package = _package(module)
    return (package, layer[package]) if package in layer else None


def upward_edges(graph: dict[str, set[str]] = GRAPH) -> dict[tuple[str, str], list[str]]:
    top = len(CORE_LAYERS) - 1
    out: dict[tuple[str, str], list[str]] = {}
    for src, dsts in graph.items():
        frm = _place(src)
        for dst in dsts:
            to = _place(dst)
            if frm is not None and to is not None and to[1] > frm[1] and frm[1] < top:
                out.setdefault((frm[0], to[0]), []).append(f"{src} -> {dst}")
    return out


def test_every_core_package_has_a_layer() -> None:
    layer = _layer_of()
    packages = {_package(m) for m in GRAPH} - {"areas", "checks"}
    assert packages <= set(layer), f"core packages with no place in CORE_LAYERS: {sorted(packages - set(layer))}"


def test_the_core_imports_only_downwards() -> None:
    up = upward_edges()
    assert not up, "core imports that point up (CORE_LAYERS):\n  " + "\n  ".join(e for v in up.values() for e in v)


# ---------------------------------------------------------------------------- the registry's floor
def test_the_registry_stands_on_the_catalog_floor() -> None:
    """The registry (`conformance.areas`, AREAS) and the areas' declarations (`<area>/area.py`)
    import only the floors up to the catalog (and each other): every core layer above may read the
    registry, and the registry reaches an area's heavy parts only by dotted reference."""
    floor = _layer_of()["catalog"]
    layer = _layer_of()
    above = sorted(f"{src} -> {dst}" for src, dsts in GRAPH.items() if _is_registry(src) for dst in dsts
                   if not _is_registry(dst) and layer.get(_package(dst), len(CORE_LAYERS)) > floor)
    assert not above, "the registry imports above the catalog floor:\n  " + "\n  ".join(above)


def test_a_lower_floor_importing_the_registry_points_up() -> None:
    """The registry is placed on the catalog floor: timing/ (below it) reading AREAS, or an area's
    declaration, is an upward edge like any other; the catalog and the floors above may read it."""
    graph = {"conformance.timing.clock": {"conformance.areas", "conformance.areas.device.area"},
             "conformance.catalog.loader": {"conformance.areas"},
             "conformance.cluster.shapes": {"conformance.areas"}}
    up = {key: sorted(edges) for key, edges in upward_edges(graph).items()}
    assert up == {("timing", REGISTRY_PACKAGE): ["conformance.timing.clock -> conformance.areas",
                                                 "conformance.timing.clock -> conformance.areas.device.area"]}
