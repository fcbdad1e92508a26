"""Whose time each of a check's waits is, as the checklist declares it (`waits:`): pure.

A check's recorded waits (metrics.waits, conformance.timing.owned) say whose time each was: the
plugin's (judged against its bound, never stretched) or Ray's and the host's (stretched by what
the run measured). Until this field that was the run's word: a vendor could relabel a plugin wait
as Ray's, or drop every plugin wait, and verify had no list to hold the record to (held-out round
34, W3/W4). The checklist now declares, per check, what bounds each owner's waits:

    waits: {plugin: [scenario_bound_s], ray: [all_bound_s, unnamed]}

Each entry is one of the check's params, or UNNAMED: a wait that names no param (the plugin's is
bounded by its scenario's bound, conformance.timing.owned.plugin_bound; Ray's by the suite's own
nominal bounds, owned.ray_nominal_s). A param is declared for one owner only, so a wait cannot
change hands by keeping its param. Ray's waits may always name none: a shared pool or node lab
records its start in whichever check needs it first, which a selection or a shard moves.
`verify` (conformance.signing.evidence) and the run itself (report/results.aggregate) hold every
wait of a pass to the declaration, and a pass of a check that declares plugin waits to having
recorded one: a plugin wait relabelled as Ray's leaves the plugin's record short.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from conformance.errors import UserError
from conformance.timing.owned import OWNERS

UNNAMED = "unnamed"   # a wait that names no param


@dataclass(frozen=True)
class DeclaredWaits:
    """What bounds a check's waits, by owner: param names, or UNNAMED."""

    plugin: tuple[str, ...] = ()
    ray: tuple[str, ...] = ()

    def of(self, owner: str) -> tuple[str, ...]:
        return self.plugin if owner == "plugin" else self.ray if owner == "ray" else ()

    def as_data(self) -> dict[str, list[str]]:
        """As the checklist writes it."""
        return {o: list(self.of(o)) for o in OWNERS if self.of(o)}


def parse(check_id: str, raw: Mapping[str, Any] | None, params: Mapping[str, Any]) -> DeclaredWaits | None:
    """The declaration of one check (None: the checklist names none, a release before the field).
    Every entry is one of the check's params or UNNAMED, and no param is declared for both owners:
    a one-line UserError naming the field otherwise."""
    if raw is None:
        return None
    declared = DeclaredWaits(plugin=tuple(raw.get("plugin", ())), ray=tuple(raw.get("ray", ())))
    for owner in OWNERS:
        for name in declared.of(owner):
            if name != UNNAMED and name not in params:
                raise UserError(f"checklist: {check_id}.waits.{owner}: {name!r} is not one of the check's params "
                                f"(expected one of: {', '.join(sorted(params)) or 'none'}, or {UNNAMED})")
    both = sorted(set(declared.plugin) & set(declared.ray) - {UNNAMED})
    if both:
        raise UserError(f"checklist: {check_id}.waits: {', '.join(both)} is declared for the plugin and for Ray; "
                        "a param bounds one owner's waits (expected it under one of waits.plugin, waits.ray)")
    return declared


def key(wait: Mapping[str, Any]) -> str:
    """What bounds one recorded wait, as a declaration names it: its param, or UNNAMED."""
    param = wait.get("param")
    return UNNAMED if param is None else str(param)


def problems(waits: object, declared: DeclaredWaits | None) -> list[str]:
    """What a passed check's recorded waits contradict in its release's declaration (pure; nothing
    for a release before the field, or a malformed record, which owned.wait_problems names). A
    failed check is held to nothing here: its own record already says it failed.

    * every wait's owner and bound are declared: a plugin wait relabelled as Ray's that keeps its
      param names one of the plugin's;
    * a pass of a check that declares plugin waits records at least one: dropped, or relabelled as
      Ray's, they leave the plugin's time unjudged.
    """
    if declared is None or not isinstance(waits, Mapping) or not isinstance(waits.get("each"), list):
        return []
    out: list[str] = []
    owned = 0
    for raw in waits["each"]:
        if not isinstance(raw, Mapping) or raw.get("owner") not in OWNERS:
            continue
        owner, bound = str(raw["owner"]), key(raw)
        owned += owner == "plugin"
        if bound not in declared.of(owner):
            whose = "the plugin's" if owner == "plugin" else "Ray's"
            said = ", ".join(declared.of(owner)) or "none"
            out.append(f"the wait {str(raw.get('what'))[:80]!r} is {whose}, bounded by {bound}; the release declares "
                       f"{whose} waits of this check bounded by: {said} (checklist waits.{owner})")
    if declared.plugin and not owned:
        out.append(f"records no wait of the plugin's; the release declares the check waits on it "
                   f"({', '.join(declared.plugin)}: checklist waits.plugin), so its time went unjudged")
    return out
