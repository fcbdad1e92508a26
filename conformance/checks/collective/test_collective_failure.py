"""Collective area, failure: a member killed while the others wait inside an op (CC-009).

Ray gives survivors no signal when a member dies (ray.util.collective has no failure detection),
so only the backend can turn the wait into an error. The survivors must each get an error within
the check's bound, never hang; then the group must be destroyable and a new one buildable with a
replacement member.
"""
from __future__ import annotations

import time

import pytest

from conformance.areas.collective.judges import SURVIVOR_ERROR, SURVIVOR_HUNG, SURVIVOR_RETURNED
from conformance.collective import programs
from conformance.collective.context import CollectiveCtx, CollectiveError


@pytest.mark.check("CC-009")
def test_a_member_killed_mid_op_costs_survivors_an_error_not_a_hang(collective_ctx: CollectiveCtx) -> None:
    import ray

    cc = collective_ctx.backend
    error_s, settle_s, bound = (float(collective_ctx.param(k)) for k in ("error_bound_s", "settle_s", "op_bound_s"))
    pool = cc.pool()
    ws = len(pool)
    victim, survivors = pool[-1], pool[:-1]
    group = cc.group_name("death")
    steps = [{"op": "allreduce", "reduce": "SUM", "dtype": "float32", "lib": "torch", "n": 4, "seed": 7}]
    cc.create(pool, group)
    refs = [m.run.remote(steps, r, ws, group) for r, m in enumerate(survivors)]
    time.sleep(settle_s)
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    if ready:
        pytest.fail("survivors finished an allreduce without the member that never joined it", pytrace=False)
    ray.kill(victim)
    t0 = time.monotonic()
    seconds: dict[int, float] = {}
    outcome: dict[int, str] = {}
    remaining = list(refs)
    while remaining and time.monotonic() - t0 < error_s:
        left = max(0.01, error_s - (time.monotonic() - t0))
        done, remaining = ray.wait(remaining, num_returns=1, timeout=left)
        for ref in done:
            r = refs.index(ref)
            seconds[r] = round(time.monotonic() - t0, 2)
            try:
                ray.get(ref)
                outcome[r] = SURVIVOR_RETURNED
            except Exception:  # noqa: BLE001 - the error we want
                outcome[r] = SURVIVOR_ERROR
    for ref in remaining:
        outcome[refs.index(ref)] = SURVIVOR_HUNG
    collective_ctx.metrics["error_s"] = seconds
    collective_ctx.metrics["survivors"] = len(survivors)   # verify holds error_s to one time per survivor
    # every survivor's end, the judge's evidence beside its time (every_survivor_errored_in_time)
    collective_ctx.metrics["outcomes"] = {str(r): o for r, o in sorted(outcome.items())}
    problems = [f"survivor rank {refs.index(ref)} still waits {error_s:.0f}s after the member's death (a hang)"
                for ref in remaining]
    problems += [f"survivor rank {r} {o}" for r, o in outcome.items() if o not in (SURVIVOR_ERROR, SURVIVOR_HUNG)]
    for ref in remaining:
        ray.cancel(ref, force=False)
    cc.replace(victim)
    if problems:
        cc.stop(survivors)   # they may still be stuck in the op: the pool starts fresh ones
        for m in survivors:
            cc.replace(m)
        pytest.fail("; ".join(problems), pytrace=False)
    try:
        cc.destroy(survivors, group)
        members = cc.pool()
        fresh = cc.group_name("after-death")
        again = programs.op_matrix(ws, ["float32"], ["torch"], ["allreduce"], 4)[:1]
        cc.create(members, fresh)
        found = programs.judge(again, cc.execute(members, again, fresh, bound, param="op_bound_s"), ws)
        cc.destroy(members, fresh)
    except CollectiveError as exc:
        found = [f"after the death: {exc}"]
    cc.note("CC-009", f"survivors' errors after {max(seconds.values()) if seconds else '-'} s")
    assert not found, "; ".join(found)
