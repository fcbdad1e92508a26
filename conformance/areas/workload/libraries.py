"""Ray's libraries on the vendor's resource (WL-010..WL-013): what Ray Train, Ray Data, Ray Serve
and the dashboard's metrics do when a user hands them the manifest's `accelerator.resource_name`.

Informational: Ray 2.60 gives a vendor no plug-in point in these libraries (Train's torch device
table, Data's resource budget and the dashboard's device metrics providers are closed lists in
Ray's source; docs/ray-libraries.md cites each), so what they do with the resource is a finding
for the SIG, never a verdict on the vendor. Each scenario runs as one Ray task (the library's
driver) that the check waits on with a bound and cancels past it; the pure `*_findings`
functions turn its observations into the report's sentences.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from conformance.exc_text import first_line

# What a library scenario returns: {"workers": [view, ...], "static": {...}, "error": str | None}
Observation = dict[str, Any]

# Where Ray 2.60 decides what each library does with a device (paths under site-packages/ray/),
# recorded beside each finding (metrics.upstream) so the SIG sees where Ray needs a plug-in point.
UPSTREAM: dict[str, list[str]] = {
    "WL-010": [
        "air/_internal/device_manager/__init__.py:20 SUPPORTED_ACCELERATOR_TORCH_DEVICE_MANAGER is a closed "
        "dict (GPU, HPU, NPU, TPU); get_torch_device_manager_by_context (line 42) falls back to "
        "CPUTorchDeviceManager (line 17) for any other resource",
        "train/v2/torch/train_loop_utils.py:44 get_device() returns get_devices()[0], from that table "
        "(train/torch/train_loop_utils.py get_devices, air/_internal/torch_utils.py:8)",
        "train/torch/config.py:253 the default torch.distributed backend is nccl for GPU, tpu_dist for TPU, "
        "gloo otherwise: no vendor backend unless TorchConfig(backend=) names one",
    ],
    "WL-011": [
        "data/_internal/execution/interfaces/execution_options.py:13 ExecutionResources budgets cpu, gpu, "
        "object_store_memory and memory only: resources= reaches Ray's scheduler, not Data's budget",
        "data/dataset.py:634 map_batches: num_gpus= reserves GPU; a vendor's device only through resources=",
    ],
    "WL-012": [
        "serve/api.py: a deployment's ray_actor_options go to Ray core unchanged; Serve adds no device layer, "
        "so the replica's device comes from the vendor's AcceleratorManager (visible ids) alone",
    ],
    "WL-013": [
        "dashboard/modules/reporter/gpu_providers.py:643 GpuMetricProvider._providers = [NvidiaGpuProvider(), "
        "AmdGpuProvider()], a closed list",
        "dashboard/modules/reporter/reporter_agent.py:216 node_gpus_*/node_gram_* gauges (from that list) "
        "and tpu_* gauges (line 253, TPU's own device plugin): no gauge for another device",
    ],
}


def worker_view(env_var: str) -> dict[str, Any]:
    """What the process a library placed sees of its devices: its node, the ids Ray assigned it
    per accelerator resource, and the vendor's visible-ids variable (set by its AcceleratorManager)."""
    import ray

    rc = ray.get_runtime_context()
    return {"node_id": rc.get_node_id(), "pid": os.getpid(),
            "accelerator_ids": {k: [str(i) for i in v] for k, v in rc.get_accelerator_ids().items() if v},
            "visible": os.environ.get(env_var)}


def importable(module: str) -> str | None:
    """None when `module` imports in this environment, else the first line of why not."""
    import importlib

    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure makes the library not applicable
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return None


# ---------------------------------------------------------------------- the scenarios (in a task)
class _Collector:
    """Where each Train worker leaves its view (Train keeps only rank 0's reported metrics)."""

    def __init__(self) -> None:
        self.views: list[dict[str, Any]] = []

    def add(self, view: dict[str, Any]) -> None:
        self.views.append(view)

    def all(self) -> list[dict[str, Any]]:
        return self.views


def _train_loop(config: dict[str, Any]) -> None:
    import ray
    import ray.train.torch
    from ray.air._internal.device_manager import get_torch_device_manager_by_context

    view = worker_view(config["env_var"])
    view["torch_device"] = str(ray.train.torch.get_device())
    view["device_manager"] = type(get_torch_device_manager_by_context()).__name__
    ray.get(config["collector"].add.remote(view))


