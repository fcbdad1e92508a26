"""Collective area, the class itself (no cluster): the BaseGroup contract Ray calls (CC-001) and
check_backend_availability() on the manifest's other hosts (CC-002).

Ray 2.60 (`ray.util.collective`): registration does not look at the class beyond issubclass, so a
missing op or a constructor Ray cannot call surfaces only when a group is built, inside an actor.
These checks find it before any cluster starts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from conformance.areas.collective.contract import contract_facts, group_class
from conformance.collective.config import CollectiveConfig
from conformance.collective.context import CollectiveCtx

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest


@pytest.mark.check("CC-001")
def test_group_class_meets_the_contract_ray_calls(collective_ctx: CollectiveCtx) -> None:
    config = collective_ctx.config
    cls = group_class(config, collective_ctx.manifest)
    collective_ctx.metrics["class"] = f"{cls.__module__}.{cls.__qualname__}"
    collective_ctx.decide(contract=contract_facts(cls, config.builtin))


_PROBE = """
import importlib, json, sys
sys.path[:0] = {path!r}
try:
    if {ref!r}:
        module, _, attr = {ref!r}.partition(":")
        cls = importlib.import_module(module)
        for part in attr.split("."):
            cls = getattr(cls, part)
    else:
        from ray.util.collective.backend_registry import _global_registry
        cls = _global_registry.get({name!r})
    v = cls.check_backend_availability()
    print(json.dumps({{"value": v if isinstance(v, bool) else repr(v), "bool": isinstance(v, bool)}}))
except Exception as exc:
    text = str(exc).splitlines()[0] if str(exc) else ""
    print(json.dumps({{"raised": f"{{type(exc).__name__}}: {{text}}"}}))
"""


def availability_on(config: CollectiveConfig, manifest: Manifest, envs: dict[str, dict[str, str]],
                    timeout_s: float) -> dict[str, dict[str, Any]]:
    """check_backend_availability() in one fresh process per host kind, all at once (vendors cache
    what they detect at import, so each host needs its own process)."""
    code = _PROBE.format(path=manifest.python_path, ref=config.group_class or "", name=config.backend)
    procs = {kind: subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env}, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE) for kind, env in envs.items()}
    out: dict[str, dict[str, Any]] = {}
    for kind, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out[kind] = {"raised": f"no answer within {timeout_s:.0f}s"}
            continue
        last = (stdout.strip().splitlines() or [""])[-1]
        try:
            out[kind] = json.loads(last)
        except ValueError:
            out[kind] = {"raised": f"the probe process failed: {(stderr.strip().splitlines() or ['?'])[-1][:200]}"}
    return out


@pytest.mark.check("CC-002")
def test_availability_is_false_exactly_where_the_library_or_device_is_missing(collective_ctx: CollectiveCtx) -> None:
    config, manifest = collective_ctx.config, collective_ctx.manifest
    bound = float(collective_ctx.param("probe_bound_s"))
    envs = {"manifest host": manifest.accelerator_env}
    envs.update({kind: manifest.host_overlay(kind) for kind in collective_ctx.param("unavailable_on")
                 if manifest.host_overlay(kind) is not None})
    seen = availability_on(config, manifest, envs, bound)
    collective_ctx.decide(detail=" (check_backend_availability())", hosts=len(seen), answers=seen)
