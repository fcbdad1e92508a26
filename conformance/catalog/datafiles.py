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
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

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


def most_specific(errors: Iterable[jsonschema.ValidationError], *,
                  unknown_first: bool = False) -> jsonschema.ValidationError | None:
    """The error to name of all a document has: the deepest field's first, by message; with
    `unknown_first`, at one depth an unknown field before a missing one (a misspelt field is then
    named as what it is)."""
    if unknown_first:
        return min(errors, key=lambda e: (-len(e.absolute_path), e.validator != "additionalProperties", e.message),
                   default=None)
    return min(errors, key=lambda e: (-len(e.absolute_path), e.message), default=None)


@dataclass(frozen=True)
class CompiledSchema:
    """A schema parsed and compiled once per content (`digest`: sha256 of its file's bytes), so
    a release's schema and this installation's are told apart by what they say, never by name."""

    digest: str
    validator: jsonschema.Draft202012Validator

    def first_error(self, document: object, *, unknown_first: bool = False) -> str | None:
        """The most specific error of a document parsed from JSON or YAML (one line naming the
        field), or None when the schema passes it.

        verify, review and sign each ask this of the same report.json, and the SIG's review asks it
        of every submission in a folder: a document with the same content under the same schema is
        judged once per process. The key is the document's canonical JSON, which stands for its
        content only for what a parser makes (dicts, lists, strings, numbers, booleans, null): any
        other document (a tuple prints as a list) is judged every time."""
        key = _content_key(document)
        if key is not None:
            key = f"{self.digest}:{int(unknown_first)}:{key}"
            if key in _JUDGED:
                return _JUDGED[key]
        err = most_specific(self.validator.iter_errors(document), unknown_first=unknown_first)
        line = format_validation_error(err) if err is not None else None
        if key is not None:
            if len(_JUDGED) >= _JUDGED_MAX:
                _JUDGED.pop(next(iter(_JUDGED)))
            _JUDGED[key] = line
        return line


# "schema digest:order:document digest" -> the first error's line (None: valid), oldest first out.
_JUDGED: dict[str, str | None] = {}
_JUDGED_MAX = 256


@functools.lru_cache(maxsize=16)
def _compiled(digest: str, raw: bytes, source: str) -> CompiledSchema:
    from conformance.catalog import strict_input

    schema = strict_input.parse(raw, source, fmt="json" if source.endswith(".json") else "yaml", what="schema")
    return CompiledSchema(digest, jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()))


def compiled_schema(path: Path) -> CompiledSchema:
    """The schema file at `path`, compiled (once per content)."""
    from conformance.catalog import strict_input

    raw = strict_input.read_regular(Path(path), "schema")
    return _compiled(sha256_bytes(raw), raw, str(path))


def compiled_schema_bytes(raw: bytes, source: str) -> CompiledSchema:
    """A schema the package carries as a resource (`source` names it, ending in .json for JSON)."""
    return _compiled(sha256_bytes(raw), raw, source)


def _content_key(document: object) -> str | None:
    """sha256 of `document`'s canonical JSON when it holds only what a parser makes, else None."""
    if not _plain_json(document):
        return None
    try:
        text = json.dumps(document, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    return sha256_bytes(text.encode("utf-8", "surrogatepass"))


def _plain_json(value: object) -> bool:
    """Whether `value` holds only what a JSON or YAML parser makes (no tuple, no other type)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif not (v is None or isinstance(v, (str, int, float))):
            return False
    return True


def validate(instance: object, schema_name: str, *, what: str) -> None:
    """Validate against a schema; raise UserError naming the first (most specific) bad field."""
    problem = compiled_schema(schema_path(schema_name)).first_error(instance)
    if problem:
        raise UserError(f"{what}: {problem}")


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