def train_scenario(resource: str, env_var: str, workers: int, fit_bound_s: float) -> Observation:
    """TorchTrainer with ScalingConfig(num_workers=workers, resources_per_worker={resource: 1}).

    fit() runs in a thread: past fit_bound_s the workers' views gathered so far are returned with
    the overrun as the error (the check then kills this process, and Train's actors with it)."""
    import threading

    import ray
    from ray.air._internal import device_manager
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    static = {"torch_device_table": sorted(device_manager.SUPPORTED_ACCELERATOR_TORCH_DEVICE_MANAGER)}
    collector_cls: Any = ray.remote(num_cpus=0)(_Collector)
    collector = collector_cls.remote()
    storage = tempfile.mkdtemp(prefix="rc-wl010-")
    trainer = TorchTrainer(_train_loop, train_loop_config={"env_var": env_var, "collector": collector},
                           scaling_config=ScalingConfig(num_workers=workers, resources_per_worker={resource: 1}),
                           run_config=RunConfig(storage_path=storage, name="rc-wl010"))
    errors: list[str] = []

    def fit() -> None:
        try:
            trainer.fit()
        except Exception as exc:  # noqa: BLE001 - what Train does with the resource is the finding
            errors.append(first_line(exc))

    thread = threading.Thread(target=fit, name="rc-wl010-fit", daemon=True)
    thread.start()
    thread.join(fit_bound_s)
    if thread.is_alive():
        errors.append(f"fit() did not return within {fit_bound_s:g}s")
    return {"workers": ray.get(collector.all.remote()), "static": static, "error": "; ".join(errors) or None}


class ScenarioHost:
    """The process a library scenario runs in (an actor, so the check can end it, and every actor
    the library started from it, by killing it)."""

    def run(self, scenario: Any, *args: Any) -> Observation:
        result: Observation = scenario(*args)
        return result


def _data_batch(batch: dict[str, Any], env_var: str) -> dict[str, Any]:
    import json

    view = worker_view(env_var)
    return {"view": [json.dumps(view, sort_keys=True)] * len(batch["id"])}


def data_scenario(resource: str, env_var: str, blocks: int) -> Observation:
    """ray.data.range(blocks).map_batches(fn, resources={resource: 1}): one task per block."""
    import json

    import ray
    import ray.data
    from ray.data._internal.execution.interfaces.execution_options import ExecutionResources

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    static = {"budgeted": [s.lstrip("_") for s in ExecutionResources.__slots__]}
    error = None
    views: list[dict[str, Any]] = []
    try:
        fn: Any = _data_batch   # Data's stubs know only one-argument batch functions; fn_kwargs adds env_var
        rows = ray.data.range(blocks, override_num_blocks=blocks).map_batches(
            fn, fn_kwargs={"env_var": env_var}, batch_size=1, resources={resource: 1}).take_all()
        views = [json.loads(v) for v in dict.fromkeys(r["view"] for r in rows)]
    except Exception as exc:  # noqa: BLE001 - what Data does with the resource is the finding
        error = first_line(exc)
    return {"workers": views, "static": static, "error": error}


class _ServeProbe:
    """A Serve replica that answers with what it sees."""

    def __init__(self, env_var: str) -> None:
        self.env_var = env_var

    def __call__(self) -> dict[str, Any]:
        return worker_view(self.env_var)


SERVE_APP = "rc-wl012"


def serve_scenario(resource: str, env_var: str, replicas: int, answer_s: float) -> Observation:
    """One deployment with ray_actor_options={"resources": {resource: 1}}, no HTTP proxy; each
    replica answers once; Serve is shut down after."""
    from ray import serve

    error = None
    views: list[dict[str, Any]] = []
    try:
        serve.start(proxy_location="Disabled")
        deployment: Any = serve.deployment(_ServeProbe, name="probe", num_replicas=replicas,
                                           ray_actor_options={"num_cpus": 0, "resources": {resource: 1}})
        app = deployment.bind(env_var)
        handle = serve.run(app, name=SERVE_APP, route_prefix=None)
        seen: dict[str, dict[str, Any]] = {}
        for _ in range(4 * replicas):
            view = handle.remote().result(timeout_s=answer_s)
            seen[repr(sorted(view.items()))] = view
        views = list(seen.values())
    except Exception as exc:  # noqa: BLE001 - what Serve does with the resource is the finding
        error = first_line(exc)
    finally:
        serve.shutdown()
    return {"workers": views, "static": {}, "error": error}


