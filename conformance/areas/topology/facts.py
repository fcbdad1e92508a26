"""What the suite knows about one node: Ray's view and what the plugin said on that node."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NodeFacts:
    """One alive node. Ray's side comes from ray.nodes(); the plugin's side from the probe."""

    node_id: str
    address: str = ""
    resources: dict[str, float] = field(default_factory=dict)
    ray_labels: dict[str, str] = field(default_factory=dict)
    device_count: float = 0.0
    probe_error: str | None = None          # the probe did not run at all on this node
    ray_ids: list[str] | None = None         # ids Ray handed a task holding every device of the node
    ray_ids_error: str | None = None
    manager_type: str | None = None
    manager_error: str | None = None
    plugin_labels: Any = None                # what get_current_node_accelerator_labels() returned here
    plugin_labels_error: str | None = None
    description: Any = None                  # what topology.provider returned here
    description_error: str | None = None
    provider_declared: bool = False

    @property
    def has_devices(self) -> bool:
        return self.device_count > 0

    @property
    def short(self) -> str:
        return self.node_id[:8]

    @property
    def described(self) -> bool:
        """The provider ran here and returned a description (a dict)."""
        return isinstance(self.description, dict)
