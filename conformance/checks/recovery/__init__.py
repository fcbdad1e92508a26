"""Recovery checks (FR-*): device, node and transfer failure recovery."""
