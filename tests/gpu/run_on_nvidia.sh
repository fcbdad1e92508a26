#!/usr/bin/env bash
# Certify Ray's own NVIDIA support on a real GPU machine with the suite: Ray's
# NvidiaGPUAcceleratorManager with Ray's NCCL, NIXL and CUDA_IPC tensor transports on `cuda`
# tensors (tests/gpu/nvidia-*.yaml), device memory read through torch.cuda. A developer tool,
# not part of CI; how to run it, and what each manifest needs: tests/gpu/README.md.
#
#   tests/gpu/run_on_nvidia.sh [--generate-only] [--only nccl,nixl,cuda-ipc]
#
# Run from anywhere; it runs the checks of this checkout. Environment:
#   OUT       where manifests, reports and logs go (default: ./gpu-out)
#   PYTHON    the interpreter with torch (default: python3)
#   WHEELS    a folder of wheels installed into /tmp/site when `ray` is not importable (a wheel
#             split in parts, NAME.whl.part.aa, .ab, ..., is joined first)
#   RAY_CONFORMANCE_GPU_DETECT   "COUNT TYPE" (e.g. "2 H200"): skip detection (the CPU-side tests)
#   RUN_TIMEOUT_S  bound of each manifest's run (default 240)
# --generate-only writes $OUT/manifests/*.yaml and $OUT/plan.txt and stops.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
PYTHON=${PYTHON:-python3}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-240}
generate_only=0
only="nccl,nixl,cuda-ipc"
while [ $# -gt 0 ]; do
  case "$1" in
    --generate-only) generate_only=1 ;;
    --only) shift; only=${1:-} ;;
    *) echo "run_on_nvidia.sh: unknown argument '$1' (expected --generate-only or --only nccl,nixl,cuda-ipc)" >&2; exit 2 ;;
  esac
  shift
done
for name in ${only//,/ }; do
  [ -f "$here/nvidia-$name.yaml" ] || { echo "run_on_nvidia.sh: --only: no manifest tests/gpu/nvidia-$name.yaml" >&2; exit 2; }
done
mkdir -p "$OUT/manifests"
export PYTHONPATH="/tmp/site:$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled

# 1. Ray (and what the manifests need) from $WHEELS when this Python lacks it.
if ! "$PYTHON" -c "import ray" 2>/dev/null; then
  [ -n "${WHEELS:-}" ] || { echo "run_on_nvidia.sh: ray is not importable and WHEELS is not set" >&2; exit 2; }
  for first in "$WHEELS"/*.whl.part.aa; do
    [ -e "$first" ] && cat "${first%.aa}".* > "/tmp/$(basename "${first%.part.aa}")"
  done
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$WHEELS"/*.whl /tmp/*.whl || exit 1
fi

# 2. Detection (Ray's manager, as Ray runs it) unless stubbed, then one manifest per transport.
if [ -z "${RAY_CONFORMANCE_GPU_DETECT:-}" ]; then
  nvidia-smi -L
  RAY_CONFORMANCE_GPU_DETECT=$("$PYTHON" -c "
from ray._private.accelerators.nvidia_gpu import NvidiaGPUAcceleratorManager as M
print(M.get_current_node_num_accelerators(), M.get_current_node_accelerator_type())") || exit 1
fi
echo "detected: $RAY_CONFORMANCE_GPU_DETECT"
"$PYTHON" - "$here" "$OUT" "$only" "$RAY_CONFORMANCE_GPU_DETECT" <<'PY' || exit 1
import importlib.util, sys
from pathlib import Path
import yaml

here, out, only, detected = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split()
count, kind = int(detected[0]), (detected[1] if len(detected) > 1 else None)
# What each transport needs beyond Ray and torch (a missing one is recorded, never run as a pass).
NEEDS = {"nccl": ["cupy"], "nixl": ["nixl"], "cuda-ipc": []}
plan = []
for name in only:
    doc = yaml.safe_load((here / f"nvidia-{name}.yaml").read_text())
    acc = doc["accelerator"]
    acc["expected"] = {"devices_per_node": count, **({"accelerator_type": kind} if kind and kind != "None" else {})}
    acc["quantities"] = {"valid": [0.5, 1] + ([2] if count >= 2 else []), "invalid": []}
    doc["product"] = doc["product"].replace("H200", kind or "GPU", 1)
    (out / "manifests" / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    missing = [m for m in NEEDS[name] if importlib.util.find_spec(m) is None]
    plan.append(f"{name} skip missing {','.join(missing)}" if missing else f"{name} run")
(out / "plan.txt").write_text("\n".join(plan) + "\n")
print("\n".join(plan))
PY
[ "$generate_only" = 1 ] && exit 0

# 3. One run per manifest: NCCL runs every area (device, topology, collective, recovery too);
#    NIXL and CUDA_IPC only the transport and performance areas.
cd "$root"
status=0
while read -r name verdict why; do
  if [ "$verdict" != run ]; then echo "== $name: not run ($verdict: $why)"; status=1; continue; fi
  checks=conformance/checks
  [ "$name" = nccl ] || checks="conformance/checks/transport conformance/checks/performance"
  echo "== $name: $checks"
  # shellcheck disable=SC2086 # $checks is a list of paths
  timeout "$RUN_TIMEOUT_S" "$PYTHON" -m pytest -p conformance.plugin -p no:cacheprovider -p no:logging -q -c /dev/null -rfE \
    --conformance-manifest="$OUT/manifests/$name.yaml" --conformance-out="$OUT/$name" $checks < /dev/null > "$OUT/$name.log" 2>&1
  echo "pytest exit $?"
  grep -E "passed|failed" "$OUT/$name.log" | tail -1
  "$PYTHON" - "$OUT/$name/report.json" <<'PY' || status=1
import json, sys
r = json.load(open(sys.argv[1]))
print("tier", r["tier"], r["summary"])
for c in r["checks"]:
    if c["outcome"] != "pass":
        print(" ", c["id"], c["outcome"], (c.get("reason") or "")[:200])
PY
done < "$OUT/plan.txt"
exit $status
