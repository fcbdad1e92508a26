"""A run's end while RDT transfers still wait for their source: the suite's cluster stop returns.

In Ray 2.60 a transfer whose source task has not returned yet is queued in the driver, and started
from the core worker's IO thread when the source's transport metadata arrives. When that happens
during `ray.shutdown()`, the actor call Ray makes there auto-inits (a new local cluster) and then
waits for the lock `ray.shutdown()` holds, while `ray.shutdown()` waits for the IO thread: the run
never writes its report (seen in make test: transport/SharedStaging, killed at the 900 s bound).
The suite turns auto-init off in its driver (`conformance.cluster.ray_start.without_implicit_ray_init`).

The program queues 200 transfers whose sources return over one second and stops the cluster in
the middle of it, so metadata lands while the stop runs (without the fix it hung in about half of
the tries with 60 transfers). In a child process, as a certification's driver is.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, os, sys, time
import ray, torch
from ray.experimental.rdt import register_tensor_transport
from conformance.catalog.manifest import load_manifest
from conformance.cluster.manager import ClusterShape, prepare_driver, start_cluster, stop_cluster
from conformance.simulated.transport import TRANSPORT_NAME, SimXferTransport

manifest = load_manifest(sys.argv[1])
prepare_driver(manifest)
handle = start_cluster(manifest, ClusterShape("shared", nodes=1), None, None)
if sys.argv[2] == "auto-init-on":     # the control: Ray's default, to see the hang
    import ray._private.auto_init_hook as auto_init
    auto_init.enable_auto_connect = True
register_tensor_transport(TRANSPORT_NAME, ["cpu"], SimXferTransport, torch.Tensor)

@ray.remote(num_cpus=0, max_concurrency=256)
class Endpoint:
    def __init__(self):
        register_tensor_transport(TRANSPORT_NAME, ["cpu"], SimXferTransport, torch.Tensor)

    @ray.method(tensor_transport=TRANSPORT_NAME)
    def make(self, delay_s):
        time.sleep(delay_s)
        return torch.ones(256)

    def take(self, tensor):
        return float(tensor.sum())

source, destination = Endpoint.remote(), Endpoint.remote()
ray.get([source.__ray_ready__.remote(), destination.__ray_ready__.remote()], timeout=120)
refs = [source.make.remote(1.0 + i * 0.005) for i in range(200)]
taken = [destination.take.remote(ref) for ref in refs]
time.sleep(1.5)
t0 = time.monotonic()
stop_cluster(handle)
stop_s = time.monotonic() - t0
time.sleep(2.0)   # every source has returned: an auto-init would have started its raylet by now
mine = [p for p in os.listdir("/proc") if p.isdigit()]
def parent_and_name(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[1]), stat[stat.index("(") + 1:stat.rindex(")")]
    except (OSError, ValueError):
        return None, ""
children = [name for pid in mine for parent, name in [parent_and_name(pid)] if parent == os.getpid()]
print(json.dumps({"stop_s": round(stop_s, 2), "initialized": ray.is_initialized(), "children": children}))
os._exit(0)   # the control's hung threads would keep a normal exit waiting
"""


def _run(mode: str, timeout_s: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run([sys.executable, "-c", PROGRAM, str(ROOT / "conformance" / "simulated" / "manifest.yaml"), mode],
                              capture_output=True, text=True, timeout=timeout_s, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return None


def test_stopping_the_cluster_with_transfers_queued_returns_and_starts_no_cluster() -> None:
    proc = _run("suite", 120)
    assert proc is not None, "stop_cluster hung with RDT transfers queued"
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["stop_s"] < 60, out
    assert not out["initialized"], out
    # an auto-init would have started a local cluster: its raylet and GCS are children of the driver
    assert not {"raylet", "gcs_server"} & set(out["children"]), out
