"""The BaseGroup contract Ray 2.60 calls, read off a class without running it (pure apart from
inspecting the class): CC-001's judgement, kept here so that docs and tools can ask it too."""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from conformance.collective.config import CollectiveConfig

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest

# What Ray passes to each op (collective.py wraps every tensor in a list; options by position).
OP_ARITY = {"allreduce": 2, "barrier": 1, "reduce": 2, "allgather": 3, "broadcast": 2, "reducescatter": 3,
            "send": 2, "recv": 2}


def group_class(config: CollectiveConfig, manifest: Manifest) -> type:
    if config.builtin:
        from ray.util.collective.backend_registry import _global_registry

        return _global_registry.get(config.backend)
    from conformance.catalog.manifest import import_object

    cls: type = import_object(config.group_class, field="collective.group_class", python_path=manifest.python_path)  # type: ignore[arg-type]  # not builtin: set
    return cls


# Any: the vendor's backend class (or whatever its reference names), inspected, never trusted
def contract_facts(cls: Any, builtin: bool) -> dict[str, Any]:
    """What Ray 2.60 calls, read off the class (inspecting it, never running it): CC-001's
    evidence, pure JSON, from which `facts_problems` decides."""
    from ray.util.collective.collective_group.base_collective_group import BaseGroup

    facts: dict[str, Any] = {"builtin": builtin, "base_group": isinstance(cls, type) and issubclass(cls, BaseGroup)}
    if not facts["base_group"]:
        facts["class_repr"] = repr(cls)[:200]
        return facts
    facts["abstract"] = sorted(getattr(cls, "__abstractmethods__", ()) or ())
    facts["constructor"] = None
    if not builtin:
        try:
            inspect.signature(cls.__init__).bind(None, 2, 0, "g")
        except TypeError as exc:
            facts["constructor"] = str(exc)[:200]
    ops: dict[str, str | None] = {}
    for op, arity in OP_ARITY.items():
        fn = getattr(cls, op, None)
        try:
            inspect.signature(fn).bind(None, *[object()] * arity)  # type: ignore[arg-type]  # None: the TypeError below
            ops[op] = None
        except (TypeError, ValueError) as exc:
            ops[op] = str(exc)[:200] or type(exc).__name__
    facts["ops"], facts["ops_read"] = ops, len(ops)
    raw = inspect.getattr_static(cls, "check_backend_availability", None)
    facts["availability_classmethod"] = isinstance(raw, (classmethod, staticmethod))
    return facts


def facts_problems(facts: object) -> list[str]:
    """What Ray 2.60 would trip over in a class with these facts (pure: CC-001's judge and the
    live check both decide by it). Facts that do not say (an op not read, a field missing) are a
    problem, never a pass."""
    if not isinstance(facts, dict):
        return ["no contract facts were recorded"]
    if facts.get("base_group") is not True:
        return [f"{facts.get('class_repr', 'the class')} is not a BaseGroup subclass (register_collective_backend "
                "raises TypeError)"]
    problems = []
    missing = facts.get("abstract")
    if not isinstance(missing, list):
        problems.append("the class's abstract members were not read")
    elif missing:
        problems.append(f"abstract member(s) not implemented: {', '.join(map(str, missing))} (group creation raises "
                        "TypeError)")
    if "constructor" not in facts:
        problems.append("the constructor's signature was not read")
    elif facts["constructor"] is not None:
        problems.append(f"the constructor cannot be called as Ray calls it, (world_size, rank, group_name): "
                        f"{facts['constructor']}")
    read = facts.get("ops")
    ops: dict[str, Any] = read if isinstance(read, dict) else {}
    for op, arity in OP_ARITY.items():
        if op not in ops:
            problems.append(f"{op}: its signature was not read")
        elif ops[op] is not None:
            problems.append(f"{op} cannot take the {arity} positional argument(s) Ray passes: {ops[op]}")
    if facts.get("availability_classmethod") is not True:
        problems.append("check_backend_availability is not a classmethod (Ray calls it on the class)")
    return problems


def contract_problems(cls: type, builtin: bool) -> list[str]:
    """What Ray 2.60 would trip over in this class (pure apart from inspecting it)."""
    return facts_problems(contract_facts(cls, builtin))
