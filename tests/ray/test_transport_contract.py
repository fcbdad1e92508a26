"""The transport contract docs/transport.md states ("Which process and thread runs each method"),
observed: one real Ray, two endpoint actors, the suite's tracing wrapper recording the process
and thread of every TensorTransportManager call, for a one-sided transport (SIMXFER) and a
two-sided one (conformance/simulated/two_sided.py TwoSidedShm, the two-sided reference in the package)."""
from __future__ import annotations

from pathlib import Path

from script_result import script_result

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "tests" / "broken_plugins"
SCRIPT = r'''
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
import copy
import ray
import conformance
from conformance.catalog.manifest import Manifest, load_manifest
from conformance.rdt import payloads
from conformance.rdt.config import transport_config
from conformance.rdt.registration import ensure_registered
from conformance.rdt.pool import harness_ready, start_endpoints
from conformance.timing.host_load import MachineryRecord
from conformance.areas.transport import lifecycle
from conformance.catalog.data import load_checklist
from conformance.run.budget import Budget
from conformance.rdt import tracing

manager = sys.argv[1]
# the reference transport manifest with the transport under observation in its place (a real Manifest:
# the harness reads its typed view)
base = load_manifest(os.path.join(os.path.dirname(conformance.__file__), "simulated", "manifest-transport.yaml"))
data = copy.deepcopy(base.data)
data["transport"] = {"name": "CONTRACT", "manager": manager, "devices": ["cpu"]}
data.setdefault("plugin", {})["python_path"] = [sys.argv[2]]
manifest = Manifest(data=data, path=base.path, sha256=base.sha256)
ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=100 << 20)
setup = ensure_registered(manifest)
T = setup.traced_name
eps = start_endpoints(setup, "SIMACC", device="cpu", nodes=[None, None], units=False, ready=harness_ready(MachineryRecord()))
src, dst = eps.actors
objs = []
for k in range(2):
    ref = src.make.options(tensor_transport=T).remote(payloads.buffer_case(4096, f"/contract-{k}"))
    ray.get(dst.receive.remote(ref), timeout=60)
    objs.append(ref.hex())
    del ref
# the wait TR-012 makes, through a budget as a check's own (Ray's machinery calling garbage_collect)
budget = Budget(load_checklist().by_id()["TR-012"], {}, MachineryRecord())
lifecycle.wait_calls(budget, eps, T, 0, "garbage_collect", set(objs))
calls = lifecycle.gather_calls(eps, T)
infos = {"driver": os.getpid(), "0": eps.infos[0]["pid"], "1": eps.infos[1]["pid"]}
print("RESULT " + json.dumps({"calls": calls, "pids": infos, "objs": objs}))
ray.shutdown()
'''


def _observe(manager: str, tmp_path: Path) -> dict:
    got: dict = script_result(SCRIPT, tmp_path, manager, str(BROKEN), paths=[BROKEN], timeout_s=240)
    return got


def _threads(result: dict, method: str) -> dict[str, set[int]]:
    """side -> thread idents of every call of `method` for the transferred objects."""
    out: dict[str, set[int]] = {}
    for side, recs in result["calls"].items():
        for r in recs:
            # send_multiple_tensors is given no object id: every send of this run counts
            if r["m"] == method and r.get("obj") in (*result["objs"], None):
                out.setdefault(side, set()).add(r["tid"])
    return out


def test_each_method_runs_where_the_contract_says(tmp_path: Path) -> None:
    """Two transfers through the two-sided reference (the one-sided path is the same without
    send): where each method ran, and which ran on the same thread."""
    result = _observe("conformance.simulated.two_sided:TwoSidedShm", tmp_path)
    calls = result["calls"]
    # get_communicator_metadata: on the owner (the process that passed the refs), once per transfer
    assert sum(r["m"] == "get_communicator_metadata" for r in calls["driver"]) == 2, calls["driver"]
    assert not any(r["m"] == "get_communicator_metadata" for s in ("0", "1") for r in calls[s])
    extract, send = _threads(result, "extract_tensor_transport_metadata"), _threads(result, "send_multiple_tensors")
    recv, gc = _threads(result, "recv_multiple_tensors"), _threads(result, "garbage_collect")
    # extract on the source; send and garbage_collect on the source too; recv on the receiver
    assert set(extract) == {"0"} and set(send) == {"0"} and set(gc) == {"0"} and set(recv) == {"1"}
    # one _ray_system thread per actor: both sends and both frees on one thread of the source,
    # both receives on one thread of the receiver ...
    assert len(send["0"] | gc["0"]) == 1 and len(recv["1"]) == 1, (send, gc, recv)
    # ... which is not the thread that ran the producing method (extract runs there)
    assert not (extract["0"] & send["0"]), (extract, send)
