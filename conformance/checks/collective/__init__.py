"""The collective area's checks: each takes one CollectiveCtx, `collective_ctx` (conformance.areas.collective.fixtures)."""
