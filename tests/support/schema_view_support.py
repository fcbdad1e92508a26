"""Holding a typed view (frozen dataclasses) to the JSON schema of the document it reads: shared by
tests/unit/test_report_view.py and tests/unit/test_manifest_view.py."""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Mapping, Union


def schema_node(schema: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    """The object schema at `path` ("[]" steps into an array's items), through a $ref."""
    node = schema
    for step in path:
        node = resolve(schema, node["items"] if step == "[]" else node["properties"][step])
    return node


def resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    if "$ref" in node:
        return resolve(schema, schema["$defs"][node["$ref"].split("/")[-1]])
    return node


def schema_types(schema: Mapping[str, Any], node: Mapping[str, Any]) -> set[str]:
    """The JSON types a property allows."""
    node = resolve(schema, node)
    if "const" in node:
        return {{str: "string", int: "integer", bool: "boolean"}[type(node["const"])]}
    if "enum" in node:
        return {"string"}
    kinds = node["type"]
    return set(kinds) if isinstance(kinds, list) else {kinds}


def annotation_types(hint: Any) -> set[str]:
    """The JSON types a field's annotation admits."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return set().union(*(annotation_types(a) for a in typing.get_args(hint)))
    if hint is type(None):
        return {"null"}
    origin = typing.get_origin(hint) or hint
    if dataclasses.is_dataclass(origin) or origin in (dict, Mapping, typing.Mapping) or \
            (isinstance(origin, type) and issubclass(origin, Mapping)):
        return {"object"}
    types_of: dict[Any, set[str]] = {str: {"string"}, bool: {"boolean"}, int: {"integer"}, float: {"number"},
                                     tuple: {"array"}, list: {"array"}}
    return types_of[origin]


def same_types(want: set[str], got: set[str]) -> bool:
    """Whether the schema's types and the annotation's agree (a number field may hold an integer)."""
    if "number" in want:
        return got | {"integer"} == want | {"integer"}
    return got == want
