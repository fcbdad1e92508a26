"""The typed manifest (conformance/catalog/manifest_view.py) and schemas/manifest.schema.json cannot
drift: each view class's fields are exactly the properties the schema declares for that object, each
typed as the schema types it (a field the schema does not require is `| None`, unless the view fills
it: with the schema's `default`, which the view must apply as stated, or with what manifest_view.FILLED
says the code applies); and every manifest the project ships reads into the view without a value lost."""
from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.catalog import datafiles
from conformance.catalog import manifest_view as mv
from conformance.catalog.manifest import builtin_manifests, load_manifest
from schema_view_support import annotation_types, same_types, schema_node, schema_types

SCHEMA = json.loads(datafiles.schema_path("manifest").read_text())
MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"

# view class -> where the schema declares the object it types
OBJECTS: dict[type, tuple[str, ...]] = {
    mv.ManifestView: (),
    mv.Plugin: ("plugin",),
    mv.Accelerator: ("accelerator",),
    mv.Expected: ("accelerator", "expected"),
    mv.Hosts: ("accelerator", "hosts"),
    mv.Quantities: ("accelerator", "quantities"),
    mv.Transport: ("transport",),
    mv.TransportExpected: ("transport", "expected"),
    mv.Collective: ("collective",),
    mv.Topology: ("topology",),
    mv.TopologyExpected: ("topology", "expected"),
    mv.Link: ("topology", "expected", "links", "[]"),
    mv.Cluster: ("cluster",),
    mv.FaultDriver: ("cluster", "fault_driver"),
}
MINIMAL = {"schema_version": 1, "vendor": "V", "product": "P",
           "accelerator": {"manager": "pkg.mod:Manager", "resource_name": "ACC",
                           "expected": {"devices_per_node": 1, "accelerator_type": "T"}},
           "transport": {"name": "T"}, "collective": {"backend": "B"}}


def _filled(path: tuple[str, ...]) -> bool:
    return path in mv.FILLED


def test_every_view_class_is_held_to_the_schema() -> None:
    classes = {c for c in vars(mv).values() if isinstance(c, type) and dataclasses.is_dataclass(c)
               and c.__module__ == mv.__name__}
    assert classes == set(OBJECTS), "a view class the test does not hold to the schema (add it to OBJECTS)"


@pytest.mark.parametrize("cls", list(OBJECTS), ids=lambda c: c.__name__)
def test_view_fields_are_the_schemas_properties_with_its_types(cls: type) -> None:
    path = OBJECTS[cls]
    node = schema_node(SCHEMA, path)
    declared, required = node["properties"], set(node.get("required", []))
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    assert names == set(declared), f"{cls.__name__}: fields {sorted(names)}, the schema declares {sorted(declared)}"
    for name in names:
        prop = declared[name]
        optional = name not in required and "default" not in prop and not _filled((*path, name))
        want = schema_types(SCHEMA, prop) | ({"null"} if optional else set())
        got = annotation_types(hints[name])
        assert same_types(want, got), f"{cls.__name__}.{name}: typed {got}, the schema says {want}"


def _items_hint(hint: Any) -> Any:
    """X of `tuple[X, ...]` (or of `tuple[X, ...] | None`), else None."""
    for arg in (hint, *typing.get_args(hint)):
        if typing.get_origin(arg) is tuple:
            return typing.get_args(arg)[0]
    return None


@pytest.mark.parametrize("cls", list(OBJECTS), ids=lambda c: c.__name__)
def test_array_fields_hold_the_schemas_item_type(cls: type) -> None:
    declared = schema_node(SCHEMA, OBJECTS[cls])["properties"]
    for name, hint in typing.get_type_hints(cls).items():
        items, node = _items_hint(hint), declared[name]
        while items is not None and "items" in node:      # arrays of arrays (topology's device_domains) too
            node = node["items"]
            assert same_types(schema_types(SCHEMA, node), annotation_types(items)), f"{cls.__name__}.{name}[]"
            items = _items_hint(items)


