"""A second driver whose job registers the backend through `worker_process_setup_hook` (CC-003).

Ray honours the hook only in the job's runtime_env (`ray.init(runtime_env=...)`), never in one
actor's options, so the check runs this module in a fresh process connected to the same cluster:
it starts two members that do *not* register the backend themselves, and reports as JSON what
their registry holds, whether a second registration is harmless, and an allreduce's results.

    python -m conformance.areas.collective.hook_driver ADDRESS SPEC BACKEND GROUP BOUND_S
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any


def main(address: str, spec: str, backend: str, group: str, bound: str) -> dict:
    import ray

    from conformance.collective import programs
    from conformance.collective.members import SPEC_ENV, CollectiveMember

    bound_s = float(bound)   # the check's hook_bound_s: every wait below is bounded by it
    ray.init(address=address, runtime_env={
        "worker_process_setup_hook": "conformance.collective.members.register_from_env",
        "env_vars": {SPEC_ENV: spec}}, log_to_driver=False)
    name, group_class, register, path = (spec.split("|") + ["", "", ""])[:4]
    member: Any = ray.remote(num_cpus=0)(CollectiveMember)   # Any: Ray's hints: pyproject.toml
    actors = [member.remote(name, group_class or None, register or None, [p for p in path.split(os.pathsep) if p],
                            False) for _ in range(2)]
    infos = ray.get([a.info.remote() for a in actors], timeout=bound_s)
    out: dict = {"infos": infos}
    if all(i["registered"] for i in infos):
        out["again"] = ray.get([a.register_again.remote() for a in actors], timeout=bound_s)
        steps = programs.op_matrix(2, ["float32"], ["torch"], ["allreduce"], 4)
        ray.get([a.init_group.remote(2, r, backend, group) for r, a in enumerate(actors)], timeout=bound_s)
        outputs = ray.get([a.run.remote(steps, r, 2, group) for r, a in enumerate(actors)], timeout=bound_s)
        out["problems"] = programs.judge(steps, outputs, 2)
        ray.get([a.destroy.remote(group) for a in actors], timeout=bound_s)
    for a in actors:
        ray.kill(a)
    ray.shutdown()
    return out


if __name__ == "__main__":
    try:
        result = main(*sys.argv[1:6])
    except Exception as exc:  # noqa: BLE001 - reported to the check as its finding
        result = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)
