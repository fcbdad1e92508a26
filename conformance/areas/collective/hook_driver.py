"""A second driver whose job registers the backend through `worker_process_setup_hook` (CC-003).

Ray honours the hook only in the job's runtime_env (`ray.init(runtime_env=...)`), never in one
actor's options, so the check runs this module in a fresh process connected to the same cluster:
it starts two members that do *not* register the backend themselves, and reports as JSON what
their registry holds, whether a second registration is harmless, and an allreduce's results.

The members' start is a wait on Ray's machinery (conformance.run.machinery: the start guard
stretched by the worker start the run measured, WORKER_START_S, handed over as an argument into
this process's own record, and a fresh sample here); it is
left out of the job's own bound, and a host too slow for it is reported as "host" (the check
raises HostNotReady: "not judged: host"), never as the backend's failure.

    python -m conformance.areas.collective.hook_driver ADDRESS SPEC BACKEND GROUP BOUND_S WORKER_START_S
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from conformance.areas.collective.judges import HOOK_ELEMENTS, HOOK_MEMBERS
from conformance.collective.context import START_TIMEOUT_S
from conformance.run.machinery import await_actors
from conformance.timing.host_load import MAX_FACTOR
from conformance.timing.owned import RESAMPLE_S

# the longest the job may take beyond its bound: its members' start, awaited as Ray's machinery
# (the start guard at its widest stretch, and a fresh sample)
MACHINERY_ALLOWANCE_S = START_TIMEOUT_S * MAX_FACTOR + RESAMPLE_S


def main(address: str, spec: str, backend: str, group: str, bound: str, worker_start: str = "0") -> dict[str, Any]:
    import ray

    from conformance.collective import programs
    from conformance.collective.members import SPEC_ENV, CollectiveMember
    from conformance.timing.host_load import MachineryRecord

    t0 = time.monotonic()
    bound_s = float(bound)   # the check's hook_bound_s: the job's own steps, its members' start left out
    machinery = MachineryRecord()   # this job's record: the run's lives in another process
    if float(worker_start) > 0:   # the run's measurement: this process stretches its waits as the run does
        machinery.note("worker_start", float(worker_start))
    ray.init(address=address, runtime_env={
        "worker_process_setup_hook": "conformance.collective.members.register_from_env",
        "env_vars": {SPEC_ENV: spec}}, log_to_driver=False)
    name, group_class, register, path = (spec.split("|") + ["", "", ""])[:4]
    member: Any = ray.remote(num_cpus=0)(CollectiveMember)   # Any: Ray's hints: pyproject.toml
    actors = [member.remote(name, group_class or None, register or None, [p for p in path.split(os.pathsep) if p],
                            False) for _ in range(HOOK_MEMBERS)]
    started = time.monotonic()
    infos = await_actors([a.info.remote() for a in actors], START_TIMEOUT_S, "the hook job's members to start",
                         machinery=machinery)
    start_s = time.monotonic() - started

    def left() -> float:
        return max(bound_s - (time.monotonic() - t0 - start_s), 0.01)

    out: dict[str, Any] = {"infos": infos, "start_s": round(start_s, 2)}
    if all(i["registered"] for i in infos):
        out["again"] = ray.get([a.register_again.remote() for a in actors], timeout=left())
        steps = programs.op_matrix(HOOK_MEMBERS, ["float32"], ["torch"], ["allreduce"], HOOK_ELEMENTS)
        ray.get([a.init_group.remote(HOOK_MEMBERS, r, backend, group) for r, a in enumerate(actors)], timeout=left())
        outputs = ray.get([a.run.remote(steps, r, HOOK_MEMBERS, group) for r, a in enumerate(actors)], timeout=left())
        out["problems"] = programs.judge(steps, outputs, HOOK_MEMBERS)
        out["digests"] = programs.held_digests(steps, outputs, HOOK_MEMBERS)
        ray.get([a.destroy.remote(group) for a in actors], timeout=left())
    for a in actors:
        ray.kill(a)
    ray.shutdown()
    return out


if __name__ == "__main__":
    from conformance.timing.host_load import HostNotReady

    try:
        result = main(*sys.argv[1:7])
    except HostNotReady as exc:   # the host's failure: the check reports it as such
        result = {"host": str(exc)}
    except Exception as exc:  # noqa: BLE001 - reported to the check as its finding
        result = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)