def metrics_scenario(resource: str) -> Observation:
    """Runs on a node offering the resource: which device metrics providers the dashboard's
    reporter agent has there, which one it picks, and how many devices it reports."""
    import ray
    from ray.dashboard.modules.reporter.gpu_providers import GpuMetricProvider

    provider = GpuMetricProvider()
    provider.initialize()
    # the private list itself: that it is a closed list is the finding
    view = {"node_id": ray.get_runtime_context().get_node_id(),
            "providers": [type(p).__name__ for p in provider._providers],
            "picked": provider.get_provider_name(), "devices_reported": len(provider.get_gpu_usage())}
    return {"workers": [view], "static": {}, "error": None}


# ---------------------------------------------------------------------- findings (pure)
def placement_findings(what: str, resource: str, views: list[dict[str, Any]], vendor_nodes: list[str],
                       env_var: str) -> list[str]:
    """Where the library put its workers and what each was given of the vendor's devices."""
    if not views:
        return [f"{what}: no worker reported back"]
    on_vendor = sum(1 for v in views if v.get("node_id") in vendor_nodes)
    given = sum(1 for v in views if (v.get("accelerator_ids") or {}).get(resource))
    visible = sum(1 for v in views if v.get("visible"))
    return [f"{what}: {on_vendor} of {len(views)} worker(s) ran on a node offering {resource}",
            f"{what}: {given} of {len(views)} worker(s) were assigned {resource} ids by Ray "
            f"(get_accelerator_ids: {_ids(views, resource)})",
            f"{what}: {visible} of {len(views)} worker(s) saw {env_var} set by the vendor's AcceleratorManager "
            f"({', '.join(sorted({str(v.get('visible')) for v in views}))})"]


def _ids(views: list[dict[str, Any]], resource: str) -> str:
    return "; ".join(",".join((v.get("accelerator_ids") or {}).get(resource) or ["none"]) for v in views)


def train_findings(obs: Observation, resource: str, env_var: str, vendor_nodes: list[str],
                   torch_device: str | None) -> list[str]:
    views = obs.get("workers") or []
    lines = placement_findings("Train ScalingConfig(resources_per_worker)", resource, views, vendor_nodes, env_var)
    table = (obs.get("static") or {}).get("torch_device_table") or []
    devices = sorted({str(v.get("torch_device")) for v in views})
    managers = sorted({str(v.get("device_manager")) for v in views})
    lines.append(f"Train: ray.train.torch.get_device() returned {', '.join(devices) or 'nothing'} "
                 f"(device manager {', '.join(managers) or 'none'}); its torch device table knows only "
                 f"{', '.join(table)}, so {resource} {'is' if resource in table else 'is not'} in it")
    if torch_device:
        lines.append(f"Train: the manifest's torch device is {torch_device}: "
                     + ("Train's workers got it" if all(d.split(":")[0] == torch_device for d in devices) and devices
                        else "Train's workers did not get it; a training loop must pick the device itself"))
    if obs.get("error"):
        lines.append(f"Train: fit() raised {obs['error']}")
    return lines


def data_findings(obs: Observation, resource: str, env_var: str, vendor_nodes: list[str]) -> list[str]:
    lines = placement_findings("Data map_batches(resources=)", resource, obs.get("workers") or [], vendor_nodes, env_var)
    budgeted = (obs.get("static") or {}).get("budgeted") or []
    lines.append(f"Data: its execution budget (ExecutionResources) tracks {', '.join(budgeted)}: {resource} is "
                 "passed to Ray's scheduler but not budgeted; num_gpus= requests GPU only")
    if obs.get("error"):
        lines.append(f"Data: the pipeline raised {obs['error']}")
    return lines


def serve_findings(obs: Observation, resource: str, env_var: str, vendor_nodes: list[str]) -> list[str]:
    lines = placement_findings("Serve ray_actor_options resources", resource, obs.get("workers") or [],
                               vendor_nodes, env_var)
    if obs.get("error"):
        lines.append(f"Serve: the deployment raised {obs['error']}")
    return lines


def metrics_findings(obs: Observation, resource: str) -> list[str]:
    views = obs.get("workers") or []
    if not views:
        return [f"metrics: no probe ran on a node offering {resource}"]
    v = views[0]
    picked = v.get("picked")
    return [f"metrics: the dashboard's device metrics providers are {', '.join(v.get('providers') or [])} "
            f"(and TPU's own path); on a node offering {resource} it picked "
            f"{picked or 'none'} and reported {v.get('devices_reported', 0)} device(s)",
            f"metrics: {resource}'s utilisation and memory are not among the dashboard's node metrics "
            + ("(the devices reported are the provider's, not necessarily the vendor's)" if picked else
               "(no provider is the vendor's)")]
