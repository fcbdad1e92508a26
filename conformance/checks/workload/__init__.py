"""The workload area's checks: each takes one WorkloadCtx, `workload_ctx` (conformance.areas.workload.fixtures)."""
