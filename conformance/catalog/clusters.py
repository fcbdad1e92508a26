"""Each check's cluster shape is checklist data (`cluster:` in tiers/checklist.yaml; issues 43, 47).

The shape a check's test runs on was a `@pytest.mark.cluster(...)` on the test, so verify read it
from the check modules it had installed, whatever release a report named. As data it is bound to
its release: the run starts clusters by it (conformance.cluster.shapes.shape_of), the docs show it,
and verify reads the shapes of the report's release (conformance.signing.coverage_rule). The values
are the shapes conformance.cluster.shapes registers (the schema's enum), or `none`: the check needs
no cluster of the run. Every check of a checklist names one, or, a release from before the field,
none does.
"""
from __future__ import annotations

from typing import Iterable, Protocol

from conformance.errors import UserError

NO_CLUSTER = "none"   # a check's `cluster:` when it needs no cluster of the run (its probes run in processes of their own)


class ShapedCheck(Protocol):
    """What these read of a check (catalog.data.Check): catalog.data calls them while it parses, so
    they name the two fields they read, not the class above them (no import back, not even a hint)."""

    @property
    def id(self) -> str: ...

    @property
    def cluster(self) -> str | None: ...


def names_clusters(checks: Iterable[ShapedCheck]) -> bool:
    """Whether the checks name their cluster shapes (a release from before the field does not)."""
    found = [c.cluster is not None for c in checks]
    return bool(found) and all(found)


def cluster_required(checks: Iterable[ShapedCheck]) -> None:
    """Raise a one-line UserError for the first check that names no cluster shape."""
    for c in checks:
        if c.cluster is None:
            raise UserError(f"checklist: {c.id}.cluster: missing; name the cluster shape its test runs on, "
                            f"or {NO_CLUSTER} (schemas/checklist.schema.json lists them)")
