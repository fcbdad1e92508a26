"""The workload judges' subtle rules: which manifest asks for WL-001's broadcast rounds, memory
probes dropped, device types declared but not run, WL-002's reference recomputed for the
workers that ran. Pure: no Ray."""
from __future__ import annotations

import copy
from typing import Any

from judged import MANIFEST, manifest
from judged.workload import WL001, WL002, WL003, data_parallel, edit

from conformance.report import judges
from signing_support import suite


def judged(cid: str, metrics: Any, man: Any = None) -> judges.Verdict:
    return judges.judge(suite().checklist.by_id()[cid], metrics, MANIFEST if man is None else man)


def test_broadcast_rounds_are_asked_only_where_the_collective_claims_broadcast_for_a_state_dtype() -> None:
    without = edit(WL001, "devices.cpu.broadcast_round_seconds", [])
    assert judged("WL-001", without).outcome == "fail"            # GLOO claims every op and float32
    no_block = manifest()
    del no_block["collective"]
    assert judged("WL-001", without, no_block).outcome == "pass"   # no collective declared
    no_broadcast = copy.deepcopy(MANIFEST)
    no_broadcast["collective"]["ops"] = ["allreduce"]
    assert judged("WL-001", without, no_broadcast).outcome == "pass"
    other_dtype = copy.deepcopy(MANIFEST)
    other_dtype["collective"]["dtypes"] = ["float64"]               # none of the state's dtypes
    assert judged("WL-001", without, other_dtype).outcome == "pass"


def test_a_device_figure_read_in_some_probes_only_fails() -> None:
    m = copy.deepcopy(WL003)
    for i, snap in enumerate(m["devices"]["cpu"]["memory"]["stage 1"]):
        snap["device_used_bytes"] = 1000 if i != 3 else None
    assert "device memory was read in 5 of 6" in str(judged("WL-003", m).reason)


def test_every_transport_device_type_is_run() -> None:
    two = copy.deepcopy(MANIFEST)
    two["transport"]["devices"] = ["cpu", "npu"]
    assert judged("WL-001", WL001, two).outcome == "fail"
    on_npu = copy.deepcopy(WL001["devices"]["cpu"])
    for snaps in on_npu["memory"].values():
        for snap in snaps:
            snap["device_used_bytes"] = 4096
    both = {"devices": {"cpu": WL001["devices"]["cpu"], "npu": on_npu}}
    assert judged("WL-001", both, two).outcome == "pass"
    # the device's memory never read: missing evidence, never "not measured"
    assert judged("WL-001", {"devices": {"cpu": WL001["devices"]["cpu"], "npu": WL001["devices"]["cpu"]}},
                  two).outcome == "error"


def test_data_parallel_reference_is_recomputed_for_the_workers_that_ran() -> None:
    # on the vendor's own cluster the units may run out (2..workers); on one the suite started from
    # the manifest the workers are the params' (or as many as its units give)
    two_ranks = {"devices": {"cpu": data_parallel(workers=2)}}
    assert judges.judge(suite().checklist.by_id()["WL-002"], two_ranks, MANIFEST, remote=True).outcome == "pass"
    assert judged("WL-002", two_ranks).outcome == "fail"
    assert judged("WL-002", edit(WL002, "devices.cpu.workers", 2)).outcome == "fail"   # digests of three ranks
    assert judged("WL-002", edit(WL002, "devices.cpu.workers", 4)).outcome == "fail"   # more than the release's
    assert judged("WL-002", WL002, manifest()).outcome == "pass"
    no_block = manifest()
    del no_block["collective"]
    assert judged("WL-002", WL002, no_block).outcome == "fail"
