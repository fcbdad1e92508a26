"""The collective area's checks (fixtures: conformance.areas.collective.fixtures)."""
