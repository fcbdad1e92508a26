"""Canonical JSON: the exact bytes that are signed and hashed.

Sorted keys, no whitespace, UTF-8, no floats. For such data the encoding is byte-identical to
RFC 8785 (JCS), so any JCS implementation reproduces our digests. Floats are refused outright
because their textual form differs between encoders; the statement only carries strings, ints,
booleans and null (report.json itself is covered by its file digest, not re-encoded).
"""
from __future__ import annotations

import json
from typing import Any

from conformance.catalog import strict_input


def _reject_floats(obj: object, path: str = "$") -> None:
    if isinstance(obj, float):
        raise ValueError(f"canonical JSON: {path}: floats are not allowed (use an int or a string)")
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise ValueError(f"canonical JSON: {path}: object keys must be strings")
            _reject_floats(value, f"{path}.{key}")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _reject_floats(value, f"{path}[{i}]")


def canonical_json(obj: object) -> bytes:
    """Encode `obj` canonically (sorted keys, compact separators, UTF-8, no NaN/floats)."""
    _reject_floats(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def loads_strict(data: bytes | str) -> Any:
    """Parse JSON, refusing duplicate object keys, NaN/Infinity and over-deep nesting.

    Two parsers that disagree on which duplicate wins would let one signed document mean two
    things, so a verifier must not accept duplicates at all. Raises ValueError
    (json.JSONDecodeError, UnicodeDecodeError or strict_input.InputLimitError).
    """
    return strict_input.loads_json(data)
