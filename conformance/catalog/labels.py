"""The node-label vocabulary (tiers/labels.yaml) and the validity rules for plugin labels.

Syntax is judged with Ray's own functions (ray._private.label_utils), so the suite accepts
exactly what Ray accepts; on top of that the vocabulary fixes per-key value syntax (integers,
shapes) and which `ray.io/` keys a plugin may set. Ray reserves the `ray.io/` prefix for
Ray-defined labels (label_utils.validate_node_labels refuses custom keys there), so a plugin
may only use the `ray.io/` keys listed in the vocabulary.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from conformance.catalog.datafiles import data_root, read_yaml_or_json, validated_object

RAY_PREFIX = "ray.io/"
INTEGER = re.compile(r"^(0|[1-9][0-9]*)$")
SHAPE = re.compile(r"^[1-9][0-9]*(x[1-9][0-9]*)+$")


@dataclass(frozen=True)
class LabelKey:
    """One vocabulary entry (a key, or a key prefix when `is_prefix`)."""

    key: str
    status: str
    plugin_may_set: bool
    value: str
    describes: str | None = None
    domain: bool = False
    packing: int | None = None
    summary: str = ""
    is_prefix: bool = False


@dataclass(frozen=True)
class Vocabulary:
    keys: tuple[LabelKey, ...]
    prefixes: tuple[LabelKey, ...]

    def lookup(self, key: str) -> LabelKey | None:
        for k in self.keys:
            if k.key == key:
                return k
        for p in self.prefixes:
            if key.startswith(p.key):
                return p
        return None

    def domain_keys(self) -> list[LabelKey]:
        return [k for k in self.keys if k.domain]

    def packing_keys(self) -> list[LabelKey]:
        return sorted((k for k in self.keys if k.packing is not None), key=lambda k: k.packing or 0)

    def keys_describing(self, field: str) -> list[str]:
        return [k.key for k in self.keys if k.describes == field]


def labels_path() -> Path:
    return data_root() / "tiers" / "labels.yaml"


def parse_vocabulary(raw: object) -> Vocabulary:
    doc = validated_object(raw, "labels", what="labels vocabulary")
    keys = tuple(LabelKey(**k) for k in doc["keys"])
    prefixes = tuple(LabelKey(key=p["prefix"], status=p["status"], plugin_may_set=p["plugin_may_set"],
                              value=p["value"], summary=p["summary"], is_prefix=True)
                     for p in doc.get("prefixes", []))
    return Vocabulary(keys, prefixes)


@functools.lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    path = labels_path()
    return parse_vocabulary(read_yaml_or_json(path, what="labels vocabulary"))


def ray_label_problem(key: object, value: object) -> str | None:
    """Ray's own verdict on one node label (key and value syntax), or None when valid."""
    from ray._private import label_utils

    if not isinstance(key, str):
        return f"key {key!r} is a {type(key).__name__}, not a str"
    if not isinstance(value, str):
        return f"{key}: value {value!r} is a {type(value).__name__}, not a str"
    err = label_utils.validate_label_key(key)
    if err:
        return f"{key}: {err}"
    try:
        label_utils.validate_label_value(value)
    except ValueError as exc:
        return f"{key}: {exc}"
    return None


def value_problem(entry: LabelKey, key: str, value: str) -> str | None:
    if entry.value == "integer" and not INTEGER.match(value):
        return f"{key}={value!r}: expected a decimal integer"
    if entry.value == "shape" and not SHAPE.match(value):
        return f"{key}={value!r}: expected a shape such as 4x4 or 2x2x4"
    if value == "" and entry.value == "label":
        return f"{key}: empty value"
    return None


def plugin_label_problems(labels: object, vocabulary: Vocabulary | None = None) -> tuple[list[str], list[str]]:
    """Problems (each fails TL-002) and notes (advice) for the labels a plugin returned."""
    vocabulary = vocabulary or load_vocabulary()
    if labels is None:
        return [], []
    if not isinstance(labels, Mapping):
        return [f"get_current_node_accelerator_labels() returned a {type(labels).__name__}, "
                "expected a dict of str to str (or None)"], []
    problems: list[str] = []
    notes: list[str] = []
    for key, value in labels.items():
        err = ray_label_problem(key, value)
        if err:
            problems.append(err)
            continue
        entry = vocabulary.lookup(key)
        if key.startswith(RAY_PREFIX):
            if entry is None:
                problems.append(f"{key}: the ray.io/ prefix is reserved for Ray-defined labels and this key is "
                                "not in the vocabulary (tiers/labels.yaml); use your own prefix")
                continue
            if not entry.plugin_may_set:
                problems.append(f"{key}: set by Ray or the platform ({entry.summary.rstrip('.')}); "
                                "a plugin must not return it")
                continue
        elif "/" not in key:
            notes.append(f"{key}: unprefixed key; labels added by a component should carry its own prefix "
                         "(e.g. vendor.example.com/{key}) so they cannot collide with users' labels")
        if entry is not None:
            err = value_problem(entry, key, value)
            if err:
                problems.append(err)
    return problems, notes
