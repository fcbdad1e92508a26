"""Capability profiles: which plug-in capabilities a report certifies (pure; no Ray, no I/O
beyond loading the profiles file).

The tier ladder answers "how mature is this plugin as a whole"; profiles answer "which of Ray's
plug-in interfaces does it certifiably implement" (device, topology, transport, collective, ...),
the way Khronos profiles and MLPerf categories sit beside a conformance verdict instead of
inside it. A profile is one of three states:

* "certified"      – declared, and every check its selectors pick counts (pass; waived or flaky
                     where the profile allows it);
* "not certified"  – declared, and some such check does not count (named in `blocking`);
* "not declared"   – the manifest has no block for it: nothing was claimed, nothing is lost.

A requirement may carry its own `declared_by` (a dotted manifest field, e.g.
collective.rdt_transport): an optional part of the interface the vendor declares in scope by
naming it. Left undeclared, the checks that requirement picks are out of the profile's scope
(`out_of_scope`, with the field that would bring them in): they are neither required nor counted
as passed, and the report names them beside the state, so "certified" always says for what.

Used by the report writer and by the verifier, which recomputes the profiles from the per-check
results and never trusts the claimed ones. docs/capabilities.md explains the design.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from conformance.catalog.data import Checklist, capabilities_path, load_profiles, select_checks

__all__ = ["capabilities_path", "load_profiles"]   # loaded with the suite's data (catalog/data.py), used here

CERTIFIED, NOT_CERTIFIED, NOT_DECLARED = "certified", "not certified", "not declared"


def _counts(result: Mapping[str, Any] | None, allow_waived: bool, allow_flaky: bool = False) -> bool:
    if result is None:
        return False
    outcome = result.get("outcome")
    blocks = bool((result.get("waiver") or {}).get("blocks_tier", False))
    return outcome == "pass" or (allow_waived and outcome == "waived" and not blocks) or \
        (allow_flaky and outcome == "flaky")


def declares(manifest: Mapping[str, Any], field: str) -> bool:
    """Whether the manifest gives the dotted `field` (collective.rdt_transport) a non-empty value."""
    value: Any = manifest
    for part in field.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return bool(value)


def compute_capabilities(results: Iterable[Mapping[str, Any]], checklist: Checklist,
                         profiles: Iterable[Mapping[str, Any]], manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per profile: {name, state, declared, required_checks, blocking[{id, outcome}],
    out_of_scope[{id, declared_by}]} (out_of_scope only when some requirement is left undeclared)."""
    by_id = {r["id"]: r for r in results}
    out = []
    for p in profiles:
        declared = "declared_by" not in p or declares(manifest, p["declared_by"])
        required: list[str] = []
        outside: dict[str, str] = {}
        for req in p["requires"]:
            picked = [c.id for c in select_checks(checklist, req["select"])]
            if "declared_by" in req and not declares(manifest, req["declared_by"]):
                outside.update({cid: req["declared_by"] for cid in picked if cid not in outside})
            else:
                required += [cid for cid in picked if cid not in required]
        required = [cid for cid in required if cid not in outside]
        blocking = [{"id": cid, "outcome": (by_id.get(cid) or {}).get("outcome", "skip")}
                    for cid in required if not _counts(by_id.get(cid), bool(p.get("allow_waived", False)),
                                                       bool(p.get("allow_flaky", False)))]
        state = NOT_DECLARED if not declared else (CERTIFIED if required and not blocking else NOT_CERTIFIED)
        entry: dict[str, Any] = {"name": p["name"], "state": state, "declared": declared,
                                 "required_checks": required, "blocking": blocking if declared else []}
        if declared and outside:
            entry["out_of_scope"] = [{"id": cid, "declared_by": field} for cid, field in outside.items()]
        out.append(entry)
    return out


def certified_names(capabilities: Iterable[Mapping[str, Any]]) -> list[str]:
    return [c["name"] for c in capabilities if c.get("state") == CERTIFIED]


def verify_claim(report: Mapping[str, Any], checklist: Checklist,
                 profiles: Iterable[Mapping[str, Any]] | None = None) -> tuple[bool, str]:
    """(ok, detail) for the verifier: the claimed capabilities equal the recomputed ones.

    A report written before profiles existed claims none; it verifies, and the detail says what
    its results would certify. `report` is JSON: the claim is judged as signed, since a release
    whose report schema predates capability profiles let any value through."""
    profiles = load_profiles() if profiles is None else profiles
    actual = compute_capabilities(report.get("checks") or [], checklist, profiles, report.get("manifest") or {})
    claimed = report.get("capabilities")
    names = ", ".join(certified_names(actual)) or "none"
    if claimed is None:
        return True, f"the report claims no capabilities (older report); its results certify: {names}"
    if not isinstance(claimed, list) or not all(isinstance(c, Mapping) for c in claimed):
        return False, "capabilities is not a list of profile entries"
    named = [str(c.get("name")) for c in claimed]
    twice = sorted({n for n in named if named.count(n) > 1})
    if twice:
        return False, f"profile(s) {', '.join(twice)} listed more than once: the claim must be one entry per profile"
    want = {c["name"]: _entry(c) for c in actual}
    got = {str(c.get("name")): _entry(c) for c in claimed}
    if got != want:
        diff = next((f"{n}: claimed {_shown(got.get(n))}, recomputed {_shown(want.get(n))}"
                     for n in sorted(set(want) | set(got)) if got.get(n) != want.get(n)), "")
        return False, f"claimed capabilities differ from the per-check results ({diff})"
    return True, f"recomputed capabilities equal the claim; certified: {names}"


def _pairs(items: object, first: str, second: str) -> object:
    """A list of {first, second} entries as pairs (anything else as it is, to differ)."""
    if not isinstance(items, list):
        return items
    return [(i.get(first), i.get(second)) if isinstance(i, Mapping) else i for i in items]


def _entry(c: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a profile entry says, every part of it (a page shows all of it): out_of_scope by
    value too, so a report cannot move a check out of a profile's scope by editing its entry."""
    return (c.get("state"), c.get("declared"), c.get("required_checks"),
            _pairs(c.get("blocking"), "id", "outcome"), sorted(set(c) - _ENTRY_KEYS),
            _pairs(c.get("out_of_scope"), "id", "declared_by"))


_ENTRY_KEYS = {"name", "state", "declared", "required_checks", "blocking", "out_of_scope"}


def _shown(entry: object) -> str:
    """An entry in a verify line, cut short (verify's line printer sanitises the whole line)."""
    if not isinstance(entry, tuple):
        text = repr(entry)
    else:
        state, declared, _, blocking, extra, outside = entry
        text = (f"{state!r} (declared {declared}, blocking {blocking}"
                f"{', out of scope ' + str(outside) if outside else ''}{', extra fields ' + str(extra) if extra else ''})")
    return text if len(text) <= 160 else text[:159] + "…"
