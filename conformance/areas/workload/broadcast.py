"""WL-001 through the collective's broadcast: when the manifest declares a collective backend,
the trainer also publishes its weights with the backend's broadcast (rank 0 to every receiver),
for a few rounds after the transport's, judged as the transport's rounds are (exactly round k's
bytes in round k, not round k-1's, not a mix; conformance.areas.workload.sync.round_problems).

The same actors join one group of the backend (each registers it, as a vendor's actors would);
every base tensor of the layout whose dtype the collective block claims is broadcast in layout
order, into buffers each receiver keeps on its device from round to round. The rounds run on a
device type the transport and the collective both declare; elsewhere the report says why none ran.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.areas.workload import model
from conformance.areas.workload.sync import round_problems, timed
from conformance.collective.config import CollectiveConfig
from conformance.exc_text import first_line
from conformance.rdt.pool import Endpoints
from conformance.timing.clock import Clock
from conformance.timing.timeouts import CheckTimeout


@dataclass
class BroadcastRecord:
    round_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    round_wrong: list[int] = field(default_factory=list)   # per round: the problems it showed (the judge's evidence)

    def figures(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """Per-round seconds (not gated) and their median (`diff`: lower is better)."""
        import statistics

        out: dict[str, Any] = {"broadcast_round_seconds": [round(x, 4) for x in self.round_s],
                               "broadcast_wrong_per_round": list(self.round_wrong),
                               "broadcast_tensors": model.tensor_count(entries),
                               "broadcast_state_bytes": model.nbytes(entries)}
        if self.round_s:
            out["median_broadcast_round_s"] = round(statistics.median(self.round_s), 4)
        return out


def broadcast_entries(cfg: CollectiveConfig | None, device: str, entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """What the broadcast rounds carry on `device` (pure): the layout's entries whose dtypes the
    collective claims, or [] and why none ran ("" when no collective is declared)."""
    if cfg is None:
        return [], ""
    if not cfg.claims("broadcast"):
        return [], "the collective block does not claim broadcast: no rounds through it"
    if device not in cfg.devices:
        return [], (f"the collective block does not declare {device} (collective.devices: {', '.join(cfg.devices)}): "
                    f"no broadcast rounds on {device}")
    sub = model.subset(entries, cfg.dtypes)
    if not sub:
        return [], "the collective block claims none of the state's dtypes: no broadcast rounds"
    return sub, ""


def errors_of(refs: list[Any], labels: list[str]) -> list[tuple[str, str]]:
    """(label, "Type: first line") of each call among `refs` that has already ended with an error
    (a receiver the backend refused while the root still waits for it); the others are not waited for."""
    import ray

    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
    done = set(ready)
    out = []
    for label, ref in zip(labels, refs):
        if ref in done:
            try:
                ray.get(ref, timeout=0)
            except Exception as exc:  # noqa: BLE001 - what the backend raised is what we report
                out.append((label, first_line(exc)))
    return out


SHOWN_ERRORS = 3   # knob: how many members' errors a failed round names (the rest are counted)


def broadcast_failure(k: int, backend: str, raised: list[tuple[str, str]], why: str) -> str:
    """A failed broadcast round, worded with the error the backend raised in each member that
    raised (pure): the vendor sees why, not only that a round failed; `why` (what the wait
    itself saw: a bound reached, the first error) when no member's error is known."""
    if not raised:
        return f"round {k}: broadcast through {backend} failed: {why}"
    named = "; ".join(f"{label} raised {line}" for label, line in raised[:SHOWN_ERRORS])
    more = f" (and {len(raised) - SHOWN_ERRORS} more)" if len(raised) > SHOWN_ERRORS else ""
    return f"round {k}: broadcast through {backend} failed: {named}{more}"


def run_broadcast(eps: Endpoints, cfg: CollectiveConfig, python_path: list[str], entries: list[dict[str, Any]],
                  first_round: int, rounds: int, labels: list[str], clock: Clock, bound_s: float) -> BroadcastRecord:
    """`rounds` rounds from `first_round` through the collective's broadcast (see the module)."""
    actors = eps.actors
    trainer = actors[0]
    group = f"wl-bcast-{uuid.uuid4().hex[:10]}"
    spec = {"backend": cfg.backend, "group_class": cfg.group_class, "register": cfg.register,
            "python_path": list(python_path), "ray_backend": cfg.ray_backend}
    record = BroadcastRecord()
    clock.get([a.join_collective.remote(spec, len(actors), r, group) for r, a in enumerate(actors)],
              f"the trainer and receivers to join a {cfg.backend} group", bound_s)
    try:
        previous = model.expected(entries, first_round - 1)
        for k in range(first_round, first_round + rounds):
            clock.get(trainer.step.remote(k), f"round {k}: the trainer's step", bound_s)
            expect = model.expected(entries, k)

            def broadcast(k: int = k) -> list[Any]:
                refs = [a.broadcast_weights.remote(entries, group, k) for a in actors]
                try:
                    received: list[Any] = clock.get(refs, f"round {k}: broadcast through {cfg.backend}", bound_s)
                    return received
                except CheckTimeout:
                    raise
                except Exception as exc:  # noqa: BLE001 - the backend's own error is the finding
                    raise clock.fail(broadcast_failure(k, cfg.backend, errors_of(refs, ["the trainer", *labels]),
                                                       first_line(exc))) from None
            outs, seconds = timed(broadcast)
            record.round_s.append(seconds)
            before = len(record.problems)
            record.problems += round_problems(k, "the trainer (broadcast root)", outs[0]["digest"], expect, None, eps.device)
            for label, out in zip(labels, outs[1:]):
                record.problems += [p.replace("(stale: the transport served", "(stale: the broadcast served")
                                    for p in round_problems(k, f"{label} through {cfg.backend}'s broadcast",
                                                            out["digest"], expect, previous, eps.device)]
            record.round_wrong.append(len(record.problems) - before)
            previous = expect
    finally:
        try:
            clock.get([a.leave_collective.remote(group) for a in actors], f"destroy_collective_group({group!r})", bound_s)
        except Exception:  # noqa: BLE001 - the actors are stopped next; the rounds' findings stand
            pass
    return record
