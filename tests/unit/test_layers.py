"""The layers, held by the import graph (lazy imports included; conformance/import_graph.py).

* Areas never import each other: an area's package and its checks import the core layers
  (run, catalog, cluster, report, rdt) and their own area, nothing of another area.
* The core never imports an area: run/, catalog/, cluster/, report/ and signing/ reach the
  areas only through the registry (`conformance.areas`, which only reads the declarations).
  The CLI and the plugin are the shell above both and may import anything.
* The core in layers (CORE_LAYERS): base -> catalog -> cluster -> report -> run -> rdt -> signing
  -> the shell; an import points down. The edges that still point up are KNOWN_UPWARD, each with
  the move that removes it.

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
KNOWN_CROSSINGS: dict[tuple[str, str], str] = {
    # the workload area runs WL-002 and WL-001's broadcast rounds over the collective backend: its one
    # door (conformance/areas/workload/collective_link.py) until the collective harness moves into the
    # core as the RDT harness did (conformance/rdt/)
    ("conformance.areas.workload.collective_link", "conformance.areas.collective.config"): "collective harness not core yet",
    ("conformance.areas.workload.collective_link", "conformance.areas.collective.context"): "collective harness not core yet",
    ("conformance.areas.workload.collective_link", "conformance.areas.collective.members"): "collective harness not core yet",
}


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


# ---------------------------------------------------------------------------- the core's own order
# The core's packages, bottom to top: a package imports its own layer and the layers below, never
# one above (lazy imports count; `if TYPE_CHECKING:` hints do not). The shell (cli, plugin, the
# example, the reference plugin) sits on top and may import anything.
CORE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "errors", "imports", "measure", "import_graph", "host_memory"),   # "": conformance/__init__.py (the version)
    ("catalog",),      # the data and its loaders
    ("cluster", "leftovers"),   # live Ray clusters; what a plugin left on them
    ("report",),       # records -> outcomes -> report files
    ("run",),          # one run inside pytest (writes the report at its end)
    ("rdt",),          # the RDT harness the checks use
    ("signing",),      # statements, verify, review
    ("cli", "plugin", "example", "simulated"),
)
# Package edges that still point up, each with the move that removes it. The order is held for
# every other edge; the list only shrinks (the moves touch modules other branches edit, so they
# are done one at a time).
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("catalog", "run"): "catalog.manifest -> run.vendor_calls: bounded vendor calls move to a timing package "
                        "below cluster (with run.clock, run.waits, run.timeouts)",
    ("catalog", "signing"): "catalog.docs -> signing.trust: the docs generators (catalog.docs, doc_blocks) move to "
                            "the shell (the `docs` command's own package)",
    ("cluster", "run"): "cluster.manager -> run.{clock,waits,timeouts,vendor_calls}: the timing package; "
                        "cluster.shapes -> run.area: the Area type moves to catalog",
    ("cluster", "simulated"): "cluster.hosts.cluster -> simulated.transport (SimXfer's shared-memory segments): "
                              "the host cluster takes the reaper from its caller",
    ("report", "run"): "report.build -> run.selection (pure: to catalog); report.guidance -> "
                       "run.preflight.left_behind_lines (a renderer: to report); report.html.page -> run.area (to catalog)",
    ("report", "signing"): "report.build -> signing.releases (the data's release digests: to catalog); "
                           "report.html.dashboard -> signing.review/submission (the reviewer's page: to signing)",
    ("run", "cli"): "run.watchdog -> cli.exit_codes: the exit codes move to the base layer",
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer_of() -> dict[str, int]:
    return {pkg: i for i, layer in enumerate(CORE_LAYERS) for pkg in layer}


def upward_edges() -> dict[tuple[str, str], list[str]]:
    layer = _layer_of()
    out: dict[tuple[str, str], list[str]] = {}
    for src, dsts in GRAPH.items():
        frm = _package(src)
        for dst in dsts:
            to = _package(dst)
            if frm in layer and to in layer and layer[to] > layer[frm] and layer[frm] < len(CORE_LAYERS) - 1:
                out.setdefault((frm, to), []).append(f"{src} -> {dst}")
    return out


def test_every_core_package_has_a_layer() -> None:
    layer = _layer_of()
    packages = {_package(m) for m in GRAPH} - {"areas", "checks"}
    assert packages <= set(layer), f"core packages with no place in CORE_LAYERS: {sorted(packages - set(layer))}"


def test_the_core_imports_only_downwards() -> None:
    new = {k: v for k, v in upward_edges().items() if k not in KNOWN_UPWARD}
    assert not new, "core imports that point up (CORE_LAYERS):\n  " + "\n  ".join(e for v in new.values() for e in v)


def test_the_known_upward_edges_only_shrink() -> None:
    gone = sorted(set(KNOWN_UPWARD) - set(upward_edges()))
    assert not gone, f"no longer pointing up, drop from KNOWN_UPWARD: {gone}"
