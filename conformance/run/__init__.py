"""One conformance run inside pytest: the session and its hooks, per-run state, fixtures, timeouts and the preflight."""
