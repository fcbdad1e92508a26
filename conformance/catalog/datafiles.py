"""Where the suite's data files live and how one is read: the data root (the installed data
packages, or CONFORMANCE_DATA_DIR), digests, and the strict reader and schema validation every
loader goes through (a bad file is a one-line UserError naming the field, never a traceback).

The loaders of each file and the types they build are catalog/data.py's; this is the floor
beneath them, so a module that only reads or validates a file need not load the checklist's types.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
from pathlib import Path
from typing import Any, Mapping

import jsonschema

from conformance.errors import UserError
from conformance.jsontypes import JsonObject


def data_root() -> Path:
    """The folder holding `tiers/` and `schemas/` (override with CONFORMANCE_DATA_DIR)."""
    override = os.environ.get("CONFORMANCE_DATA_DIR")
    if override:
        return Path(override)
    return packaged_data_root()


def packaged_data_root() -> Path:
    """The folder holding the installed data packages `conformance.catalog.tiers` and `.schemas`.

    The build maps both from the repository's top-level tiers/ and schemas/ (setup.py), so they are
    siblings wherever they are found: conformance/catalog/ in a wheel, the checkout's root in an
    editable install. The package is installed unzipped, so its resources are plain files on disk.
    """
    return Path(str(importlib.resources.files("conformance.catalog.tiers"))).parent


def schema_path(name: str) -> Path:
    return data_root() / "schemas" / f"{name}.schema.json"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = read_yaml_or_json(schema_path(name), what="schema")   # a schema file is an object
    return doc


# What the schemas' regular expressions mean, for people (a schema's own `description` wins).
PATTERN_HELP = {
    "^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$": "a reference 'package.module:Name' (module path, a colon, "
                                                          "then the class or function)",
    "^[A-Za-z_][A-Za-z0-9_]*$": "a name of letters, digits and _ that does not start with a digit",
    "^[A-Za-z][A-Za-z0-9_]*$": "a name that starts with a letter, then letters, digits and _",
    "^[a-z][a-z0-9_-]*$": "a lower-case name (a letter, then a-z, 0-9, _ or -)",
    "^[A-Z]{2}-[0-9]{3}$": "a check id such as DP-001 (an area's prefix from tiers/vocabulary.yaml, a dash, "
                           "three digits)",
    "^[0-9a-f]{64}$": "a sha256 digest (64 lower-case hex digits)",
}


def _human_pattern(err: jsonschema.ValidationError) -> str:
    """A pattern failure explained without the raw regular expression."""
    described = err.schema.get("description") if isinstance(err.schema, dict) else None
    help_text = PATTERN_HELP.get(str(err.validator_value))
    if help_text is None and described:
        help_text = str(described)
    expected = help_text or "the expected form (see the schema)"
    return f"{err.instance!r} is not {expected}"


def format_validation_error(err: jsonschema.ValidationError, root: str = "") -> str:
    """One line: the JSON path of the offending field and what was expected (never a raw regex)."""
    path = root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    path = path.lstrip(".") or "(top level)"
    message = err.message
    if err.validator == "pattern":
        message = _human_pattern(err)
        if isinstance(err.instance, str) and err.parent is None and err.relative_schema_path and \
                "propertyNames" in err.relative_schema_path:
            message = f"key {message}"
    elif err.validator == "propertyNames":
        message = "a key is not allowed here"
    return f"{path}: {message}"


def validate(instance: object, schema_name: str, *, what: str) -> None:
    """Validate against a schema; raise UserError naming the first (most specific) bad field."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name),
                                                format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(instance), key=lambda e: (-len(e.absolute_path), e.message))
    if errors:
        raise UserError(f"{what}: {format_validation_error(errors[0])}")


def validated_object(instance: object, schema_name: str, *, what: str) -> JsonObject:
    """`instance` once the schema `schema_name` (whose root is an object) passed it: the one step
    from a parsed document to the JSON object the parsers read by key."""
    validate(instance, schema_name, what=what)
    if not isinstance(instance, Mapping):   # a schema whose root is not an object: the caller's mistake
        raise TypeError(f"{schema_name}: the schema passed a {type(instance).__name__}, not an object")
    return instance


def read_yaml_or_json(path: Path, *, what: str) -> Any:
    """Parse a YAML or JSON file strictly (conformance.catalog.strict_input); errors are one-line UserErrors.

    Duplicate keys, NaN/Infinity, non-UTF-8 text, over-deep nesting, oversize files and
    non-regular files (FIFO, device) are refused.
    """
    from conformance.catalog import strict_input

    return strict_input.load(Path(path), what=what)
