"""The one strict reader for every YAML/JSON file the tool reads (manifest, keyring, report,
statement, envelope, bundle, checklist, releases ...).

Why strict: a verifier parses files an adversary wrote. Two parsers that disagree on which
duplicate key wins let one signed document mean two things; NaN and Infinity are not JSON and
compare unequal to themselves; deep nesting overflows the stack; a FIFO or /dev/zero named
`report.json` hangs or exhausts memory. So every read goes through here, and every such input
is a one-line UserError naming the file (exit 2), never a hang or a traceback.

Limits (docs/signing.md "Limits"): files are regular files of at most `max_bytes` (default
MAX_FILE_BYTES), nested at most MAX_DEPTH deep, with at most MAX_NODES values in all (a YAML
alias bomb expands past that). Numbers must be finite and integers within +-MAX_INTEGER
(`10**400` is legal JSON, but float() of it overflows and the comparisons downstream would end
in a traceback). A string that reads as an ISO date-time must be one the code can compute with:
convertible to UTC with a day to spare either side (`0001-01-01T00:00:00+14:00` is not).
Each refusal names the field (`$.checks[3].metrics.x`).
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from conformance.errors import UserError

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 2_000_000
MAX_INTEGER = 2 ** 63 - 1  # int64: every real count, size or nanosecond timestamp fits
_MAX_INT_DIGITS = len(str(MAX_INTEGER))
_LOOKS_LIKE_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class InputLimitError(ValueError):
    """A parsed document breaks a structural rule (duplicate key, NaN, too deep, too big)."""


def read_regular(path: Path, what: str, *, max_bytes: int = MAX_FILE_BYTES, within: Path | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `max_bytes`.

    Opened non-blocking (a FIFO cannot hang the open) and checked with fstat on the open file
    (no race between check and read); devices, FIFOs, sockets and folders are refused. With
    `within`, a path that resolves outside that folder (a symlink leaving a submission) is
    refused before it is opened.
    """
    path = Path(path)
    if within is not None:
        read_regular_check_within(path, what, within)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError(f"{what}: missing file {path}") from None
    except (IsADirectoryError, PermissionError, OSError) as exc:
        raise UserError(f"{what}: cannot read {path}: {exc.__class__.__name__}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode)
                    or stat.S_ISBLK(info.st_mode) else "a directory" if stat.S_ISDIR(info.st_mode)
                    else "not a regular file")
            raise UserError(f"{what}: {path} is {kind}; only regular files are read")
        if info.st_size > max_bytes:
            raise UserError(f"{what}: {path} is {info.st_size} bytes, over the {max_bytes}-byte limit")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise UserError(f"{what}: {path} grew past the {max_bytes}-byte limit while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise UserError(f"{what}: cannot read {path}: {exc.__class__.__name__}") from None
    finally:
        os.close(fd)


def sha256_regular(path: Path, what: str, *, max_bytes: int, within: Path | None = None) -> str:
    """sha256 of a regular file (streamed, so a large plugin wheel is never held in memory)."""
    import hashlib

    path = Path(path)
    if within is not None:
        read_regular_check_within(path, what, within)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{what}: {path} is not a regular file")
        if info.st_size > max_bytes:
            raise UserError(f"{what}: {path} is {info.st_size} bytes, over the {max_bytes}-byte limit")
        digest, total = hashlib.sha256(), 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                raise UserError(f"{what}: {path} grew past the {max_bytes}-byte limit while being read")
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def read_regular_check_within(path: Path, what: str, within: Path) -> None:
    """Refuse a path that resolves outside `within` (a symlink leaving a submission folder)."""
    try:
        resolved, root = Path(path).resolve(), Path(within).resolve()
    except (OSError, RuntimeError):
        raise UserError(f"{what}: cannot resolve {path} (symlink loop?)") from None
    if resolved != root and root not in resolved.parents:
        raise UserError(f"{what}: {path} is a symlink leading outside {within}; refused")


def _field(parent: str, key: object) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else f"{parent}.{key}"


def utc_datetime(value: str) -> datetime:
    """An ISO 8601 date-time as an aware UTC datetime (no offset: UTC), with a day of headroom.

    Raises ValueError when `value` is not a date-time or cannot be computed with (converting
    `0001-01-01T00:00:00+14:00` to UTC leaves the calendar; so would adding a day to 9999-12-31).
    """
    ts = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    try:
        ts = (ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
        ts - timedelta(days=1), ts + timedelta(days=1)
    except OverflowError:
        raise ValueError(f"date-time {value!r} is outside the range the verifier can compute with") from None
    return ts


def utc_date(value: str) -> date:
    """The UTC calendar date of an ISO date-time (ValueError as utc_datetime)."""
    return utc_datetime(value).date()


def _check_string(value: str) -> str | None:
    if _LOOKS_LIKE_DATETIME.match(value):
        try:
            utc_datetime(value)
        except ValueError as exc:
            if "outside the range" in str(exc):
                return str(exc)
    return None


def check_structure(doc: object, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Depth, size, finite numbers, int64 integers and computable date-times, walked without recursion.

    Raises InputLimitError naming the field. Shared YAML aliases are walked once per reference,
    so an alias bomb hits `max_nodes` instead of expanding forever.
    """
    stack: list[tuple[Any, int, str]] = [(doc, 1, "$")]
    nodes = 0
    while stack:
        value, depth, where = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise InputLimitError(f"more than {max_nodes} values")
        if isinstance(value, float) and not math.isfinite(value):
            raise InputLimitError(f"{where}: non-finite number {value!r} (NaN/Infinity are not allowed)")
        if isinstance(value, _TooLongInteger) or (isinstance(value, int) and not isinstance(value, bool)
                                                  and abs(value) > MAX_INTEGER):
            digits = value.digits if isinstance(value, _TooLongInteger) else len(str(abs(value)))
            raise InputLimitError(f"{where}: integer of {digits} digits is outside +-2**63-1")
        if isinstance(value, str):
            problem = _check_string(value)
            if problem:
                raise InputLimitError(f"{where}: {problem}")
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise InputLimitError(f"nested deeper than {max_depth} levels")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((v, depth + 1, _field(where, k)) for k, v in items)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InputLimitError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise InputLimitError(f"non-finite number {name} (NaN/Infinity are not allowed)")


class _TooLongInteger:
    """Stands in for an integer literal too long for int64 until check_structure names its field."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _bounded_int(text: str) -> Any:
    """json's parse_int: never convert a literal too long for int64 (a 100,000-digit literal
    costs quadratic time, then overflows float()); check_structure refuses it by field."""
    digits = len(text.lstrip("-"))
    return _TooLongInteger(digits) if digits > _MAX_INT_DIGITS else int(text)


def loads_json(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys, no NaN/Infinity, bounded depth.

    Raises json.JSONDecodeError for syntax, UnicodeDecodeError for bytes that are not UTF-8,
    and InputLimitError (a ValueError) for the rest, so callers can phrase each.
    """
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                         parse_int=_bounded_int)
    except RecursionError:
        raise InputLimitError(f"nested deeper than {max_depth} levels") from None
    check_structure(doc, max_depth=max_depth)
    return doc


if TYPE_CHECKING:  # the checker reads the pure-Python loader: CSafeLoader has the same SafeConstructor
    _SAFE_BASE = yaml.SafeLoader
else:
    _SAFE_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when present: ~5x faster


class _StrictSafeLoader(_SAFE_BASE):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise yaml.constructor.ConstructorError(None, None, "unhashable mapping key",
                                                        key_node.start_mark) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def loads_yaml(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse YAML with SafeLoader semantics, refusing duplicate keys, .nan/.inf and deep nesting."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        doc = yaml.load(text, Loader=_StrictSafeLoader)  # a SafeLoader subclass: no arbitrary objects
    except RecursionError:
        raise InputLimitError(f"nested deeper than {max_depth} levels") from None
    check_structure(doc, max_depth=max_depth)
    return doc


def parse(raw: bytes, source: str, *, fmt: str, what: str = "") -> Any:
    """Parse bytes as 'json' or 'yaml'; every failure is one UserError line naming `source`."""
    prefix = f"{what}: {source}" if what else source
    try:
        return loads_json(raw) if fmt == "json" else loads_yaml(raw)
    except UnicodeDecodeError:
        raise UserError(f"{prefix}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{prefix}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise UserError(f"{prefix}: invalid YAML{where}: {problem}") from None
    except InputLimitError as exc:
        raise UserError(f"{prefix}: {exc}") from None
    except ValueError as exc:  # e.g. an integer literal too long to convert
        raise UserError(f"{prefix}: invalid {fmt.upper()}: {str(exc).splitlines()[0][:200]}") from None


def load(path: Path, *, what: str, max_bytes: int = MAX_FILE_BYTES, within: Path | None = None) -> Any:
    """Read and parse a file: JSON when it ends in .json, YAML otherwise."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise UserError(f"{what}: file not found: {path}")
    raw = read_regular(path, what, max_bytes=max_bytes, within=within)
    return parse(raw, str(path), fmt="json" if path.suffix == ".json" else "yaml", what=what)


def as_map(value: object) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one: for reading a field of untrusted JSON whose
    type the schema check may not have run on yet (a verifier reports the schema error elsewhere)."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """`value` when it is a list, else an empty one (see as_map)."""
    return value if isinstance(value, list) else []
