"""The heads the suite starts (conformance.cluster.manager.start_cluster) run without the
dashboard's API server (`head_without_api_server`), every node's dashboard agent minimal
(`minimal_dashboard_agents`), and still serve everything a run uses: nodes,
tasks, the web UI address a driver reads ("" as with the dashboard off). Ray's own start path
is back once the head is up. In a child process, as a certification's driver is."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys
import ray
from ray._private import ray_constants
from ray._private.node import Node
import ray._private.utils as ray_utils
probe = ray_utils.get_dashboard_dependency_error
from conformance.catalog.manifest import load_manifest
from conformance.cluster.manager import ClusterShape, prepare_driver, start_cluster, stop_cluster
original = Node.start_api_server
manifest = load_manifest(sys.argv[1])
prepare_driver(manifest)
handle = start_cluster(manifest, ClusterShape("shared", nodes=2), None, None)
try:
    head = handle.cluster.head_node
    @ray.remote(num_cpus=1)
    def one():
        return 1
    out = {"head_processes": sorted(head.all_processes), "webui_url": head.webui_url,
           "driver_webui_url": ray._private.worker.global_worker.node.webui_url,
           "alive_nodes": sum(1 for n in ray.nodes() if n["Alive"]), "task": ray.get(one.remote(), timeout=60),
           "restored": Node.start_api_server is original and ray_utils.get_dashboard_dependency_error is probe,
           "agents": [[a for a in map(str, p.process.args) if a.startswith("--dashboard_agent_command=")]
                      for node in handle.node_handles for p in node.all_processes[ray_constants.PROCESS_TYPE_RAYLET]],
           "dashboard_type": ray_constants.PROCESS_TYPE_DASHBOARD}
finally:
    stop_cluster(handle)
print(json.dumps(out))
"""


def test_a_suite_head_runs_without_the_api_server_and_serves_the_run() -> None:
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(ROOT / "conformance" / "simulated" / "manifest.yaml")],
                          capture_output=True, text=True, timeout=180, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["dashboard_type"] not in out["head_processes"], out
    assert {"gcs_server", "raylet"} <= set(out["head_processes"]), out
    assert out["webui_url"] == "" and out["driver_webui_url"] == "", out
    assert out["alive_nodes"] == 2 and out["task"] == 1, out
    assert out["restored"], out
    assert len(out["agents"]) == 2 and all(len(a) == 1 and "--minimal" in a[0] for a in out["agents"]), out["agents"]
