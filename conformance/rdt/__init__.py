"""The RDT harness: how every check that moves tensors with Ray Direct Transport moves them.

The transport, performance and recovery areas all transfer through it, and it imports none of
them (it is core: it may import run/, catalog/, cluster/, report/ and measure). Modules, one job
each (docs/transport.md explains the method):

* `config`       – what the manifest says about the transport, and the size knob.
* `tracing`      – the instrumenting wrapper registered in place of the vendor's manager.
* `faults`       – its fault-injecting twin (`<NAME>_RECOVERY`): armed receive faults, per process.
* `registration` – the one registration table: the transport (and, on request, its twin) once
                   per process, before any endpoint exists.
* `payloads`     – the one payload/digest scheme: deterministic payloads and byte digests.
* `endpoint`     – the one actor tensors move between (importable by workers).
* `memory`       – memory probes an endpoint reports (process RSS, host shared memory, device).
* `pool`         – starting endpoints (bounded), collective groups, health, teardown.
* `transfer`     – the bounded transfer primitive: data or an error within a bound, or a failure
                   saying where the transfer stopped.
* `stalls`       – where stalled transfers stopped (the evidence a hang's reason carries).
* `context`      – what a transport/performance check module works with (TransportContext, one
                   per run) and RdtCtx, the check context holding it (the areas subclass it).
* `fixtures`     – what the transport and performance areas' fixtures are made of (the run's
                   TransportContext under CONTEXT in the stash, per module) and `transport_setup`,
                   the one way a check gets the registered transport.
* `tables`       – the report's Transport section (markdown tables; also `bench-transport`).
* `each_device`  – the one loop a check runs on each declared device type (per-type records).
* `accelerator_rule` – the accelerator-exercised rule every judge of those records and verify
                   apply: the accelerator's type ran, or the reason is the suite's and the manifest's.
"""
