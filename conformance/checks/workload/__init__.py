"""The workload area's checks: each takes one context, `workload_ctx` (conformance.areas.workload.fixtures):
a WorkloadCtx over the transport, or a DataParallelCtx over the collective backend (a check tagged
`collective-backend`)."""