def test_filled_paths_are_properties_the_schema_leaves_without_a_default() -> None:
    for path in mv.FILLED:
        *parent, name = path
        prop = schema_node(SCHEMA, tuple(parent))["properties"][name]
        assert "default" not in prop and name not in schema_node(SCHEMA, tuple(parent)).get("required", []), path


def _json(value: Any) -> Any:
    """The view's value as the JSON it was read from (None fields dropped)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name)) for f in dataclasses.fields(value)
                if getattr(value, f.name) is not None}
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


def _at(view: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        view = None if view is None else getattr(view, step)
    return view


def test_an_absent_property_reads_as_the_schemas_default_or_what_filled_says() -> None:
    view = mv.ManifestView.from_json(MINIMAL)
    checked = 0
    for path in OBJECTS.values():
        if "[]" in path or _at(view, path) is None:
            continue
        for name, prop in schema_node(SCHEMA, path)["properties"].items():
            if "default" in prop:
                assert _json(getattr(_at(view, path), name)) == prop["default"], (*path, name)
                checked += 1
            elif _filled((*path, name)):    # an object filled is there (its own fields are checked above)
                value = getattr(_at(view, path), name)
                assert dataclasses.is_dataclass(value) or _json(value) == mv.FILLED[(*path, name)], (*path, name)
                checked += 1
    # the 12 defaults: plugin.python_path, quantities x2, transport.devices, collective x5, cluster x3
    assert checked == 12 + len(mv.FILLED)
    assert mv.DEFAULT_QUANTITIES == {k: schema_node(SCHEMA, ("accelerator", "quantities"))["properties"][k]["default"]
                                     for k in ("valid", "invalid")}
    assert mv.CLUSTER_DEFAULTS == {k: schema_node(SCHEMA, ("cluster",))["properties"][k]["default"]
                                   for k in mv.CLUSTER_DEFAULTS}
    assert mv.COLLECTIVE_DEFAULTS == {k: p["default"] for k, p in schema_node(SCHEMA, ("collective",))["properties"].items()
                                      if "default" in p}


def test_the_collective_defaults_are_the_schemas_and_every_op_it_allows() -> None:
    """collective/config.py's ALL_OPS and DEFAULT_DTYPES (which the judges apply to a report's
    embedded manifest) are the schema's defaults; an absent `ops` claims every op the schema allows."""
    from conformance.collective import config

    props = schema_node(SCHEMA, ("collective",))["properties"]
    assert list(config.ALL_OPS) == props["ops"]["default"] == props["ops"]["items"]["enum"]
    assert list(config.DEFAULT_DTYPES) == props["dtypes"]["default"]


def _contains(big: Any, small: Any, where: str = "") -> None:
    if isinstance(small, Mapping):
        assert isinstance(big, Mapping), where
        for k, v in small.items():
            assert k in big, f"{where}.{k}: not in the view"
            _contains(big[k], v, f"{where}.{k}")
    else:
        assert big == small, f"{where}: the view holds {big!r}, the manifest {small!r}"


def _shipped() -> list[Path]:
    return sorted([*builtin_manifests().values(), *MANIFESTS.glob("*.yaml")])


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_every_shipped_manifest_reads_into_the_view_without_a_value_lost(path: Path) -> None:
    doc = datafiles.read_yaml_or_json(path, what="manifest")
    datafiles.validate(doc, "manifest", what="manifest")
    _contains(_json(mv.ManifestView.from_json(doc)), doc)


def test_the_loader_builds_the_view_and_the_manifest_reads_through_it() -> None:
    m = load_manifest("builtin:simulated-2node")
    assert isinstance(m.view, mv.ManifestView) and m.view.product == m.data["product"]
    assert m.resource_name == m.view.accelerator.resource_name == m.data["accelerator"]["resource_name"]
    assert m.view.cluster.nodes == m.data["cluster"]["nodes"] and m.view.cluster.num_cpus_per_node == 2
    assert m.quantities == {k: list(m.data["accelerator"]["quantities"][k]) for k in ("valid", "invalid")}
    assert m.view.accelerator.hosts.overlay("no_such_kind") is None
