"""Unicode data for comparing names the way people read them (conformance.identity)."""
