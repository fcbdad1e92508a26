#!/usr/bin/env bash
# Certify Ray's built-in NVIDIA manager on a real GPU machine with the suite (developer tool;
# not part of CI). The device machine has torch but no Ray: the Ray 2.60 wheel travels split in
# two (.gpuA/ copied to /tmp/parts by a first call, then .gpuB/), with jsonschema and its deps.
set -u
cat /tmp/parts/ray.part.aa .gpuB/ray.part.* > /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  /tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl .gpuB/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled
nvidia-smi -L
python3 - "$OUT/nvidia.yaml" <<'PY'
import sys, yaml
from ray._private.accelerators.nvidia_gpu import NvidiaGPUAcceleratorManager as M
n, t = M.get_current_node_num_accelerators(), M.get_current_node_accelerator_type()
print("detected", n, t)
yaml.safe_dump({"schema_version": 1, "vendor": "NVIDIA (Ray built-in manager)", "product": f"{t} via NvidiaGPUAcceleratorManager",
  "accelerator": {"manager": "ray._private.accelerators.nvidia_gpu:NvidiaGPUAcceleratorManager", "resource_name": "GPU",
                  "expected": {"devices_per_node": n, "accelerator_type": t},
                  "quantities": {"valid": [0.5, 1], "invalid": []}},
  "cluster": {"nodes": 1, "num_cpus_per_node": 4, "object_store_memory_mb": 1000}}, open(sys.argv[1], "w"), sort_keys=False)
PY
timeout 420 python3 -m pytest -p conformance.plugin -p no:cacheprovider -q -c /dev/null -rfE \
  --conformance-manifest="$OUT/nvidia.yaml" --conformance-out="$OUT/report" conformance/checks > "$OUT/log.txt" 2>&1
echo "pytest exit $?"
grep -E "passed|failed" "$OUT/log.txt" | tail -3
python3 -c "
import json; r=json.load(open('$OUT/report/report.json'))
print('tier', r['tier'], r['summary'])
for c in r['checks']:
    print(c['id'], c['outcome'], (c['reason'] or '')[:200])
"
