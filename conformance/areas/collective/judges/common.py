"""What the collective area's judges share: the table they register in, the hook job's shape, the
slack of a time the driver reads after its wait, and the manifest's collective block as they read it.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.report.judges import JudgeTable

JUDGES = JudgeTable()

HOOK_MEMBERS = 2      # the hook job's members (conformance.areas.collective.hook_driver)
HOOK_ELEMENTS = 4     # the elements of its allreduce
LEAK_MEMBERS = 2      # CC-008: the members its create/allreduce/destroy cycles run in (memory_left_behind)


# the survivors' error times are taken after ray.wait returns: a loaded driver may read one a little
# past the bound it waited with, which the live check counted as in time
_WAIT_SLACK_S = 2.0   # knob: the driver reads the times after ray.wait returns (see above)


def _block(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    block = manifest.get("collective") if isinstance(manifest, Mapping) else None
    return block if isinstance(block, Mapping) else {}


def _claimed(manifest: Mapping[str, Any], key: str, default: tuple[str, ...]) -> list[str]:
    value = _block(manifest).get(key)
    return [str(v) for v in value] if isinstance(value, list) and value else list(default)
