"""Reading what verify is given: the envelope (or Sigstore bundle) and the Statement it signs.

Unreadable input (a missing file, an envelope that is not JSON or not DSSE) is a UserError
(exit 2); a Statement that is not ours is a FAIL line (its reason comes back with it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse
from conformance.signing.canonical import loads_strict


def locate_envelope(path: Path) -> Path:
    """A folder means its report.intoto.json (or report.sigstore.json); a file is the envelope."""
    path = Path(path)
    if path.is_dir():
        for name in (att.ENVELOPE_NAME, att.BUNDLE_NAME):
            if (path / name).is_file():
                return path / name
        raise UserError(f"verify: {path} holds no {att.ENVELOPE_NAME}; sign it first")
    if not path.exists():
        raise UserError(f"verify: no such file or directory: {path}")
    return path


def envelope_doc(path: Path, within: Path | None = None) -> Any:
    """The envelope or bundle file as JSON (strict: no duplicate keys, no NaN)."""
    raw = att.read_file(path, "verify", max_bytes=att.MAX_ENVELOPE_BYTES, within=within)
    try:
        return loads_strict(raw)
    except UnicodeDecodeError:
        raise UserError(f"{path}: envelope is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: envelope is not valid JSON (truncated?) at line {exc.lineno} "
                        f"column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise UserError(f"{path}: envelope is not valid JSON: {exc}") from None


def read_envelope(path: Path, within: Path | None = None) -> dsse.Envelope:
    return dsse.parse_envelope(envelope_doc(path, within), str(path))


def parse_statement(env: dsse.Envelope) -> tuple[dict[str, Any] | None, str]:
    """The statement (from the exact signed bytes) or None with the reason."""
    if env.payload_type != dsse.PAYLOAD_TYPE:
        return None, f"payloadType {env.payload_type!r}, expected {dsse.PAYLOAD_TYPE!r}"
    try:
        st = loads_strict(env.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "payload is not UTF-8 JSON"
    if not isinstance(st, dict):
        return None, "payload is not a JSON object"
    if st.get("_type") != att.STATEMENT_TYPE:
        return None, f"_type {st.get('_type')!r}, expected {att.STATEMENT_TYPE!r}"
    if st.get("predicateType") != att.PREDICATE_TYPE:
        return None, f"predicateType {st.get('predicateType')!r}, expected {att.PREDICATE_TYPE!r}"
    pred = st.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get(att.EXTENSION), dict) \
            or not isinstance(st.get("subject"), list):
        return None, f"statement lacks subject, predicate or predicate.{att.EXTENSION}"
    return st, "in-toto Statement v1, test-result v0.1 predicate"
