"""Held-out red-team attacks on landed main: each is one dishonest vendor's edit of a real signed-able
report (the 2-node simulated certification). Each edit keeps every derived field consistent
(harness.refresh: tier, tiers, summary, capabilities, next steps; report.md re-rendered; junit.xml
re-synced), is re-signed with the vendor's own key (bound to the vendor in a keyring) and verified.

Naming: <area>_<what>. `models` says what defect the edit hides. Run:
  .venv/bin/python redteam/harness.py SRC_DIR [NAME ...]
"""
from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path
from typing import Any

from harness import Attack, find

ATTACKS: dict[str, Attack] = {}


def attack(name: str, models: str, **kw: Any):
    def wrap(fn):
        ATTACKS[name] = Attack(name, models, fn, **kw)
        return fn
    return wrap


def M(r: dict[str, Any], cid: str) -> dict[str, Any]:
    return find(r, cid)["metrics"]


def set_outcome(r: dict[str, Any], cid: str, outcome: str, reason: str | None = None) -> None:
    c = find(r, cid)
    c["outcome"] = outcome
    c["reason"] = reason
    c.pop("waiver", None)


# ------------------------------------------------------------------------------------------- control
@attack("A00_baseline", "control: the unmodified report, re-derived, re-rendered and re-signed by the vendor")
def a00(r):
    pass


# ------------------------------------------------------------------------------------------- outcome flips
@attack("G01_flip_fail_keep_failing_evidence",
        "a DP-006 node advertises 3 of 4 devices (broken), outcome left pass")
def g01(r):
    m = M(r, "DP-006")
    k = sorted(m["device_counts"])[0]
    m["device_counts"][k] = 3.0


@attack("G02_waive_unlisted", "a failing MUST check (TR-001) marked waived citing an invented waiver")
def g02(r):
    c = find(r, "TR-001")
    c["outcome"] = "waived"
    c["waiver"] = {"check": "TR-001", "issue": "https://example.com/issue/1", "reason": "known", "expires": "2027-12-31",
                   "blocks_tier": None, "original_outcome": "fail"}
    c["metrics"]["wrong"] = c["metrics"].get("wrong", 0) + 1
    first = c["metrics"]["devices"][0]
    c["metrics"][first]["wrong"] = c["metrics"][first].get("wrong", 0) + 1


@attack("G03_not_applicable_must", "a MUST recovery check whose plugin fails (FR-007 node death) claimed not_applicable")
def g03(r):
    c = find(r, "FR-007")
    c["outcome"] = "not_applicable"
    c["reason"] = "not applicable: the cluster cannot lose a node"
    c["metrics"] = {}


@attack("G04_not_applicable_transport_core", "TR-004 (large tensor bit-exact) failed; claimed not_applicable")
def g04(r):
    c = find(r, "TR-004")
    c["outcome"] = "not_applicable"
    c["reason"] = "not applicable: the device memory is too small for the release's largest payload"
    c["metrics"] = {}


@attack("G05_skip_check", "TR-020 failed; claimed skip")
def g05(r):
    c = find(r, "TR-020")
    c["outcome"] = "skip"
    c["reason"] = "skipped"
    c["metrics"] = {}


@attack("G06_drop_check", "CC-009 failed; its entry removed from the report")
def g06(r):
    r["checks"] = [c for c in r["checks"] if c["id"] != "CC-009"]


@attack("G07_duplicate_check", "a second, passing entry for a check appended (a reader keeps one, a page shows the other)")
def g07(r):
    c = copy.deepcopy(find(r, "PF-002"))
    r["checks"].append(c)


@attack("G08_reorder_checks", "checks reordered (areas interleaved): harmless or not?")
def g08(r):
    r["checks"] = list(reversed(r["checks"]))


@attack("G09_interrupted_cleared", "an interrupted run presented as whole: interrupted true -> false")
def g09(r):
    r["interrupted"] = True
    r["interrupted_reason"] = "SIGTERM"
    r["interrupted"] = False


@attack("G11_k_filter_hidden", "control: a -k argument in selection.args (a narrowed run) must be refused")
def g11(r):
    r["selection"]["args"] = list(r["selection"]["args"]) + ["-k", "not FR"]


@attack("G12_window_shrunk", "started_at moved later so the run window is smaller than the checks' durations")
def g12(r):
    from datetime import datetime, timedelta
    f = datetime.fromisoformat(r["finished_at"])
    r["started_at"] = (f - timedelta(seconds=60)).isoformat()
    r["duration_s"] = 60.0


@attack("G13_future_finished", "finished_at a day in the future (waiver expiry kept alive)")
def g13(r):
    from datetime import datetime, timedelta
    f = datetime.fromisoformat(r["finished_at"]) + timedelta(days=1)
    s = datetime.fromisoformat(r["started_at"]) + timedelta(days=1)
    r["finished_at"], r["started_at"] = f.isoformat(), s.isoformat()


@attack("G14_backdated", "the whole run backdated a year (before the release was published)")
def g14(r):
    from datetime import datetime, timedelta
    for k in ("started_at", "finished_at"):
        r[k] = (datetime.fromisoformat(r[k]) - timedelta(days=365)).isoformat()


@attack("G15_ray_version_outside", "environment.ray claimed 2.60.0 while the run used an uncertified 2.99.0 (edit to 2.99.0 to test, control)")
def g15(r):
    r["environment"]["ray"] = "2.99.0"


@attack("G16_ray_prerelease", "environment.ray a pre-release / dev build presented as release: '2.60.0rc1'")
def g16(r):
    r["environment"]["ray"] = r["environment"]["ray"] + "rc1"


@attack("G17_params_laxer", "PF-002's recorded params laxer than the release's (min_link_bandwidth_fraction 0.01)")
def g17(r):
    find(r, "PF-002")["params"]["min_link_bandwidth_fraction"] = 0.01


@attack("G18_suite_version_downgrade", "suite.version claims the previous release 0.1.0+data.17 (its digests), same day")
def g18(r):
    import yaml
    from conformance.catalog import data, datafiles
    rel = yaml.safe_load((datafiles.data_root() / "tiers" / "releases.yaml").read_text())["releases"]["0.1.0+data.17"]
    r["suite"]["version"] = "0.1.0+data.17"
    for k in ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256"):
        if k in rel:
            r["suite"][k] = rel[k]


@attack("G19_manifest_edited_sha_kept", "the embedded manifest's nominal link lowered, manifest_sha256 left as the run's")
def g19(r):
    r["manifest"]["transport"].setdefault("expected", {})["link_bandwidth_gbps"] = 0.1


@attack("G20_shards_forged", "a single run claims to be a merge: selection.shards lists shards that are not there")
def g20(r):
    r["selection"]["shards"] = [{"shard": "1-of-2", "report_sha256": "0" * 64, "started_at": r["started_at"],
                                 "finished_at": r["finished_at"]}]


@attack("G21_cluster_nodes_three", "claims a 3-node certification of a 2-node run (cluster.nodes, shape, manifest)")
def g21(r):
    r["cluster"]["nodes"] = 3
    r["manifest"]["cluster"]["nodes"] = 3
    if r.get("shape"):
        r["shape"]["nodes"] = 3


@attack("G22_waiver_extended", "a real waiver's expiry (report copy) extended past the release's")
def g22(r):
    w = [c for c in r["checks"] if c["outcome"] == "waived"]
    if not w:
        raise RuntimeError("no waived check in this report")
    w[0]["waiver"]["expires"] = "2099-12-31"
    w[0]["waiver"]["blocks_tier"] = None


@attack("G23_waived_to_pass", "the waived check (its plugin fails) claimed pass, failing evidence untouched")
def g23(r):
    w = [c for c in r["checks"] if c["outcome"] == "waived"]
    if not w:
        raise RuntimeError("no waived check in this report")
    w[0]["outcome"] = "pass"
    w[0].pop("waiver", None)
    w[0]["reason"] = None


# ------------------------------------------------------------------------------------------- device
@attack("D01_drop_bad_node_counts", "DP-006: one node advertises 3 of 4 devices; that node dropped from device_counts")
def d01(r):
    m = M(r, "DP-006")
    k = sorted(m["device_counts"])[0]
    del m["device_counts"][k]


@attack("D02_concurrent_ids_thinned", "DP-009: two concurrent actors on a node got the same id; one actor's record dropped")
def d02(r):
    m = M(r, "DP-009")
    k = sorted(m["ids_by_node"])[0]
    m["ids_by_node"][k] = m["ids_by_node"][k][:-1]
    m["devices_by_node"][k] = float(len(m["ids_by_node"][k]))


@attack("D03_concurrent_ids_one_node", "DP-009: the second node's actors never ran; node dropped from ids_by_node and devices_by_node")
def d03(r):
    m = M(r, "DP-009")
    k = sorted(m["ids_by_node"])[0]
    del m["ids_by_node"][k]
    del m["devices_by_node"][k]


@attack("D04_tasks_thinned", "DP-008: tasks that failed dropped from the record (fewer tasks than the release's)")
def d04(r):
    m = M(r, "DP-008")
    if isinstance(m.get("tasks"), list):
        m["tasks"] = m["tasks"][:1]
    m["tasks_run"] = 1


@attack("D05_quantity_dropped", "DP-013: a declared valid quantity (2) failed; dropped from the probe and the live record")
def d05(r):
    m = M(r, "DP-013")
    for where in (m.get("ran"), m.get("probe", {}).get("validate")):
        if isinstance(where, dict):
            for k in list(where):
                if k.startswith("2"):
                    del where[k]


@attack("D06_quantity_dropped_from_manifest", "DP-013: quantity 2 fails; removed from the embedded manifest's quantities and evidence")
def d06(r):
    d05(r)
    r["manifest"]["accelerator"]["quantities"]["valid"] = [q for q in r["manifest"]["accelerator"]["quantities"]["valid"] if q != 2]


@attack("D07_fault_kind_dropped", "DP-018: detection under one fault crashes the node; that fault's probe dropped")
def d07(r):
    m = M(r, "DP-018")
    for key in ("faults", "probes"):
        v = m.get(key)
        if isinstance(v, dict) and len(v) > 1:
            del v[sorted(v)[-1]]
        elif isinstance(v, list) and len(v) > 1:
            m[key] = v[:-1]


@attack("D08_host_overlay_dropped", "DP-018/DP-017: the manifest's unknown_device host overlay (fails) removed from the manifest")
def d08(r):
    r["manifest"]["accelerator"]["hosts"].pop("unknown_device", None)


@attack("D09_type_on_one_node", "DP-007: one node advertises another accelerator type; that node dropped from node_types")
def d09(r):
    m = M(r, "DP-007")
    nt = m.get("node_types")
    if isinstance(nt, dict):
        del nt[sorted(nt)[0]]
    elif isinstance(nt, list):
        m["node_types"] = nt[:1]


# ------------------------------------------------------------------------------------------- topology
@attack("T01_node_dropped", "TL-001: one node lacks the type label; that node dropped from the record")
def t01(r):
    m = M(r, "TL-001")
    nodes = m["nodes"]
    if isinstance(nodes, list):
        m["nodes"] = nodes[:1]
    else:
        del nodes[sorted(nodes)[-1]]


@attack("T02_selector_probe_dropped", "TL-009: a selector placed work on a non-matching node; its probe and submission dropped")
def t02(r):
    m = M(r, "TL-009")
    for key in ("probes", "submitted"):
        v = m.get(key)
        if isinstance(v, list) and len(v) > 1:
            m[key] = v[:-1]
        elif isinstance(v, dict) and len(v) > 1:
            del v[sorted(v)[-1]]


@attack("T03_expected_domains_dropped", "TL-006/008: the plugin publishes no rack label; 'rack' removed from the manifest's expected domains")
def t03(r):
    r["manifest"]["topology"]["expected"]["domains"] = [d for d in r["manifest"]["topology"]["expected"]["domains"]
                                                        if d != "rack"]
    if r.get("shape") and isinstance(r["shape"].get("domain_labels"), list):
        r["shape"]["domain_labels"] = [d for d in r["shape"]["domain_labels"] if "rack" not in d]


@attack("T04_packing_host_pending", "TL-014: STRICT_PACK never placed the packed group (plugin's labels wrong); recorded as the host's "
        "pending work (host_pending) with the outcome left pass")
def t04(r):
    m = M(r, "TL-014")
    m["packed"] = {"devices": m["packed"]["devices"], "host_pending": "placement group not ready within 3.0 s", "ready": False}


@attack("T05_provider_removed", "topology provider describes nothing sane: topology.provider removed from the manifest (TL-004..008 then?)")
def t05(r):
    r["manifest"]["topology"].pop("provider", None)


# ------------------------------------------------------------------------------------------- transport
def _hide_type(r, cid, dev="simacc", why="ValueError: the device cannot hold this payload"):
    m = M(r, cid)
    if dev not in m.get("devices", []):
        raise RuntimeError(f"{cid} did not exercise {dev}")
    m["devices"] = [d for d in m["devices"] if d != dev]
    sub = m.pop(dev, None)
    m.setdefault("not_applicable_on", {})[dev] = why
    for k in ("cases", "wrong", "transfers", "freed_objects", "step_count"):
        if k in m and isinstance(sub, dict) and k in sub and isinstance(m[k], (int, float)):
            m[k] = m[k] - sub[k]
    if isinstance(m.get("scenarios"), dict):
        m["scenarios"] = {k: v for k, v in m["scenarios"].items() if not k.endswith(f"on {dev}")}
    find(r, cid)["reason"] = f"passed on {', '.join(m['devices'])}; not applicable on {dev}: {why}"


@attack("X01_device_type_not_applicable", "TR-001: every dtype fails on the accelerator; the simacc record replaced by 'not applicable on simacc' (cpu kept)")
def x01(r):
    _hide_type(r, "TR-001")


@attack("X02_all_TR_on_cpu_only", "the whole transport broken on the accelerator: TR-001..TR-020 each 'not applicable on simacc'")
def x02(r):
    for c in r["checks"]:
        if c["id"].startswith("TR-") and "simacc" in c.get("metrics", {}).get("devices", []):
            _hide_type(r, c["id"])


@attack("X03_dtype_declared_unsupported", "TR-001: complex64 (not a core dtype) arrives corrupt on simacc; recorded 'unsupported by device' with a probe-form error")
def x03(r):
    m = M(r, "TR-001")
    s = m["simacc"]
    dt = "complex64" if "complex64" in s["dtypes"] else s["dtypes"][-1]
    s["dtypes"] = [d for d in s["dtypes"] if d != dt]
    s.setdefault("unsupported_by_device", {})[dt] = f"TypeError: {dt} is not supported on simacc"
    per = len(s["shapes"])
    s["cases"] -= per
    m["cases"] -= per


@attack("X04_current_device_not_run", "TR-005: received tensors land on the wrong device of a 2-device actor; current_device replaced by not_run")
def x04(r):
    s = M(r, "TR-005")["simacc"]
    s["current_device"] = {"not_run": "the node offers one device to an actor"}


@attack("X05_device_memory_series_dropped", "TR-013: the accelerator leaks device memory; both device_used_bytes series dropped")
def x05(r):
    g = M(r, "TR-013")["growth_per_round_bytes"]
    for k in list(g):
        if k.endswith("device_used_bytes"):
            del g[k]


@attack("X06_leak_last_rounds", "TR-013: the destination keeps 1.5 rounds' allowance in each of the last two rounds (a leak that starts late; control)")
def x06(r):
    m = M(r, "TR-013")
    p = find(r, "TR-013")["params"]
    g = m["growth_per_round_bytes"]
    k = next(k for k in g if k.endswith("destination.held_bytes"))
    n = len(g[k])
    budget = p["max_growth_fraction_of_round"] * m["payload_bytes"] * m["transfers_per_round"]
    g[k] = [0] * (n - 2) + [int(budget * 1.5)] * 2


@attack("X06b_leak_last_round_only", "TR-013: the destination keeps 3 rounds' allowance in the last round only (excused as 'a round that may still hold its buffers')")
def x06b(r):
    m = M(r, "TR-013")
    p = find(r, "TR-013")["params"]
    g = m["growth_per_round_bytes"]
    k = next(k for k in g if k.endswith("destination.held_bytes"))
    n = len(g[k])
    budget = p["max_growth_fraction_of_round"] * m["payload_bytes"] * m["transfers_per_round"]
    g[k] = [0] * (n - 1) + [int(budget * 3)]


@attack("X07_wave_bound_stretched", "TR-019: 100 concurrent transfers took 5x all_bound_s; all_bound_s recorded stretched to cover it (idle host)")
def x07(r):
    for d in M(r, "TR-019")["devices"]:
        s = M(r, "TR-019")[d]
        bound = find(r, "TR-019")["params"]["all_bound_s"]
        s["all_bound_s"] = bound * 8
        s["all_done_s"] = bound * 7.5
        s["scenario"]["elapsed_s"] = s["scenario"]["elapsed_s"]   # the scenario's own time unchanged


@attack("X08_step_bound_raised", "TR-020: a fail-fast step (fail_fast_s) took 10x; its recorded bound raised to step_bound_s")
def x08(r):
    s = M(r, "TR-020")["simacc"]
    p = find(r, "TR-020")["params"]
    st = next(x for x in s["steps"] if x.get("step", "").startswith("a receiver without the transport"))
    st["bound_s"] = p["step_bound_s"]
    st["took_s"] = p["step_bound_s"] * 0.9
    s["plain_receiver_s"] = min(s.get("plain_receiver_s", 0), p["fail_fast_s"])


@attack("X09_query_latency_max_lowered", "TR-014: actor_has_tensor_transport answers in 10x max_answer_s on simacc (its per-call "
        "latencies_s show it); only the summary figure actor_has_transport_max_latency_s kept low")
def x09(r):
    m = M(r, "TR-014")
    p = find(r, "TR-014")["params"]
    m["simacc"]["latencies_s"] = [p["max_answer_s"] * 10] * len(m["simacc"]["latencies_s"])


@attack("X10_cross_node_same_node", "TR-006: both endpoints ran on one node (no cross-node path); node ids relabelled distinct")
def x10(r):
    for d in M(r, "TR-006")["devices"]:
        s = M(r, "TR-006")[d]
        s["nodes"] = [s["nodes"][0], s["nodes"][0][:-1] + ("x" if s["nodes"][0][-1] != "x" else "y")]


# ------------------------------------------------------------------------------------------- performance
def _scale(values, f):
    return [v * f for v in values]


@attack("P01_pf002_inflated_alone", "PF-002: the accelerator reaches 5% of its declared link (fail); PF-002's trials and median x10, "
        "PF-001's sweep and PF-003 (the same measurement) left as run")
def p01(r):
    m = M(r, "PF-002")
    need = find(r, "PF-002")["params"]["min_link_bandwidth_fraction"]
    # first make it the broken plugin: the median at half the bar
    f = (need * 0.5 * m["reference_gbps"]) / m["largest_size_gbps"]
    broken = _scale(m["largest_size_trials_gbps"], f)
    # then the dishonest vendor scales PF-002 only, back over the bar
    g = (need * 3 * m["reference_gbps"]) / statistics.median(broken)
    m["largest_size_trials_gbps"] = _scale(broken, g)
    m["largest_size_gbps"] = statistics.median(m["largest_size_trials_gbps"])
    m["achieved_fraction"] = m["largest_size_gbps"] / m["reference_gbps"]


@attack("P02_pf003_store_lowered", "PF-003: the transport is slower than Ray's object store; the store's trials lowered in PF-003 "
        "only (PF-001's baseline at the same size untouched)")
def p02(r):
    m = M(r, "PF-003")
    need = find(r, "PF-003")["params"]["min_ratio_to_object_store"]
    m["object_store_trials_gbps"] = _scale(m["object_store_trials_gbps"], 0.01)
    m["object_store_gbps"] = statistics.median(m["object_store_trials_gbps"])
    m["ratio_to_object_store"] = m["rdt_gbps"] / m["object_store_gbps"]
    assert m["ratio_to_object_store"] >= need


@attack("P03_pf003_smaller_size", "PF-003: at the largest size the transport loses; the comparison moved to a smaller sweep size (bytes)")
def p03(r):
    m = M(r, "PF-003")
    pf1 = M(r, "PF-001")
    key = "64MiB" if "64MiB" in pf1["bandwidth"] else sorted(pf1["bandwidth"])[0]
    f = pf1["bandwidth"][key]
    m["bytes"] = 64 * 2**20
    m["rdt_trials_gbps"] = f["trials_gbps"]
    m["rdt_gbps"] = statistics.median(f["trials_gbps"])
    m["object_store_trials_gbps"] = f["object_store_trials_gbps"]
    m["object_store_gbps"] = statistics.median(f["object_store_trials_gbps"])
    m["ratio_to_object_store"] = m["rdt_gbps"] / m["object_store_gbps"]


@attack("P04_pf004_endpoints_thinned", "PF-004: one device's links are slow; its endpoints (both nodes) dropped from the matrix")
def p04(r):
    m = M(r, "PF-004")
    keep = [i for i, e in enumerate(m["endpoints"]) if not e.endswith(":3")]
    m["endpoints"] = [m["endpoints"][i] for i in keep]
    m["matrix_gbps"] = [[m["matrix_gbps"][i][j] for j in keep] for i in keep]
    _relink(m)


def _relink(m):
    classes = {}
    for i, row in enumerate(m["matrix_gbps"]):
        for j, v in enumerate(row):
            if i == j or v is None:
                continue
            cls = "same_node" if m["endpoints"][i].split(":")[0] == m["endpoints"][j].split(":")[0] else "cross_node"
            classes.setdefault(cls, []).append(v)
    for cls, vals in classes.items():
        med = statistics.median(vals)
        m["links"][cls] = {"median_gbps": med, "min_gbps": min(vals), "min_fraction": min(vals) / med}


@attack("P05_pf004_slow_link_raised", "PF-004: one link at 5% of its class median; the cell raised to the median, rechecked_gbps kept showing it slow")
def p05(r):
    m = M(r, "PF-004")
    m["matrix_gbps"][0][1] = m["links"]["cross_node"]["median_gbps"] * 0.05
    if isinstance(m.get("rechecked_gbps"), dict):
        m["rechecked_gbps"]["n0:0->n1:0"] = m["matrix_gbps"][0][1]
    m["matrix_gbps"][0][1] = m["links"]["cross_node"]["median_gbps"]
    _relink(m)


@attack("P06_pf001_top_cv_lied", "PF-001: the top size's trials spread past max_cv; cv and cv_met rewritten")
def p06(r):
    m = M(r, "PF-001")
    key = max(m["bandwidth"], key=lambda k: m["bandwidth"][k].get("median_gbps", 0) * 0 + len(k))
    f = m["bandwidth"]["256MiB"] if "256MiB" in m["bandwidth"] else m["bandwidth"][key]
    f["trials_gbps"] = sorted(f["trials_gbps"][:-1] + [f["trials_gbps"][-1] * 3])
    f["cv_met"] = True


@attack("P07_pf002_reference_manifest_lowered", "PF-002: reaches 5% of the true link; the manifest's declared link_bandwidth_gbps lowered "
        "to make it 50% (manifest_sha256 recomputed as the run would)")
def p07(r):
    import hashlib
    m = M(r, "PF-002")
    ref = m["largest_size_gbps"] / 0.5
    r["manifest"]["transport"]["expected"]["link_bandwidth_gbps"] = ref
    m["reference_gbps"] = ref
    m["achieved_fraction"] = m["largest_size_gbps"] / ref
    import yaml
    r["manifest_sha256"] = hashlib.sha256(yaml.safe_dump(r["manifest"]).encode()).hexdigest()


# ------------------------------------------------------------------------------------------- collective
@attack("C01_cc010_busbw_not_rows", "CC-010: the backend's bus bandwidth is 1/50 of the claim at every size but the star size; "
        "rows lowered (the measurement), busbw_gbps/host_fraction/link_fraction kept")
def c01(r):
    m = M(r, "CC-010")
    star = m.get("star_bytes")
    for row in m["rows"]:
        if row["bytes"] == star:
            continue
        for k in ("algbw_gbps", "busbw_gbps"):
            row[k] = row[k] / 50
        row["busbw_trials_gbps"] = [x / 50 for x in row["busbw_trials_gbps"]]
        if isinstance(row.get("busbw_iqr_gbps"), list):
            row["busbw_iqr_gbps"] = [x / 50 for x in row["busbw_iqr_gbps"]]


@attack("C02_cc010_star_reference_lowered", "CC-010: the backend is at 10% of the star reference (fail); star_busbw_gbps lowered "
        "(star_rows untouched) so star_fraction clears min_star_fraction")
def c02(r):
    m = M(r, "CC-010")
    need = find(r, "CC-010")["params"]["min_star_fraction"]
    # the broken backend: its op row at the star size at 10% of the star
    op_bus = m["star_busbw_gbps"] * 0.10
    for row in m["rows"]:
        if row["op"] == m["star_op"] and row["bytes"] == m["star_bytes"]:
            f = op_bus / row["busbw_gbps"]
            row["busbw_gbps"] = op_bus
            row["busbw_trials_gbps"] = [x * f for x in row["busbw_trials_gbps"]]
    m["star_op_busbw_gbps"] = op_bus
    m["star_busbw_gbps"] = op_bus / (need * 1.5)
    m["star_fraction"] = op_bus / m["star_busbw_gbps"]
    if isinstance(m.get("star_by_op"), dict) and m["star_op"] in m["star_by_op"]:
        pass   # left as measured: contradicts star_busbw_gbps


@attack("C03_cc010_nominal_dropped", "CC-010: busbw is 1% of the nominal link; nominal_link_gbps removed from the metrics (manifest keeps it)")
def c03(r):
    m = M(r, "CC-010")
    m.pop("nominal_link_gbps", None)
    m.pop("link_fraction", None)


@attack("C04_cc010_nominal_dropped_from_manifest", "CC-010: busbw far below the nominal link; nominal_link_gbps removed from the manifest and the metrics")
def c04(r):
    c03(r)
    r["manifest"]["collective"].pop("nominal_link_gbps", None)


@attack("C05_cc008_member_dropped", "CC-008: one member leaks 500 MiB over the cycles; its column dropped from held_mib and growth_mib")
def c05(r):
    mem = M(r, "CC-008")["memory"]
    mem["held_mib"] = [row[:1] for row in mem["held_mib"]]
    mem["growth_mib"] = mem["growth_mib"][:1]


@attack("C07_cc011_device_not_applicable", "CC-011: RDT over the backend fails on simacc; simacc moved to not_applicable_on")
def c07(r):
    m = M(r, "CC-011")
    if "simacc" in m.get("devices", []):
        m["devices"] = [d for d in m["devices"] if d != "simacc"] or ["cpu"]
        m["not_applicable_on"] = {"simacc": "ValueError: not supported"}
    else:
        r["manifest"]["collective"]["rdt_devices"] = ["cpu", "simacc"]
        m["not_applicable_on"] = {"simacc": "ValueError: not supported"}


@attack("C08_cc009_survivor_count_dropped", "CC-009: one survivor hung; its time dropped and survivors lowered to 1")
def c08(r):
    m = M(r, "CC-009")
    k = sorted(m["error_s"])[-1]
    del m["error_s"][k]
    m["survivors"] = len(m["error_s"])


@attack("C09_cc010_star_at_peak_size", "CC-010: compared at the op's peak size instead of star_size_mib (where the star's fixed costs flatter)")
def c09(r):
    m = M(r, "CC-010")
    rows = [x for x in m["rows"] if x["op"] == m["star_op"]]
    best = max(rows, key=lambda x: x["busbw_gbps"])
    m["star_bytes"] = best["bytes"]
    m["star_op_busbw_gbps"] = best["busbw_gbps"]
    m["star_fraction"] = best["busbw_gbps"] / m["star_busbw_gbps"]


# ------------------------------------------------------------------------------------------- workload
@attack("W01_wl002_empty_digests", "WL-002: replicas diverge (allreduce wrong on one rank); every digest recorded as '' (prefix of any digest)")
def w01(r):
    for d, ev in M(r, "WL-002")["devices"].items():
        ev["digests"] = [["" for _ in row] for row in ev["digests"]]


@attack("W02_wl002_divergent_ranks", "WL-002: rank 2 diverged from step 3; recorded as is (control: must be refused)")
def w02(r):
    for d, ev in M(r, "WL-002")["devices"].items():
        for row in ev["digests"][2:]:
            row[-1] = "deadbeefdeadbeef"


@attack("W03_wl004_killed_take_hang", "WL-004: the killed receiver's take hung; killed_take recorded 'hang' (any non-empty string)")
def w03(r):
    for d, ev in M(r, "WL-004")["devices"].items():
        ev["killed_take"] = "hang: no result within the bound"


@attack("W04_wl004_restart_never", "WL-004: Ray never restarted the killed receiver; restart_seconds a huge number")
def w04(r):
    for d, ev in M(r, "WL-004")["devices"].items():
        ev["restart_seconds"] = 1e9


@attack("W05_wl001_device_memory_none", "WL-001: device memory leaks on simacc; every device_used_bytes read set to null (as if not read)")
def w05(r):
    ev = M(r, "WL-001")["devices"].get("simacc")
    for snaps in ev["memory"].values():
        for s in snaps:
            s["device_used_bytes"] = None


@attack("W07_wl001_transport_devices_trimmed", "WL-001..004 fail on simacc: simacc removed from the manifest's transport.devices and its records dropped")
def w07(r):
    r["manifest"]["transport"]["devices"] = ["cpu"]
    for cid in ("WL-001", "WL-003", "WL-004"):
        M(r, cid)["devices"].pop("simacc", None)


# ------------------------------------------------------------------------------------------- recovery
@attack("R01_failed_scenario_dropped", "FR-012: the scenario on simacc failed (outcome fail); that scenario dropped, simacc evidence kept")
def r01(r):
    m = M(r, "FR-012")
    sc = m["scenarios"]
    k = next(k for k in sc if "simacc" in k)
    del sc[k]


@attack("R02_transfer_type_not_applicable", "FR-013: the accelerator's mid-transfer death hangs; simacc recorded not applicable")
def r02(r):
    _hide_type(r, "FR-013")


@attack("R03_scenario_bound_with_exclusion", "FR-001: the kill-then-reuse scenario took 3x its bound; bound_s raised and excluded_s "
        "claimed as Ray's machinery")
def r03(r):
    m = M(r, "FR-001")
    for name, sc in m["scenarios"].items():
        over = sc["bound_s"] * 2
        sc["elapsed_s"] = sc["bound_s"] + over
        sc.setdefault("steps_s", {})["excluded_s"] = over
        sc["bound_s"] = sc["bound_s"] + over


@attack("R04_storm_rounds_thinned", "FR-004: the storm's later rounds failed; rounds/round_s cut to the ones that passed")
def r04(r):
    m = M(r, "FR-004")
    m["rounds"] = m["rounds"][:2]
    m["round_s"] = m["round_s"][:2]
    m["restarts"] = sum(len(x["victims"]) for x in m["rounds"])


@attack("R05_fr007_survivor_dropped", "FR-007: the holder on node c was disturbed by b's death; its survivor record dropped")
def r05(r):
    s = M(r, "FR-007")["survivors"]
    s.pop("c", None)


@attack("R06_fr016_restart_role_dropped", "FR-016 (waived: the receiver never restarts): pass claimed, failing receiver role and failed scenarios removed")
def r06(r):
    c = find(r, "FR-016")
    c["outcome"], c["reason"] = "pass", None
    c.pop("waiver", None)
    m = c["metrics"]
    for d in m["devices"]:
        t = m[d]
        for k, v in list(t.get("restarts", {}).items()):
            v.update({"transferred": True})
            if v.get("old_pid") == v.get("new_pid"):
                v["new_pid"] = v["old_pid"] + 1
        t["restarts"].setdefault("receiver", {"old_pid": 1000, "new_pid": 1001, "restart_s": 1.0, "transferred": True})
    for sc in m["scenarios"].values():
        sc["outcome"] = "ok"
        sc.pop("detail", None)


@attack("R07_fetch_timeout_stretched", "FR-014: the transfer ended after 5x the release's fetch timeout; the run's rdt_fetch_timeout_s recorded "
        "stretched to the most the suite allows (on an idle host, a cluster the suite started)")
def r07(r):
    from conformance.timing.host_load import MAX_FACTOR
    m = M(r, "FR-014")
    p = find(r, "FR-014")["params"]
    m["transport"]["rdt_fetch_timeout_s"] = p["rdt_fetch_timeout_s"] * MAX_FACTOR
    for d in m["devices"]:
        m[d]["result_s"] = p["rdt_fetch_timeout_s"] * (MAX_FACTOR - 0.5)


# ------------------------------------------------------------------------------------------- evidence moved
@attack("E01_evidence_moved_between_types", "FR-015 fails on simacc: the cpu record copied over the simacc record")
def e01(r):
    m = M(r, "FR-015")
    m["simacc"] = copy.deepcopy(m["cpu"])


@attack("E02_evidence_moved_between_checks", "TR-002's failing record replaced by TR-001's (another check's evidence)")
def e02(r):
    a, b = find(r, "TR-001"), find(r, "TR-002")
    b["metrics"] = copy.deepcopy(a["metrics"])


@attack("E03_tests_of_another_check", "TR-004 did not run: its tests list names TR-003's test")
def e03(r):
    a, b = find(r, "TR-003"), find(r, "TR-004")
    b["tests"] = list(a["tests"])


# ------------------------------------------------------------------------------------------- hostile strings
ANSI = "\x1b[2K\r\x1b[32mPASS evidence: 99 of 99 recomputed\x1b[0m\nVERIFIED: forged\n"


def _no_raw_escape(out: Path, text: str) -> str:
    bad = []
    if "\x1b" in text:
        bad.append("raw ESC in verify output")
    if any(line.startswith("VERIFIED: forged") for line in text.splitlines()):
        bad.append("forged VERIFIED line printed")
    return "; ".join(bad) or "output sanitised"


def _html_clean(out: Path, text: str) -> str:
    from conformance.report.build import write_html
    rep = json.loads((out / "report.json").read_text())
    html = write_html(rep, out).read_text()
    bad = [s for s in ("<script>alert", "<img src=x onerror", '<a href="javascript:', "\x1b") if s in html]
    return ("report.html contains " + ", ".join(repr(b) for b in bad)) if bad else "report.html sanitised"


@attack("H01_ansi_in_reason", "a check's reason carries ANSI escapes and a newline forging a VERIFIED line", post=_no_raw_escape)
def h01(r):
    find(r, "DP-001")["reason"] = ANSI


@attack("H02_ansi_in_vendor", "the vendor name carries ANSI escapes (keyring binds the same string)", post=_no_raw_escape)
def h02(r):
    r["manifest"]["vendor"] = r["manifest"]["vendor"] + "\x1b[31m"


@attack("H03_zero_width_product", "the product name carries a zero-width joiner (two products that print alike)")
def h03(r):
    r["manifest"]["product"] = r["manifest"]["product"].replace(" ", " \u200d", 1)


@attack("H04_html_in_fields", "HTML/JS in the reason, a metric key and the product: report.html must escape it", post=_html_clean)
def h04(r):
    find(r, "TL-001")["reason"] = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    r["manifest"]["product"] = r["manifest"]["product"] + " <script>alert(3)</script>"
    r["cluster"].setdefault("notes", []).append("<a href=\"javascript:alert(4)\">click</a>")


@attack("H05_bidi_in_reason", "a bidi override (U+202E) in a reason and a cluster note, reversing what the reviewer reads",
        post=lambda out, text: "raw U+202E printed" if "\u202e" in text else "bidi escaped")
def h05(r):
    find(r, "DP-002")["reason"] = "ok \u202eSSAP\u202c"
    r["cluster"].setdefault("notes", []).append("note \u202e LIAF")


@attack("H06_huge_metric", "a 10 MB string inside one metric (review/verify must bound it, not hang)")
def h06(r):
    M(r, "DP-001")["junk"] = "A" * 10_000_000


@attack("H07_deep_nesting", "a 200-deep nested list inside a metric (the strict reader's depth bound)")
def h07(r):
    v: Any = 0
    for _ in range(200):
        v = [v]
    M(r, "DP-001")["deep"] = v


@attack("H08_nan_like_strings", "'NaN'/'Infinity' as strings and 1e300 where judges read numbers (PF-002)")
def h08(r):
    m = M(r, "PF-002")
    m["largest_size_trials_gbps"] = [1e300] * len(m["largest_size_trials_gbps"])
    m["largest_size_gbps"] = 1e300
    m["achieved_fraction"] = 1e300 / m["reference_gbps"]


@attack("H09_wrong_types_in_judged_metric", "wrong types where a judge reads (a dict for a list, a string for a count) — must be a FAIL, not a crash")
def h09(r):
    M(r, "CC-008")["memory"]["held_mib"] = {"a": 1}
    M(r, "DP-006")["device_counts"] = "4"
    M(r, "PF-004")["matrix_gbps"] = [[None, "x"], [1]]
    M(r, "TR-007")["simacc"]["endpoints"] = [1, 2]
    M(r, "WL-002")["devices"]["simacc"]["digests"] = 7


@attack("H10_metrics_not_object", "metrics of a judged pass replaced by a list / a string (crash?)")
def h10(r):
    find(r, "FR-001")["metrics"] = ["x"]
    find(r, "TL-001")["metrics"] = "nodes"


# ------------------------------------------------------------------------------------------- more: waits, flags, identity
@attack("G24_provisional_flag", "FR-007 fails (evidence shows it); the entry flagged provisional: true (soaking checks count toward nothing)")
def g24(r):
    c = find(r, "FR-007")
    c["provisional"] = True
    c["outcome"] = "fail"
    c["reason"] = "node b's death disturbed the survivors"
    c["metrics"]["survivors"].pop("c", None)


@attack("G25_wait_dropped", "WL-003: the pipeline wait on simacc ran past its bound (missed); that wait dropped from metrics.waits")
def g25(r):
    w = M(r, "WL-003")["waits"]
    w["each"] = [e for e in w["each"] if not (e["owner"] == "plugin" and "simacc" in e["what"])]
    w["count"] = len(w["each"])


@attack("G26_wait_bound_widened", "WL-004: the lost-worker scenario took 3x round bound; its plugin wait recorded with bound/granted widened")
def g26(r):
    for e in M(r, "WL-004")["waits"]["each"]:
        if e["owner"] == "plugin":
            e["bound_s"] = e["granted_s"] = e["bound_s"] * 3
            e["took_s"] = e["bound_s"] * 0.9


@attack("G27_wait_factor_claimed", "WL-001: the weight sync took 3x its bound; the plugin wait records factor 3 (a 'loaded host' stretch)")
def g27(r):
    for e in M(r, "WL-001")["waits"]["each"]:
        if e["owner"] == "plugin":
            e["factor"] = 3.0
            e["granted_s"] = e["bound_s"] * 3
            e["took_s"] = e["bound_s"] * 2.5


@attack("G28_other_vendor", "the report re-labelled as another vendor's product (vendor name changed), signed by our key (bound to ours)")
def g28(r):
    r["manifest"]["vendor"] = "NVIDIA"


@attack("G29_machinery_factor_raised", "cluster.machinery.factor raised to 4 (a 'loaded host') to excuse stretched Ray waits and a slow wave (with X07)")
def g29(r):
    r["cluster"].setdefault("machinery", {})["factor"] = 4.0
    x07(r)


@attack("G30_environment_devices_node_dropped", "environment.devices lists one node only (a node with the wrong device count hidden)")
def g30(r):
    d = r["environment"]["devices"]
    if isinstance(d.get("nodes"), list) and len(d["nodes"]) > 1:
        d["nodes"] = d["nodes"][:1]


@attack("G31_host_left_behind_cleared", "the run left shared-memory segments and processes on the host; host.left_behind emptied")
def g31(r):
    h = r.get("host") or {}
    if isinstance(h.get("left_behind"), dict):
        for k in h["left_behind"]:
            h["left_behind"][k] = [] if isinstance(h["left_behind"][k], list) else h["left_behind"][k]


@attack("G32_preflight_finding_removed", "a fatal preflight finding removed from preflight.findings")
def g32(r):
    p = r.get("preflight") or {}
    p["findings"] = []


@attack("G33_duration_inflated_check", "a check's duration_s inflated 100x (to hide where time went); junit re-synced")
def g33(r):
    find(r, "TR-001")["duration_s"] = find(r, "TR-001")["duration_s"] * 100


@attack("G34_older_release_same_day", "claims the older release 0.1.0+data.16 (legacy judges: 10 checks judged) for a run the same day; "
        "params and digests made data.16's where the checklist allows (expect: refused on params/completeness, else a hole)")
def g34(r):
    import yaml
    from conformance.catalog import data, datafiles
    rel = yaml.safe_load((datafiles.data_root() / "tiers" / "releases.yaml").read_text())["releases"]["0.1.0+data.16"]
    r["suite"]["version"] = "0.1.0+data.16"
    for k in ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256"):
        if k in rel:
            r["suite"][k] = rel[k]


@attack("G35_superseded_by_clock", "finished_at/started_at moved a day back to before data.18 was published (the release is the same day)")
def g35(r):
    from datetime import datetime, timedelta
    for k in ("started_at", "finished_at"):
        r[k] = (datetime.fromisoformat(r[k]) - timedelta(hours=14)).isoformat()


@attack("D10_dp014_invalid_accepted", "DP-014: an invalid quantity (1.5) was accepted; the invalid list in the manifest emptied")
def d10(r):
    r["manifest"]["accelerator"]["quantities"]["invalid"] = []


@attack("D11_dp017_detects_device", "DP-017: the host without a device detects one; the manifest's without_device host overlay removed")
def d11(r):
    r["manifest"]["accelerator"]["hosts"].pop("without_device", None)


@attack("T06_tl017_reported_thinned", "TL-017: an unschedulable group was never reported pending; dropped from reported")
def t06(r):
    m = M(r, "TL-017")
    v = m.get("reported")
    if isinstance(v, list) and len(v) > 1:
        m["reported"] = v[:-1]
    elif isinstance(v, dict) and len(v) > 1:
        del v[sorted(v)[-1]]


@attack("T07_node_id_relabelled", "TL-001: the node lacking the label swapped for a copy of the good node under a new id")
def t07(r):
    nodes = M(r, "TL-001")["nodes"]
    ids = sorted(nodes)
    good = copy.deepcopy(nodes[ids[0]])
    nodes[ids[1]] = good


@attack("C07b_cc011_declared_device_not_applicable", "CC-011/CC-012: the manifest declares RDT over the backend on simacc too (looks stronger); "
        "the simacc records are 'not applicable' with a reason, cpu's nested as each_device writes them")
def c07b(r):
    r["manifest"]["collective"]["rdt_devices"] = ["cpu", "simacc"]
    for cid in ("CC-011", "CC-012"):
        c = find(r, cid)
        old = c["metrics"]
        waits = old.pop("waits", None)
        new = {"devices": ["cpu"], "not_applicable_on": {"simacc": "ValueError: the backend cannot move simacc tensors"},
               "cpu": {k: v for k, v in old.items() if k != "devices"}}
        for k in ("transfers", "error_bound_s"):
            if k in old:
                new[k] = old[k]
        if waits is not None:
            new["waits"] = waits
        c["metrics"] = new


# ------------------------------------------------------------------------------------------- hostile input verify itself meets
# (signed by the vendor's own tool: `sign` refuses these first, so verify must meet them with a line, never a traceback)
ATTACKS["H02r_ansi_in_vendor_raw"] = Attack("H02r_ansi_in_vendor_raw", "H02 signed by the vendor's own tool: ESC in manifest.vendor reaches verify",
                                            h02, raw=True, post=_no_raw_escape)
ATTACKS["H03r_zero_width_product_raw"] = Attack("H03r_zero_width_product_raw", "H03 signed by the vendor's own tool (ZWJ in the product)", h03, raw=True)
ATTACKS["H07r_deep_nesting_raw"] = Attack("H07r_deep_nesting_raw", "H07 signed by the vendor's own tool: 200-deep nesting reaches verify", h07, raw=True)
ATTACKS["H10r_metrics_not_object_raw"] = Attack("H10r_metrics_not_object_raw", "H10 signed by the vendor's own tool: metrics a list / a string reach the judges",
                                                h10, raw=True)


@attack("H11r_unknown_field_raw", "a field with no trust status (checks[0].vendor_note) signed by the vendor's own tool", raw=True)
def h11(r):
    r["checks"][0]["vendor_note"] = "certified by us"


@attack("H12r_outcome_unknown_raw", "an outcome no release knows ('passed') on one check, signed by the vendor's own tool", raw=True, derive=False)
def h12(r):
    find(r, "DP-001")["outcome"] = "passed"


@attack("H13r_checks_not_list_raw", "checks is an object keyed by id, signed by the vendor's own tool", raw=True, derive=False)
def h13(r):
    r["checks"] = {c["id"]: c for c in r["checks"]}


@attack("H14r_tier_unknown_raw", "tier 'platinum' (no such tier), signed by the vendor's own tool", raw=True, derive=False)
def h14(r):
    r["tier"] = "platinum"


@attack("H15r_params_wrong_type_raw", "PF-002 params a list, CC-010 star_size_mib a string, signed by the vendor's own tool", raw=True)
def h15(r):
    find(r, "PF-002")["params"] = [0.1]
    find(r, "CC-010")["params"]["star_size_mib"] = "16"


@attack("C10_cc010_host_copy_lowered", "CC-010: bus bandwidth is 0.1% of the host copy (fail); the top-level host_copy_gbps lowered "
        "(every row still records the run's host copy)")
def c10(r):
    m = M(r, "CC-010")
    need = find(r, "CC-010")["params"]["min_host_copy_fraction"]
    # the broken backend: busbw at half the host-copy bar (rows, star and summary alike)
    f = (need * 0.5 * m["host_copy_gbps"]) / m["busbw_gbps"]
    for row in m["rows"]:
        row["busbw_gbps"] *= f
        row["algbw_gbps"] *= f
        row["busbw_trials_gbps"] = [x * f for x in row["busbw_trials_gbps"]]
    m["busbw_gbps"] *= f
    m["star_op_busbw_gbps"] *= f
    m["star_busbw_gbps"] *= f     # the star scaled too (star_fraction unchanged)
    m.pop("nominal_link_gbps", None)
    m.pop("link_fraction", None)
    r["manifest"]["collective"].pop("nominal_link_gbps", None)
    # the dishonest part: the host copy reference lowered at the top only
    m["host_copy_gbps"] = m["busbw_gbps"] / (need * 2)
    m["host_fraction"] = m["busbw_gbps"] / m["host_copy_gbps"]


@attack("G36_at_after_waiver_expiry", "control: verify --at a date after FR-016's waiver expires must say recertification required",
        verify_args=("--at", "2027-06-01"))
def g36(r):
    pass


@attack("G34b_downgrade_to_data16_checklist", "the report re-labelled as a run of 0.1.0+data.16 (published the same day, legacy judges: "
        "10 checks judged): every check's params/title/area/level made data.16's; then DP-006's evidence broken (a node with 3 of 4 devices)")
def g34b(r):
    from conformance.catalog import data, datafiles
    g34(r)
    cl = data.load_checklist(datafiles.data_root() / "tiers" / "releases" / "0.1.0+data.16" / "checklist.yaml")
    by = cl.by_id()
    keep = []
    for c in r["checks"]:
        e = by.get(c["id"])
        if e is None:
            continue
        c["params"] = dict(e.params)
        c["title"], c["area"], c["level"] = e.title, e.area, e.level
        keep.append(c)
    r["checks"] = keep
    m = M(r, "DP-006")
    m["device_counts"][sorted(m["device_counts"])[0]] = 3.0


# ------------------------------------------------------------------------------------------- the signed folder tampered after signing
def _env(out: Path) -> dict:
    return json.loads((out / "report.intoto.json").read_text())


def _v01(out: Path) -> None:
    text = (out / "report.intoto.json").read_text()
    (out / "report.intoto.json").write_text(text.replace('"payload":', '"payload": "e30=", "payload":', 1))
    (out / "report.sigstore.json").unlink()


def _v02(out: Path) -> None:
    e = _env(out)
    e["signatures"] = e["signatures"] * 17
    (out / "report.intoto.json").write_text(json.dumps(e))
    (out / "report.sigstore.json").unlink()


def _v03(out: Path) -> None:
    (out / "report.md").unlink()
    (out / "report.md").symlink_to("/etc/hostname")


def _v04(out: Path) -> None:
    e = _env(out)
    e["payload"] = "not base64 !!!"
    (out / "report.intoto.json").write_text(json.dumps(e))
    (out / "report.sigstore.json").unlink()


def _v05(out: Path) -> None:
    import os
    (out / "report.json").unlink()
    os.mkfifo(out / "report.json")


def _v06(out: Path) -> None:
    """The bundle carries another (older, honest) envelope than report.intoto.json."""
    b = json.loads((out / "report.sigstore.json").read_text())
    b["dsseEnvelope"]["signatures"][0]["keyid"] = "SHA256:forged"
    (out / "report.sigstore.json").write_text(json.dumps(b))


def _noop(r):
    pass


for _name, _models, _fn in [
        ("V01_envelope_duplicate_payload", "two 'payload' keys in the envelope (two parsers, two documents)", _v01),
        ("V02_envelope_17_signatures", "17 signatures in one envelope (cap 16)", _v02),
        ("V03_report_md_symlink_out", "report.md a symlink leaving the folder (/etc/hostname)", _v03),
        ("V04_payload_not_base64", "payload that is not base64", _v04),
        ("V05_report_json_fifo", "report.json replaced by a FIFO (a hang?)", _v05),
        ("V06_bundle_keyid_differs", "report.sigstore.json's keyid differs from the envelope's (the keyid is unsigned)", _v06)]:
    ATTACKS[_name] = Attack(_name, _models, _noop, after_sign=_fn)


@attack("T08_tl013_group_dropped", "TL-013: the bundle selecting rack-2 landed on the rack-1 node; that group dropped from groups")
def t08(r):
    m = M(r, "TL-013")
    m["groups"] = [g for g in m["groups"] if g.get("selector") != {"ray.io/rack": "rack-2"}]


@attack("D12_dp019_request_lowered", "DP-019: a raylet asking 2 units with 1 visible started anyway (broken); request recorded 1.0, ok true")
def d12(r):
    m = M(r, "DP-019")
    m["request"] = float(len(m["visible"]))
    m["result"] = {"ok": True, "records": [], "seconds": 0.0, "type": "NoneType", "value": None}


@attack("R10_fr006_node_dropped", "FR-006: after the fresh start one node advertises 3 devices; that node dropped from before and after")
def r10(r):
    m = M(r, "FR-006")
    m["before"] = m["before"][:1]
    m["after"] = m["after"][:1]


@attack("R11_fr006_after_devices_zero", "FR-006: after the fresh start one node advertises no device at all (devices 0 skips the count rule) "
        "— before and after both say 0 for it")
def r11(r):
    m = M(r, "FR-006")
    for side in ("before", "after"):
        m[side][1]["devices"] = 0.0
        m[side][1]["types"] = []


def _cap(r, value="64MiB"):
    from conformance.rdt.config import MAX_BYTES_ENV, SIZE_CAP, parse_size
    cap = {"env": MAX_BYTES_ENV, "value": value, "bytes": parse_size(value)}
    m = M(r, "TR-004")
    m[SIZE_CAP] = cap
    m["max_bytes"] = cap["bytes"]
    for d in m["devices"]:
        m[d]["bytes"] = cap["bytes"]
    return MAX_BYTES_ENV


@attack("K01_capped_run_recorded", "control: a run capped by the size knob (64MiB) recorded as such (TR-004 size_cap, selection.environment)")
def k01(r):
    env = _cap(r)
    r["selection"]["environment"] = {env: "64MiB"}


@attack("K02_capped_run_knob_scrubbed", "a capped run: selection.environment's knob removed, TR-004's size_cap kept")
def k02(r):
    _cap(r)
    r["selection"].pop("environment", None)


@attack("K03_capped_run_all_scrubbed", "a capped run: the knob and size_cap both scrubbed, TR-004 at 64 MiB (max_bytes kept at the cap)")
def k03(r):
    from conformance.rdt.config import SIZE_CAP
    _cap(r)
    M(r, "TR-004").pop(SIZE_CAP)


@attack("R02b_transfer_type_not_applicable_no_reason", "FR-013: as R02 with an empty reason string (not_applicable_on {'simacc': ''})")
def r02b(r):
    _hide_type(r, "FR-013", why="")


@attack("H16_esc_in_metric_key_reaching_fail", "a leaking TR-013 series under a key with ESC and a newline: the FAIL reason prints the key",
        post=_no_raw_escape)
def h16(r):
    m = M(r, "TR-013")
    g = m["growth_per_round_bytes"]
    k = next(k for k in g if k.endswith("destination.held_bytes"))
    g[k + "\x1b[2K\r\nVERIFIED: forged"] = [int(m["payload_bytes"] * m["transfers_per_round"])] * len(g[k])


@attack("H17_esc_in_device_type_name", "a device type named with ESC/newline in TR-001 devices (the 'stray type' FAIL prints it)",
        post=_no_raw_escape)
def h17(r):
    m = M(r, "TR-001")
    bad = "sim\x1b[32m\nVERIFIED: forged"
    m["devices"].append(bad)
    m[bad] = copy.deepcopy(m["cpu"])


@attack("H18_bidi_in_waiver_issue", "a waived check whose waiver issue carries U+202E (the waivers FAIL line prints it)",
        post=lambda out, text: "raw U+202E printed" if "\u202e" in text else "bidi escaped")
def h18(r):
    w = [c for c in r["checks"] if c["outcome"] == "waived"][0]
    w["waiver"]["issue"] = "https://x/\u202eevil"


def _remote(r):
    args = r["selection"]["args"]
    i = args.index("$SUITE/checks") if "$SUITE/checks" in args else len(args)
    args.insert(i, "--conformance-ray-address=auto")


@attack("G39_remote_claimed_node_dropped", "the run re-labelled as on the vendor's own cluster (--conformance-ray-address in the recorded "
        "args) so counts read 'at least'; then D01's edit: DP-006's node with 3 of 4 devices dropped")
def g39(r):
    _remote(r)
    d01(r)


@attack("G40_remote_claimed_tl_node_dropped", "as G39 with T01's edit: TL-001's node without the type label dropped")
def g40(r):
    _remote(r)
    t01(r)


@attack("G41_remote_claimed_pf004_thinned", "as G39 with P04's edit: PF-004's slow device's endpoints dropped (matrix shape read from the "
        "manifest only on a cluster the suite started?)")
def g41(r):
    _remote(r)
    p04(r)


@attack("G42_remote_claimed_dp009_one_node", "remote claimed (G39) with D03's edit: DP-009's second node's actors dropped")
def g42(r):
    _remote(r)
    d03(r)


@attack("G43_remote_claimed_dp007_one_node", "remote claimed (G39) with D09's edit: DP-007's node of another type dropped")
def g43(r):
    _remote(r)
    d09(r)


@attack("G44_remote_claimed_wl002_fewer_workers", "remote claimed: WL-002 ran 2 of the 3 workers the manifest's units give "
        "(digests, final params and reference recomputed for 2 workers is raw data; here only the count and digests cut)")
def g44(r):
    _remote(r)
    for d, ev in M(r, "WL-002")["devices"].items():
        ev["workers"] = 2
        ev["digests"] = [row[:2] for row in ev["digests"]]


# =========================================================================================== round 25
# Held-out round 25 (release 0.1.0+data.20): per-node evidence, selection.nodes, waits' owners and
# verdicts, the machinery record, companions (report.html), diff's figures, summary/ids, strings.
def _dp006_fails(r: dict[str, Any]) -> None:
    """An honest failure with its evidence: a DP-006 node advertises 3 of its 4 devices."""
    m = M(r, "DP-006")
    m["device_counts"][sorted(m["device_counts"])[0]] = 3.0
    set_outcome(r, "DP-006", "fail", "a node advertises 3 of 4 devices")


def _short_nodes(r: dict[str, Any]) -> list[str]:
    return sorted(str(n["node_id"])[:8] for n in r["environment"]["devices"]["nodes"])


def _unsampled(r: dict[str, Any]) -> str:
    """A device node the run's seed did not choose for DP-008 (the 'good' node a vendor prefers)."""
    covered = set(M(r, "DP-008")["node_coverage"]["nodes"])
    return next(n for n in _short_nodes(r) if n not in covered)


def _move_sample(r: dict[str, Any], to: str) -> None:
    """DP-008/010/011/012's per-node evidence relabelled onto node `to` (as if the scenario ran there)."""
    from conformance.catalog.node_sample import SAMPLED_CHECKS
    for cid in SAMPLED_CHECKS:
        m = M(r, cid)
        if "per_node" not in m:
            continue
        rec = next(iter(m["per_node"].values()))
        m["per_node"] = {to: rec}
        m["node_coverage"]["nodes"] = [to]


@attack("N25_01_nodes_record_dropped", "the seed's sampled node fails DP-008/010/011/012; the vendor re-runs on the node it "
        "likes, relabels the per-node evidence onto it and drops selection.nodes (read as 'a release before run --nodes')")
def n25_01(r):
    to = _unsampled(r)
    _move_sample(r, to)
    del r["selection"]["nodes"]


@attack("N25_02_nodes_seed_dropped", "as N25_01, keeping mode/size but dropping the seed (read as 'a release before the seeded sample')")
def n25_02(r):
    _move_sample(r, _unsampled(r))
    del r["selection"]["nodes"]["seed"]


@attack("N25_03_nodes_mode_unknown", "as N25_01 with selection.nodes.mode 'chosen' (a mode no release knows)")
def n25_03(r):
    _move_sample(r, _unsampled(r))
    r["selection"]["nodes"]["mode"] = "chosen"


@attack("N25_04_nodes_all_claimed_from_sample", "a sampled run (1 node) claimed as --nodes all: each per-node record copied onto "
        "every node, node_coverage lists them all, TR-006 given a pair wave over both nodes")
def n25_04(r):
    from conformance.catalog.node_sample import SAMPLED_CHECKS
    nodes = _short_nodes(r)
    r["selection"]["nodes"] = {"mode": "all"}
    for cid in SAMPLED_CHECKS:
        m = M(r, cid)
        rec = next(iter(m["per_node"].values()))
        m["per_node"] = {n: copy.deepcopy(rec) for n in nodes}
        m["node_coverage"]["nodes"] = nodes
        m["node_coverage"]["mode"] = "all"
    m = M(r, "TR-006")
    for d in m["devices"]:
        m[d]["pair_wave"] = {"pairs": [[nodes[0], nodes[1]], [nodes[1], nodes[0]]]}


@attack("N25_05_nodes_seed_rechosen", "the seed's node fails; the seed rewritten to one that chooses the other node and the "
        "per-node evidence relabelled onto it (the choice recomputes)")
def n25_05(r):
    from conformance.catalog.node_sample import choose
    to = _unsampled(r)
    nodes = _short_nodes(r)
    seed = next(s for s in range(10_000) if choose(nodes, s, 1) == [to])
    r["selection"]["nodes"]["seed"] = seed
    _move_sample(r, to)


@attack("N25_06_coverage_foreign_node", "DP-013, PF-001 and FR-001..005 ran on a node that is not the run's: their "
        "node_coverage names 'deadbeef' (no node of environment.devices / cluster)")
def n25_06(r):
    for cid in ("DP-013", "PF-001", "FR-001", "FR-002", "FR-003", "FR-004", "FR-005"):
        M(r, cid)["node_coverage"]["nodes"] = ["deadbeef"]


@attack("N25_07_coverage_alive_lowered", "DP-006/TL-001 node_coverage says 1 node alive and lists one (a node hidden from "
        "the coverage a page shows; the judged records keep both)")
def n25_07(r):
    for cid in ("DP-006", "DP-007", "DP-009", "TL-001"):
        cov = M(r, cid)["node_coverage"]
        cov["alive"], cov["nodes"] = 1, cov["nodes"][:1]


@attack("N25_08_merged_claimed_to_skip_nodes", "as N25_05 without the seed change, plus selection.shards = [] (a 'merged report' "
        "skips the nodes line)")
def n25_08(r):
    _move_sample(r, _unsampled(r))
    r["selection"]["shards"] = []


# ------------------------------------------------------------------------------------------- waits
def _plugin_wait(r: dict[str, Any], cid: str, what_prefix: str = "") -> dict[str, Any]:
    return next(w for w in M(r, cid)["waits"]["each"] if w["owner"] == "plugin" and w["what"].startswith(what_prefix))


@attack("N25_09_plugin_wait_owned_by_ray", "WL-004's lost-worker scenario on simacc took 3x its bound: its wait relabelled "
        "owner 'ray' (a Ray wait's time is never compared with its grant), verdict met")
def n25_09(r):
    w = _plugin_wait(r, "WL-004", "lost worker on simacc")
    w["owner"] = "ray"
    w.pop("param", None)
    w["bound_s"] = w["granted_s"] = 60.0
    w["took_s"] = round(3 * 420.0, 3)


@attack("N25_10_ray_wait_ran_out_in_pass", "DP-008's wait on Ray ran out (took 10x its grant: the host's 'not judged'); "
        "recorded verdict met in a pass")
def n25_10(r):
    w = M(r, "DP-008")["waits"]["each"][0]
    w["took_s"] = round(10 * w["granted_s"], 3)


@attack("N25_11_plugin_wait_dropped_count_kept", "FR-001's only plugin wait (the scenario ran past its bound) dropped; "
        "waits.count kept at 1, each []")
def n25_11(r):
    M(r, "FR-001")["waits"]["each"] = [w for w in M(r, "FR-001")["waits"]["each"] if w["owner"] != "plugin"]


@attack("N25_12_plugin_wait_took_null", "TR-015's scenario wait on simacc never returned: took_s null (not measured), verdict met")
def n25_12(r):
    w = _plugin_wait(r, "TR-015")
    w["took_s"] = None


@attack("N25_13_host_prefix_error_hides_fail", "CC-009 failed (its survivors hung); recorded error 'not judged: host: ...' "
        "(the host's, not the plugin's), metrics emptied: honest tier?")
def n25_13(r):
    c = find(r, "CC-009")
    c["outcome"], c["reason"], c["metrics"] = "error", "not judged: host: Ray's node did not register within 30 s", {}


# ------------------------------------------------------------------------------------------- machinery
@attack("N25_14_machinery_slowest_raised_stretch", "an idle run: cluster.machinery.slowest_s.worker_start raised to 4x its nominal "
        "(factor recomputed 4.0) so TR-019's wave bound may stretch x3.5 (X07's 100 transfers took 3.4x all_bound_s)")
def n25_14(r):
    mach = r["cluster"]["machinery"]
    mach["slowest_s"]["worker_start"] = 4 * mach["nominal_s"]["worker_start"]
    mach["factor"] = 4.0
    mach["import_factor"] = 4.0
    for d in M(r, "TR-019")["devices"]:
        s = M(r, "TR-019")[d]
        bound = find(r, "TR-019")["params"]["all_bound_s"]
        s["all_bound_s"] = bound * 3.5
        s["all_done_s"] = bound * 3.4


@attack("N25_15_host_load_idle_claimed", "every check's host_load rewritten to an idle host (busy 0 %, load 0): diff and the "
        "page read it; judged?")
def n25_15(r):
    for c in r["checks"]:
        if c.get("host_load"):
            c["host_load"] = {"busy_pct": 0.0, "cpus": c["host_load"].get("cpus", 2), "load1": 0.0, "steal_pct": 0.0}


# ------------------------------------------------------------------------------------------- diff's figures
def _pf004_regressed(r: dict[str, Any], fraction: float = 0.4) -> None:
    """PF-004's slowest cross-node link at `fraction` of its class median (a regression diff must
    report; the judge still passes it above min_fraction_of_class_median 0.25)."""
    m = M(r, "PF-004")
    ends = [e.split(":")[0] for e in m["endpoints"]]
    cells = [(i, j) for i in range(len(ends)) for j in range(len(ends)) if i != j and ends[i] != ends[j]
             and m["matrix_gbps"][i][j] is not None]
    median = m["links"]["cross_node"]["median_gbps"]
    i, j = min(cells, key=lambda ij: m["matrix_gbps"][ij[0]][ij[1]])
    m["matrix_gbps"][i][j] = fraction * median
    vals = [m["matrix_gbps"][a][b] for a, b in cells]
    m["links"]["cross_node"] = {"median_gbps": statistics.median(vals), "min_gbps": min(vals),
                                "min_fraction": min(vals) / statistics.median(vals)}


def _diff_against_baseline(out: Path, check: str) -> str:
    """`diff --fail-unconfirmed` of the round's baseline against the attack's folder: rc and `check`'s line."""
    import subprocess
    from harness import CLI, ATK
    src = Path(__import__("os").environ.get("RT_DIFF_OLD", str(ATK / "A00_baseline")))
    d = subprocess.run([CLI, "diff", "--fail-unconfirmed", str(src), str(out)], capture_output=True, text=True)
    (out / "diff.txt").write_text(d.stdout + d.stderr)
    line = [ln.strip() for ln in (d.stdout + d.stderr).splitlines() if check in ln][:1]
    return f"diff rc={d.returncode}: {line[0][:200] if line else f'no {check} line'}"


def _diff_post(out: Path, text: str) -> str:
    return _diff_against_baseline(out, "PF-004")


@attack("N25_16_diff_pf004_regression_control", "control: PF-004's slowest cross-node link fell to 0.4 of its class median "
        "(was ~0.7): diff against the baseline must call it a regression", post=_diff_post)
def n25_16(r):
    _pf004_regressed(r)


@attack("N25_17_diff_regression_hidden_by_machinery", "N25_16's regression, plus cluster.machinery.slowest_s.worker_start "
        "raised 2x its nominal (factor 2.0 recomputed): diff's host change explains PF-004 (normalised_by host)",
        post=_diff_post)
def n25_17(r):
    _pf004_regressed(r)
    mach = r["cluster"]["machinery"]
    mach["slowest_s"]["worker_start"] = 2 * mach["nominal_s"]["worker_start"]
    mach["factor"] = 2.0


@attack("N25_18_diff_figure_removed", "N25_16's regression hidden by removing PF-004's links record (diff: untested?); the "
        "judge reads links (expect refused by verify)", post=_diff_post)
def n25_18(r):
    _pf004_regressed(r)
    del M(r, "PF-004")["links"]


# ------------------------------------------------------------------------------------------- companions
def _html_forged(out: Path) -> None:
    """report.html (not a signed subject) replaced by the page of the run's own report, which
    says what report.json no longer says."""
    src = Path(__import__("os").environ.get("RT_SRC", "/tmp/rt25/src/run1"))
    if (src / "report.html").exists():
        (out / "report.html").write_bytes((src / "report.html").read_bytes())
    else:
        (out / "report.html").write_text("<html><body><h1>Tier: stable</h1></body></html>")


@attack("N25_19_html_page_not_the_report", "DP-006 fails (a node advertises 3 of 4 devices: report.json honest, the tier falls); the folder's report.html is the "
        "page of a stable run (report.html is not a signed subject)", after_sign=_html_forged)
def n25_19(r):
    _dp006_fails(r)


@attack("N25_20_html_page_edited_only", "an honest report; report.html edited after signing to say the tier is 'stable' "
        "and every capability certified with a vendor footnote", after_sign=lambda out: (out / "report.html").write_text(
            "<html><body><h1>SimAcc X1: stable, 100/100 pass</h1></body></html>"))
def n25_20(r):
    pass


@attack("N25_21_junit_extra_suite", "junit.xml given a second <testsuite> of 20 passing cases (a CI dashboard counts them)",
        after=lambda out: (out / "junit.xml").write_text((out / "junit.xml").read_text().replace(
            "</testsuites>", "<testsuite name='extra' tests='20' failures='0' errors='0' skipped='0'>"
            + "".join(f"<testcase classname='XX-{i:03d}' name='t' time='0.1'/>" for i in range(20)) + "</testsuite></testsuites>")))
def n25_21(r):
    pass


# ------------------------------------------------------------------------------------------- summary / ids / level
@attack("N25_22_level_lowered_on_fail", "CC-009 fails (its outcome) but its recorded level is MAY (a MAY check's fail "
        "blocks nothing on the page)")
def n25_22(r):
    set_outcome(r, "CC-009", "fail", "a survivor hung")
    find(r, "CC-009")["level"] = "MAY"


@attack("N25_23_area_moved", "DP-006 fails (its evidence shows it); its recorded area moved to 'workload' (the device capability's "
        "required list read from the report?)")
def n25_23(r):
    _dp006_fails(r)
    find(r, "DP-006")["area"] = "workload"


def _summary_extra(out: Path) -> None:
    rep = json.loads((out / "report.json").read_text())
    rep["summary"]["certified_checks"] = 100
    rep["summary"]["pass"] = rep["summary"]["pass"] + rep["summary"].get("waived", 0) + rep["summary"].get("not_applicable", 0)
    (out / "report.json").write_text(json.dumps(rep, indent=2, sort_keys=True) + "\n")


@attack("N25_24_summary_extra_key", "summary says every check passed ('pass' counts the waived and not_applicable) and an "
        "extra 'certified_checks': 100 (a dashboard reads it); report.md left the run's", after=_summary_extra)
def n25_24(r):
    pass


@attack("N25_25_id_trailing_space", "TR-020 fails; its id becomes 'TR-020 ' (a look-alike) and a passing copy of TR-019 "
        "takes the id 'TR-020'")
def n25_25(r):
    c = find(r, "TR-020")
    c["id"] = "TR-020 "
    c["outcome"], c["reason"] = "fail", "hung"
    dup = copy.deepcopy(find(r, "TR-019"))
    dup["id"] = "TR-020"
    r["checks"].append(dup)


# ------------------------------------------------------------------------------------------- waivers / provisional / capabilities
@attack("N25_26_waiver_on_other_check", "FR-012 fails; FR-016's published waiver copied onto it (check field kept FR-016)")
def n25_26(r):
    c = find(r, "FR-012")
    c["outcome"] = "waived"
    c["waiver"] = copy.deepcopy(find(r, "FR-016")["waiver"])
    c["reason"] = find(r, "FR-016").get("reason")


@attack("N25_27_waived_check_passes_claimed_by_copy", "FR-016's waiver kept, outcome 'waived', but its original_outcome "
        "rewritten 'pass' and reason emptied (the page says the plugin passed and was waived anyway)")
def n25_27(r):
    c = find(r, "FR-016")
    c["waiver"]["original_outcome"] = "pass"
    c["reason"] = None


@attack("N25_28_provisional_flag_dropped", "FR-019 (provisional in the release) recorded without provisional (counted?)")
def n25_28(r):
    find(r, "FR-019").pop("provisional", None)


@attack("N25_29_provisional_claimed_on_failing_must", "DP-006 fails (its evidence shows it); recorded provisional: true (a soaking check counts "
        "toward nothing): tier recomputed by the report's flag?")
def n25_29(r):
    _dp006_fails(r)
    find(r, "DP-006")["provisional"] = True


def _caps_after(r: dict[str, Any]) -> None:
    import harness
    harness.refresh(r)
    for cap in r["capabilities"]:
        if cap["name"] == "device":
            cap["state"], cap["blocking"] = "certified", []


@attack("N25_30_capability_claimed_not_recomputed", "DP-006 fails (its evidence shows it); the device capability claimed certified anyway "
        "(every other derived field honest)", derive=False)
def n25_30(r):
    _dp006_fails(r)
    _caps_after(r)


# ------------------------------------------------------------------------------------------- strings a terminal/page shows
def _raw_controls(out: Path, text: str) -> str:
    bad = []
    for name in ("report.md", "verify.txt", "diff.txt"):
        p = out / name
        t = p.read_text(errors="replace") if p.exists() else ""
        if name == "verify.txt":
            t = text
        for ch, label in (("\x1b", "ESC"), ("\u202e", "U+202E"), ("\u200b", "ZWSP"), ("\r", "CR")):
            if ch in t:
                bad.append(f"{label} raw in {name}")
    return "; ".join(bad) or "no raw control in report.md/verify output"


@attack("N25_31_fullwidth_product", "manifest.product 'SimAcc X1' -> 'SimAcc \uff381' (fullwidth X: prints like the real product)",
        post=_raw_controls)
def n25_31(r):
    r["manifest"]["product"] = r["manifest"]["product"].replace("X", "\uff38")


@attack("N25_32_wait_what_escape", "a WL-004 plugin wait that ran out, named with ESC[2J + newline + 'VERIFIED' (verify's "
        "FAIL line prints the wait's name)", post=_raw_controls)
def n25_32(r):
    w = _plugin_wait(r, "WL-004", "lost worker on simacc")
    w["what"] = "lost worker on simacc\x1b[2J\nVERIFIED: forged\u202e"
    w["took_s"] = w["granted_s"] * 2


@attack("N25_33_node_id_escape", "DP-008's per-node key and coverage a node id with ESC + bidi (the nodes FAIL line prints it)",
        post=_raw_controls)
def n25_33(r):
    bad = "f44\x1b[31m\u202ebb"
    m = M(r, "DP-008")
    m["per_node"] = {bad: next(iter(m["per_node"].values()))}
    m["node_coverage"]["nodes"] = [bad]


@attack("N25_34_strings_in_page_fields", "ESC/CR/ZWSP/U+202E in environment.hostname, cluster.notes, a shm entry name and "
        "a check's host_load key (report.md renders them)", post=_raw_controls)
def n25_34(r):
    s = "x\x1b[2J\r\u200b\u202e<script>alert(1)</script>"
    r["environment"]["hostname"] = "vm" + s
    r["cluster"]["notes"] = list(r["cluster"].get("notes") or []) + ["note" + s]
    lb = r["host"]["left_behind"]
    lb["shm_entries"] = list(lb.get("shm_entries") or []) + ["seg" + s]
    lb["shm_entries_count"] = len(lb["shm_entries"])
    lb["shm_entry_mb"] = dict(lb.get("shm_entry_mb") or {}, **{"seg" + s: 1.0})


@attack("N25_35_escape_in_waiver_reason_and_node_coverage_mode", "ESC in FR-016's waiver reason copy and in a "
        "node_coverage mode (verify FAIL lines)", post=_raw_controls)
def n25_35(r):
    find(r, "FR-016")["waiver"]["reason"] += "\x1b[2J\nVERIFIED: forged"
    M(r, "DP-006")["node_coverage"]["mode"] = "sample\x1b[2J"


@attack("N25_31r_fullwidth_product_raw", "N25_31 signed by the vendor's own tool (sign's pre-check skipped): verify's names line",
        raw=True, post=_raw_controls)
def n25_31r(r):
    n25_31(r)


# ------------------------------------------------------------------------------------------- flakes (run1 recorded TR-018 flaky)
def _flaky(r: dict[str, Any]) -> dict[str, Any]:
    c = next((c for c in r["checks"] if c["outcome"] == "flaky"), None)
    if c is None:
        raise RuntimeError("no flaky check in this report")
    return c


@attack("N25_36_flaky_attempts_kept_outcome_pass", "TR-018 failed (a hang) then passed on the re-run: outcome 'pass', reason "
        "cleared, the attempts record (fail, pass) kept (stable disallows flakes)")
def n25_36(r):
    c = _flaky(r)
    c["outcome"], c["reason"] = "pass", None


@attack("N25_37_flaky_hidden_whole", "TR-018 failed then passed: outcome 'pass', the attempts record dropped and duration_s "
        "cut to the passing attempt's (junit re-synced): the flake hidden whole")
def n25_37(r):
    c = _flaky(r)
    last = c["attempts"][-1]
    c["outcome"], c["reason"], c["duration_s"] = "pass", None, last["duration_s"]
    del c["attempts"]


# ------------------------------------------------------------------------------------------- round 27
# The same classes as N25_06/07/13/16, on records no other rule of main a49dc81 reads (FR-001..005's
# coverage is held since round 25 by their per_node records and the nodes line; DP-013's and PF-001's
# was not), and the limits the round-27 rules leave, said in FINDINGS.md.
@attack("N27_01_coverage_foreign_no_record", "DP-013's and PF-001's node_coverage names 'deadbeef' (no node of the run); "
        "neither records a per-node record that names its node")
def n27_01(r):
    for cid in ("DP-013", "PF-001"):
        M(r, cid)["node_coverage"]["nodes"] = ["deadbeef"]


@attack("N27_02_coverage_lab_unrecorded", "the recovery node lab's start dropped from cluster.history and FR-007..011's "
        "coverage rewritten to nodes nowhere else in the report ('deadbeef', alive 9)")
def n27_02(r):
    r["cluster"]["history"] = [h for h in r["cluster"]["history"] if h.get("shape") != "recovery-nodes"]
    for cid in ("FR-007", "FR-008", "FR-009", "FR-010", "FR-011"):
        M(r, cid)["node_coverage"].update(nodes=["deadbeef"], alive=9)


@attack("N27_03_host_suite_text_no_start", "CC-009 failed; its error rewritten to the suite's own Ray-registration text "
        "('not judged: host: Ray's node did not register within Ray's own fixed 30 s startup wait ...'), metrics emptied; "
        "cluster.history records no failed start")
def n27_03(r):
    c = find(r, "CC-009")
    c["outcome"], c["metrics"] = "error", {}
    c["reason"] = ("not judged: host: Ray's node did not register within Ray's own fixed 30 s startup wait (a loaded "
                   "host; the plugin was not judged; rerun on a less loaded host): node timed out")


@attack("N27_04_host_sample_beyond_machinery", "CC-009 failed; its error rewritten in machinery.host_reason's form with a "
        "fresh worker start of 30 s (the run's machinery record's slowest is under 1 s), metrics emptied")
def n27_04(r):
    c = find(r, "CC-009")
    c["outcome"], c["metrics"] = "error", {}
    c["reason"] = ("not judged: host: starting the member actors: Ray's machinery did not do it within 121s (the 120s "
                   "bound stretched x1.0 by this run's measured worker start); a bare worker took 30.0s to start just now; "
                   "the host was too slow for Ray, the plugin was not judged")


@attack("N27_05_host_text_consistent_forgery", "limit: as N27_04 with a fresh sample no slower than the machinery record's "
        "slowest worker start and the grant waited out (the text form is the vendor's word up to that record)")
def n27_05(r):
    slowest = r["cluster"]["machinery"]["slowest_s"]["worker_start"]
    c = find(r, "CC-009")
    c["outcome"], c["metrics"] = "error", {}
    c["reason"] = ("not judged: host: starting the member actors: Ray's machinery did not do it within 121s (the 120s "
                   f"bound stretched x1.0 by this run's measured worker start); a bare worker took {slowest:.1f}s to start "
                   "just now; the host was too slow for Ray, the plugin was not judged")


def _diff_post_fr(out: Path, text: str) -> str:
    return _diff_against_baseline(out, "FR-003")


@attack("N27_06_diff_recovery_time_regressed", "FR-003's recovery scenario took 1.6x as long (one value a run, no spread), "
        "every reference unchanged: diff against the baseline must not exit 0", post=_diff_post_fr)
def n27_06(r):
    for s in M(r, "FR-003")["scenarios"].values():
        s["elapsed_s"] = round(s["elapsed_s"] * 1.6, 3)


# ------------------------------------------------------------------------------------------- round 31
# Release 0.1.0+data.26: the seconds the recovery judges leave to Ray (left_to_ray: released_s,
# started_s, crash_waited_s, retried_s, registered_s; a scenario's steps_s.excluded_s) and PF-002's
# merit reference object_store_gbps, which diff reads as a witness of the host.
def _longer(r: dict[str, Any], cid: str, seconds: float) -> None:
    """The check's and the run's durations, and the run's end, `seconds` later (junit re-synced by
    the harness), so the run's window still holds its checks."""
    from datetime import datetime, timedelta
    c = find(r, cid)
    c["duration_s"] = round(c["duration_s"] + seconds, 3)
    r["duration_s"] = round(r["duration_s"] + seconds, 3)
    end = datetime.fromisoformat(r["finished_at"]) + timedelta(seconds=seconds)
    r["finished_at"] = end.isoformat()


def _scenario_later(m: dict[str, Any], seconds: float, after: str | None = None, excluded: float = 0.0) -> None:
    """Every scenario of `m` `seconds` longer from its step `after` on (every step when None), its
    plugin wait likewise; `excluded` more seconds left to Ray in both (the bound grows by them)."""
    for name, sc in m["scenarios"].items():
        steps = sc["steps_s"]
        later = False if after else True
        for k in list(steps):
            if k == "excluded_s":
                continue
            later = later or k == after
            if later:
                steps[k] = round(steps[k] + seconds, 3)
        sc["elapsed_s"] = round(sc["elapsed_s"] + seconds, 3)
        if excluded:
            steps["excluded_s"] = round(steps["excluded_s"] + excluded, 3)
            sc["bound_s"] = sc["bound_s"] + excluded
        for w in m["waits"]["each"]:
            if w["owner"] == "plugin" and w["what"] == name:
                w["took_s"] = round(w["took_s"] + seconds, 3)
                if excluded:
                    w["excluded_s"] = round(w["excluded_s"] + excluded, 3)
                    w["granted_s"] = round(w["granted_s"] + excluded, 3)


def _on_node_records(m: dict[str, Any]) -> list[dict[str, Any]]:
    """The top-level record and its own node's per_node copy (the judge reads both)."""
    return [m, m["per_node"][m["node"]]] if m.get("per_node") else [m]


@attack("N31_01_fr002_crash_slow_left_to_ray", "FR-002: the crashing holder's call failed only after 100 s (bound "
        "device_release_s 30 s: the plugin's crash path hung); crash_waited_s raised to cover it as 'Ray's machinery' "
        "(within the judge's widest x6 + 60 s), metrics.waits untouched (Ray's crash wait took 0.2 s)")
def n31_01(r):
    m = M(r, "FR-002")
    for rec in _on_node_records(m):
        rec["crash_error_s"] = round(rec["crash_error_s"] + 100.0, 3)
        rec["crash_waited_s"] = round(rec["crash_waited_s"] + 99.9, 3)
    _scenario_later(m, 100.0, after="device released")
    _longer(r, "FR-002", 100.0)


@attack("N31_02_fr005_retry_slow_left_to_ray", "FR-005: the retried task returned after 90 s (bound actor_ready_s 60 s: "
        "the plugin's manager slow to hand the device over); retried_s raised to cover it, metrics.waits untouched "
        "(Ray's retry wait took 0.44 s)")
def n31_02(r):
    m = M(r, "FR-005")
    for rec in _on_node_records(m):
        rec["retry_done_s"] = round(rec["retry_done_s"] + 90.0, 3)
        rec["retried_s"] = round(rec["retried_s"] + 89.9, 3)
    _scenario_later(m, 90.0)
    _longer(r, "FR-005", 90.0)


@attack("N31_03_fr011_rejoin_slow_left_to_ray", "FR-011: the rejoined node advertised as before only after 150 s "
        "(bound rejoin_s 60 + view_settle_s 10: the plugin's node agent slow); registered_s raised to cover it as "
        "Ray's registration, metrics.waits untouched (Ray's registration wait took 1.2 s)")
def n31_03(r):
    m = M(r, "FR-011")
    m["rejoin_s"] = round(m["rejoin_s"] + 149.0, 3)
    m["alive_s"] = round(m["alive_s"] + 149.0, 3)
    m["registered_s"] = round(m["registered_s"] + 148.9, 3)
    for name, sc in m["scenarios"].items():
        sc["elapsed_s"] = round(sc["elapsed_s"] + 149.0, 3)
        sc["steps_s"]["excluded_s"] = round(sc["steps_s"]["excluded_s"] + 148.9, 3)
        sc["bound_s"] += 148.9
        for w in m["waits"]["each"]:
            if w["owner"] == "plugin" and w["what"] == name:
                w.update(took_s=round(w["took_s"] + 149.0, 3), excluded_s=round(w["excluded_s"] + 148.9, 3),
                         granted_s=round(w["granted_s"] + 148.9, 3))
    _longer(r, "FR-011", 149.0)


@attack("N31_04_fr003_scenario_excluded_unbacked", "FR-003: the restart scenario took 306 s (bound 210 s: the plugin's "
        "audit calls hung between the restarts, each restart within actor_ready_s); the scenario's and its plugin "
        "wait's excluded_s raised by 100 s (bound_s/granted_s with them), no wait on Ray spent them")
def n31_04(r):
    m = M(r, "FR-003")
    _scenario_later(m, 300.0, after="restarted after kill", excluded=100.0)
    m["restart_after_kill_s"] = round(m["restart_after_kill_s"] + 300.0, 3)
    for rec in m["per_node"].values():
        if "restart_after_kill_s" in rec:
            rec["restart_after_kill_s"] = round(rec["restart_after_kill_s"] + 300.0, 3)
    _longer(r, "FR-003", 300.0)


def _pf002_regressed(r: dict[str, Any], factor: float = 0.6) -> None:
    """The transport's largest size `factor` as fast, in PF-001's row, PF-002 and PF-003 alike (one
    measurement recorded three times, every derived figure recomputed)."""
    sweep, link, store = M(r, "PF-001"), M(r, "PF-002"), M(r, "PF-003")
    top = max(sweep["sizes_bytes"])
    from conformance.rdt.config import size_key
    row = sweep["bandwidth"][size_key(top)]
    trials = [t * factor for t in row["trials_gbps"]]
    med = statistics.median(trials)
    row.update(trials_gbps=trials, median_gbps=med, min_gbps=min(trials), max_gbps=max(trials),
               iqr=[x * factor for x in row["iqr"]])
    if row.get("clone_median_gbps"):
        row["ratio_to_clone"] = med / row["clone_median_gbps"]
    if row.get("object_store_median_gbps"):
        row["ratio_to_object_store"] = med / row["object_store_median_gbps"]
    link.update(largest_size_trials_gbps=trials, largest_size_gbps=med, achieved_fraction=med / link["reference_gbps"])
    if store.get("bytes") == top:
        store.update(rdt_trials_gbps=trials, rdt_gbps=med, ratio_to_object_store=med / store["object_store_gbps"])


def _diff_post_pf002(out: Path, text: str) -> str:
    return _diff_against_baseline(out, "PF-002")


@attack("N31_05c_diff_pf002_regression_control", "control: the transport's largest size 40 % slower (PF-001's row, "
        "PF-002, PF-003 alike): diff against the baseline must call PF-002 a regression", post=_diff_post_pf002)
def n31_05c(r):
    _pf002_regressed(r)


@attack("N31_05_diff_pf002_hidden_by_object_store_gbps", "N31_05c's regression, plus PF-002's object_store_gbps (a "
        "merit reference: the 'host's shared-memory path') lowered x0.55 in PF-002 alone (PF-001's row and PF-003 "
        "keep the run's object store): diff calls PF-002 the host's", post=_diff_post_pf002)
def n31_05(r):
    _pf002_regressed(r)
    M(r, "PF-002")["object_store_gbps"] *= 0.55


@attack("N31_06_diff_pf004_excused_by_pf003_store", "N25_16's PF-004 regression (UNCONFIRMED, exit 3), plus PF-003's "
        "object_store_gbps lowered x0.4 (its object_store_trials_gbps and PF-001's row kept): the pair's host change "
        "x2.5 excuses PF-004 as the host's", post=_diff_post)
def n31_06(r):
    _pf004_regressed(r)
    m = M(r, "PF-003")
    m["object_store_gbps"] *= 0.4
    m["ratio_to_object_store"] = m["rdt_gbps"] / m["object_store_gbps"]


@attack("N31_07_diff_pf004_excused_by_pf001_store_median", "N25_16's PF-004 regression, plus PF-001's 16KiB "
        "object_store_median_gbps lowered x0.4 (its object_store_trials_gbps kept): the host change excuses PF-004",
        post=_diff_post)
def n31_07(r):
    _pf004_regressed(r)
    row = M(r, "PF-001")["bandwidth"]["16KiB"]
    row["object_store_median_gbps"] *= 0.4
    row["ratio_to_object_store"] = row["median_gbps"] / row["object_store_median_gbps"]


@attack("N31_08_diff_pf004_excused_by_clone_median", "limit?: N25_16's PF-004 regression, plus PF-001's 16KiB "
        "clone_median_gbps (the host copy: no trials recorded) lowered x0.4: the host change excuses PF-004",
        post=_diff_post)
def n31_08(r):
    _pf004_regressed(r)
    row = M(r, "PF-001")["bandwidth"]["16KiB"]
    row["clone_median_gbps"] *= 0.4
    row["ratio_to_clone"] = row["median_gbps"] / row["clone_median_gbps"]


@attack("N31_08b_diff_pf004_excused_by_clone_median_trials_dropped", "N31_08 on a release whose sweep records the "
        "host copy's trials: the 16KiB clone_median_gbps lowered x0.4 and every size's clone_trials_gbps deleted (a "
        "summary without samples, which the reference rule skips for old releases)", post=_diff_post)
def n31_08b(r):
    n31_08(r)
    for row in M(r, "PF-001")["bandwidth"].values():
        row.pop("clone_trials_gbps", None)


@attack("N31_09_diff_pf004_excused_by_cc010_host_copy", "N25_16's PF-004 regression, plus CC-010's top-level "
        "host_copy_gbps (a merit reference) lowered x0.4 (every row keeps the run's host copy; host_fraction "
        "recomputed): the host change excuses PF-004", post=_diff_post)
def n31_09(r):
    _pf004_regressed(r)
    m = M(r, "CC-010")
    m["host_copy_gbps"] *= 0.4
    m["host_fraction"] = m["busbw_gbps"] / m["host_copy_gbps"]


@attack("N31_10_diff_pf004_excused_by_wl001_store_median", "N25_16's PF-004 regression, plus WL-001's simacc "
        "median_store_round_seconds (a merit reference) x2.5 (its store_round_seconds kept, the speedup "
        "recomputed): the host change excuses PF-004", post=_diff_post)
def n31_10(r):
    _pf004_regressed(r)
    rec = M(r, "WL-001")["devices"]["simacc"]
    rec["median_store_round_seconds"] = round(rec["median_store_round_seconds"] * 2.5, 4)
    rec["object_store_speedup"] = round(rec["object_store_speedup"] * 2.5, 3)


@attack("N31_05b_diff_pf002_pf003_store_forged_consistently", "limit: N31_05c's regression, plus Ray's object store "
        "at the largest size lowered x0.55 wherever it is recorded (PF-001's row trials and median, PF-002's "
        "object_store_gbps, PF-003's trials and median, ratios recomputed): a measurement forged consistently",
        post=_diff_post_pf002)
def n31_05b(r):
    _pf002_regressed(r)
    from conformance.rdt.config import size_key
    sweep, link, store = M(r, "PF-001"), M(r, "PF-002"), M(r, "PF-003")
    row = sweep["bandwidth"][size_key(max(sweep["sizes_bytes"]))]
    trials = [t * 0.55 for t in row["object_store_trials_gbps"]]
    med = statistics.median(trials)
    row.update(object_store_trials_gbps=trials, object_store_median_gbps=med, ratio_to_object_store=row["median_gbps"] / med)
    link["object_store_gbps"] = med
    store.update(object_store_trials_gbps=trials, object_store_gbps=med, ratio_to_object_store=store["rdt_gbps"] / med)


@attack("N31_11_diff_pf004_excused_by_cc010_star", "N25_16's PF-004 regression, plus CC-010's top-level star_busbw_gbps "
        "(a merit reference) lowered x0.4 (star_rows keep the run's star; star_fraction recomputed): the host change "
        "excuses PF-004", post=_diff_post)
def n31_11(r):
    _pf004_regressed(r)
    m = M(r, "CC-010")
    m["star_busbw_gbps"] *= 0.4
    m["star_fraction"] = m["star_op_busbw_gbps"] / m["star_busbw_gbps"]


@attack("N31_12_cc010_op_excluded_unbacked", "CC-010: one 16 MiB allreduce took 100 s of its 60 s op_bound_s (the backend "
        "hung); its plugin wait records excluded_s 45 s 'left to Ray' and granted_s 105 (bound + exclusion), no wait on "
        "Ray spent them (CC-010 records no scenario, so no rule compared the exclusion)")
def n31_12(r):
    m = M(r, "CC-010")
    w = next(w for w in m["waits"]["each"] if w["owner"] == "plugin" and w["what"] == "allreduce of 16777216 bytes")
    w.update(took_s=100.0, excluded_s=45.0, granted_s=105.0)
    _longer(r, "CC-010", 100.0)


@attack("N31_13_fr002_invented_ray_waits", "limit: N31_01 plus four waits on Ray invented to back crash_waited_s ('the "
        "crashing holder's call on node ... to fail', device_release_s, each 29.9 s of its 30 s grant; count raised): "
        "the record of which waits a check makes is the run's word")
def n31_13(r):
    n31_01(r)
    m = M(r, "FR-002")
    node = m["node"]
    for k in range(4):
        m["waits"]["each"].append({"bound_s": 30.0, "factor": 1.0, "granted_s": 30.0, "owner": "ray",
                                   "param": "device_release_s", "took_s": 29.9, "verdict": "met",
                                   "what": f"the crashing holder's call on node {node} to fail"})
    m["waits"]["count"] += 4


# =========================================================================================== round 38
# N38_: held-out round 38 against 0.1.0+data.32's reports/example (the warm pool's handover records of
# TR-015..TR-020, PF-004 on the vendor's cluster, host.left_behind.cluster_kept, the release window and
# the verifier's clock, the typed report view). results-rt38.txt, FINDINGS.md "Round 38".
import os as _os
import time as _time
from datetime import datetime as _dt, timedelta as _td

USAGE = ("TR-015", "TR-016", "TR-017", "TR-018", "TR-019", "TR-020")
LEAK = "SIMACC_VISIBLE_DEVICES changed from '0' to '0,1'"


def _bump_run(r, secs: float) -> None:
    """The run's end moved later by secs (so a longer check still fits its window)."""
    r["finished_at"] = (_dt.fromisoformat(r["finished_at"]) + _td(seconds=secs)).isoformat()
    r["duration_s"] = round(r["duration_s"] + secs, 3)


def _remote_args(r) -> None:
    r["selection"]["args"] = list(r["selection"]["args"]) + ["--conformance-ray-address=auto"]


def _history_without(r, key: str) -> None:
    for e in r["cluster"]["history"]:
        e.pop(key, None)


@attack("N38_01_handover_leak_moved_to_why_stopped",
        "TR-016 on simacc: the borrower changed the actor's SIMACC_VISIBLE_DEVICES (a leak: the actor stopped); the record "
        "keeps stopped=1 but lists the leak under why_stopped, leaks []")
def n38_01(r):
    h = M(r, "TR-016")["simacc"]["handover"][0]
    h["returned"], h["stopped"], h["leaks"] = 1, 1, []
    h["why_stopped"] = [LEAK]


@attack("N38_02_handover_leak_control", "control: TR-016 on simacc records the leak in handover.leaks")
def n38_02(r):
    h = M(r, "TR-016")["simacc"]["handover"][0]
    h["returned"], h["stopped"], h["leaks"] = 1, 1, [LEAK]


@attack("N38_03_handover_and_warm_pool_dropped",
        "TR-015..TR-020: every type's metrics.handover and metrics.warm_pool deleted (a leak on any give-back hidden)")
def n38_03(r):
    for cid in USAGE:
        for d in ("simacc", "cpu"):
            M(r, cid)[d].pop("handover", None)
            M(r, cid)[d].pop("warm_pool", None)


@attack("N38_04_warm_pool_zeroed_handover_dropped",
        "TR-016 on simacc: the leaking give-back's record deleted and warm_pool set to lent 0, born 0 (the scenario ran "
        "on 2 actors all the same)")
def n38_04(r):
    m = M(r, "TR-016")["simacc"]
    m.pop("handover")
    m["warm_pool"] = {"lent": 0, "born": 0}


@attack("N38_05_handover_empty_list_beside_lent",
        "TR-016 on simacc: handover [] (no give-back recorded) while warm_pool says 2 actors were lent")
def n38_05(r):
    M(r, "TR-016")["simacc"]["handover"] = []


@attack("N38_06_handover_leaks_falsy_types",
        "TR-016: leaks as {} on simacc and false on cpu, the leak's text moved to a 'leak' field beside them")
def n38_06(r):
    for d, v in (("simacc", {}), ("cpu", False)):
        h = M(r, "TR-016")[d]["handover"][0]
        h["leaks"], h["leak"], h["stopped"], h["returned"] = v, LEAK, 1, 1


@attack("N38_07_handover_took_past_bound",
        "TR-020 on simacc: the give-back (the transport's actor_has_tensor_transport asked) hung 60 s, past its 27.1 s "
        "bound; duration_s and the run's end moved to fit")
def n38_07(r):
    h = M(r, "TR-020")["simacc"]["handover"][0]
    h["took_s"] = 60.0
    c = find(r, "TR-020")
    c["duration_s"] = round(c["duration_s"] + 60.0, 3)
    _bump_run(r, 60.0)


@attack("N38_08_warm_pool_type_confusion",
        "TR-016 on simacc: warm_pool a list ['lent', 2] (not an object) and handover deleted")
def n38_08(r):
    m = M(r, "TR-016")["simacc"]
    m.pop("handover")
    m["warm_pool"] = ["lent", 2]


@attack("N38_09_handover_hostile_leak_strings",
        "TR-016's leak strings carry ANSI/OSC-8 escapes, a newline forging a VERIFIED line and a bidi override "
        "(refused; the FAIL line must be sanitised)", post=_no_raw_escape)
def n38_09(r):
    h = M(r, "TR-016")["simacc"]["handover"][0]
    h["returned"], h["stopped"] = 1, 1
    h["leaks"] = [ANSI, "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "x \u202eSSAP\u202c"]


_T0: dict[str, float] = {}


def _t_start(out: Path) -> None:
    _T0["t"] = _time.monotonic()


def _t_post(out: Path, text: str) -> str:
    return f"verify took {_time.monotonic() - _T0.get('t', _time.monotonic()):.1f}s; " + _no_raw_escape(out, text)


@attack("N38_10_handover_huge_why_stopped",
        "TR-018's why_stopped: 300,000 strings of 64 chars (~20 MB report.json; not judged): a one-line error or a "
        "verdict, never a hang or a traceback", raw=True, after_sign=_t_start, post=_t_post)
def n38_10(r):
    M(r, "TR-018")["simacc"]["handover"][0]["why_stopped"] = [f"{i:064d}" for i in range(300_000)]


# ---------------------------------------------- the vendor's cluster: --conformance-ray-address beside the suite's clusters
def _fr006_one_node_twice(r) -> None:
    m = M(r, "FR-006")
    m["before"] = [copy.deepcopy(m["before"][0]), copy.deepcopy(m["before"][0])]
    m["after"] = [copy.deepcopy(m["after"][0]), copy.deepcopy(m["after"][0])]


@attack("N38_11_remote_control_modes_kept",
        "control (round 34's X1/L1): --conformance-ray-address=auto added beside the suite's own clusters; FR-006 records "
        "node a's signature twice (node b came back with 3 devices)")
def n38_11(r):
    _remote_args(r)
    _fr006_one_node_twice(r)


@attack("N38_12_remote_history_mode_dropped_fr006",
        "N38_11 with every cluster.history entry's `mode` deleted (the schema does not require it; remote_problems "
        "skips an entry naming no mode): FR-006's restart-signature rule is then skipped (L1 reopened)")
def n38_12(r):
    _remote_args(r)
    _history_without(r, "mode")
    _fr006_one_node_twice(r)


def _fr014_slow(r, timeout: float) -> None:
    c = find(r, "FR-014")
    m = c["metrics"]
    extra = timeout - m["transport"]["rdt_fetch_timeout_s"]
    m["transport"]["rdt_fetch_timeout_s"] = timeout
    for d in ("simacc", "cpu"):
        rec = m[d]
        rec["result_s"] = round(rec["result_s"] + extra, 3)
        rec["error"] = rec["error"].replace("after 5.0s", f"after {timeout:.1f}s")
        sc = m["scenarios"][f"receive-held-past-fetch-timeout on {d}"]
        sc["elapsed_s"] = round(sc["elapsed_s"] + extra, 3)
        sc["steps_s"]["abort_transport seen"] = round(sc["steps_s"]["abort_transport seen"] + extra, 3)
    for w in m["waits"]["each"]:
        if w.get("owner") == "plugin":
            w["took_s"] = round(w["took_s"] + extra, 3)
    c["duration_s"] = round(c["duration_s"] + 2 * extra, 3)
    _bump_run(r, 2 * extra)


@attack("N38_13_remote_history_ok_dropped_fr014",
        "every cluster.history entry's `ok` deleted (remote_problems reads only ok: true entries) beside "
        "--conformance-ray-address: FR-014 ran with a 25 s RDT fetch timeout (param 5 s; x5, inside MAX_FACTOR) and "
        "failed its fetch only after 25 s (round 34's X1 reopened)")
def n38_13(r):
    _remote_args(r)
    _history_without(r, "ok")
    _fr014_slow(r, 25.0)


@attack("N38_13c_fr014_slow_control", "control: N38_13's FR-014 on a cluster the suite started (history untouched, no remote)")
def n38_13c(r):
    _fr014_slow(r, 25.0)


def _pf004_one_node(r) -> None:
    m = M(r, "PF-004")
    idx = [i for i, x in enumerate(m["endpoints"]) if x.startswith("n0:")]
    m["endpoints"] = [m["endpoints"][i] for i in idx]
    m["matrix_gbps"] = [[m["matrix_gbps"][i][j] for j in idx] for i in idx]
    vals = [v for row in m["matrix_gbps"] for v in row if v is not None]
    med = statistics.median(vals)
    m["links"] = {"same_node": {"median_gbps": med, "min_gbps": min(vals), "min_fraction": min(vals) / med}}
    m["rechecked_gbps"] = {}


@attack("N38_14_remote_mode_dropped_pf004_one_node",
        "PF-004's matrix on node n0 alone (4 endpoints: the slow cross-node link never timed), the run claimed on the "
        "vendor's cluster by --conformance-ray-address with history entries' `mode` deleted")
def n38_14(r):
    _remote_args(r)
    _history_without(r, "mode")
    _pf004_one_node(r)


@attack("N38_15_remote_honest_form_pf004_one_node",
        "a run in the remote form (history: the shared cluster, mode remote, alone) whose environment.devices lists 2 "
        "nodes of 4 devices; PF-004's matrix on n0 alone (remote_matrix_problem: k=1 node, 4 endpoints = every unit)")
def n38_15(r):
    _remote_args(r)
    r["cluster"]["history"] = [{"shape": "shared", "mode": "remote", "ok": True, "nodes": 2, "start_s": 0.5, "stop_s": 0.0}]
    r["cluster"]["mode"] = "remote"
    _pf004_one_node(r)


@attack("N38_15c_pf004_one_node_control", "control: PF-004's matrix on n0 alone on a cluster the suite started")
def n38_15c(r):
    _pf004_one_node(r)


# ---------------------------------------------- host.left_behind.cluster_kept
def _md_html_clean(out: Path, text: str) -> str:
    md = (out / "report.md").read_text()
    bad = [s for s in ("\x1b", "<img", "javascript:", "\u202e") if s in md]
    return ("report.md contains " + ", ".join(map(repr, bad)) + "; " if bad else "report.md clean; ") + _html_clean(out, text)


@attack("N38_16_cluster_kept_on_own_cluster",
        "a run on the suite's own cluster left 3 Ray processes and 2 /dev/shm segments; left_behind says none and "
        "host.left_behind.cluster_kept says the vendor's cluster keeps them (report.md: 'not counted as left')")
def n38_16(r):
    r["host"]["left_behind"]["cluster_kept"] = {
        "ray_processes": [{"pid": 4101, "kind": "raylet"}, {"pid": 4102, "kind": "gcs_server"}, {"pid": 4177, "kind": "core_worker"}],
        "shm_entries_held": ["plasma-4101-0", "simxfer-7f3a"], "shm_entries_held_count": 2}
    r["host"]["after"]["ray_processes"] = 3


@attack("N38_17_left_behind_hostile_shapes",
        "host.left_behind: ray_processes [1, 'x'], files_left [7] with files_left_count 1, cluster_kept.ray_processes "
        "[1, {pid}], shm_entries_held 5 (shapes the schema leaves open; report.md cannot be rendered from them)", raw=True)
def n38_17(r):
    lb = r["host"]["left_behind"]
    lb["ray_processes"] = [1, "x"]
    lb["files_left"], lb["files_left_count"] = [7], 1
    lb["cluster_kept"] = {"ray_processes": [1, {"pid": 2}], "shm_entries_held": 5, "shm_entries_held_count": "x"}


@attack("N38_18_cluster_kept_injection",
        "host.left_behind.cluster_kept carries HTML, a markdown link, ANSI/OSC-8 escapes and a bidi override "
        "(report.md and report.html must escape them)", post=_md_html_clean)
def n38_18(r):
    r["host"]["left_behind"]["cluster_kept"] = {
        "ray_processes": [{"pid": "<img src=x onerror=alert(1)>", "kind": "[x](javascript:alert(2))"}],
        "shm_entries_held": ["\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "x \u202eSSAP\u202c"],
        "shm_entries_held_count": 2}


@attack("N38_19_cluster_kept_huge_int",
        "host.left_behind.cluster_kept.shm_entries_held_count a 5000-digit integer (Python's int-from-text limit is 4300 digits)",
        raw=True)
def n38_19(r):
    import sys
    sys.set_int_max_str_digits(0)
    r["host"]["left_behind"]["cluster_kept"] = {"ray_processes": [], "shm_entries_held": ["a"], "shm_entries_held_count": 10 ** 5000}


# ---------------------------------------------- the verifier's clock and the release window
def _clock(value: str):
    def set_(out: Path) -> None:
        _os.environ["CONFORMANCE_VERIFY_NOW"] = value

    def unset(out: Path, text: str) -> str:
        _os.environ.pop("CONFORMANCE_VERIFY_NOW", None)
        lines = [ln for ln in text.splitlines() if "CONFORMANCE_VERIFY_NOW" in ln or "error" in ln.lower()]
        return (lines[0][:160] if lines else "no clock line") + ("; traceback" if "Traceback" in text else "")
    return set_, unset


_c20 = _clock("9999-12-31T23:59:59-23:59")
_c21 = _clock("0001-01-01T00:00:00+23:59")
_c22 = _clock("\uff12\uff10\uff12\uff16-12-07T12:00:00Z")
_c22b = _clock("2026-12-07T12:00:00+24:00")


@attack("N38_20_clock_past_year_9999", "the SIG's CONFORMANCE_VERIFY_NOW=9999-12-31T23:59:59-23:59 (UTC is in year 10000)",
        after_sign=_c20[0], post=_c20[1])
def n38_20(r):
    pass


@attack("N38_21_clock_before_year_1", "CONFORMANCE_VERIFY_NOW=0001-01-01T00:00:00+23:59 (UTC is in year 0)",
        after_sign=_c21[0], post=_c21[1])
def n38_21(r):
    pass


@attack("N38_22_clock_fullwidth_digits", "CONFORMANCE_VERIFY_NOW with fullwidth digits (the pattern's \\d matches them)",
        after_sign=_c22[0], post=_c22[1])
def n38_22(r):
    pass


@attack("N38_22b_clock_offset_24h", "CONFORMANCE_VERIFY_NOW=2026-12-07T12:00:00+24:00 (an offset past a day)",
        after_sign=_c22b[0], post=_c22b[1])
def n38_22b(r):
    pass


def _relabel(r, version: str) -> None:
    import yaml
    from conformance.catalog import data, datafiles
    rel = yaml.safe_load((datafiles.data_root() / "tiers" / "releases.yaml").read_text())["releases"][version]
    r["suite"]["version"] = version
    for k in ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256"):
        if k in rel:
            r["suite"][k] = rel[k]
    cl = data.load_checklist(datafiles.data_root() / "tiers" / "releases" / version / "checklist.yaml")
    by = cl.by_id()
    for c in r["checks"]:
        e = by.get(c["id"])
        if e is not None:
            c["params"] = dict(e.params)
            c["title"], c["area"], c["level"] = e.title, e.area, e.level


def _wl001_plugin_waits_dropped(r) -> None:
    w = M(r, "WL-001")["waits"]
    w["each"] = [x for x in w["each"] if x.get("owner") != "plugin"]
    w["count"] = len(w["each"])


@attack("N38_23_relabel_data29_plugin_waits_dropped",
        "the run relabelled 0.1.0+data.29 (published the same day; superseded by data.30 on 2026-12-07, inside the 14-day "
        "grace on today's clock), WL-001's plugin waits dropped (W3/W4: its time unjudged)")
def n38_23(r):
    _relabel(r, "0.1.0+data.29")
    _wl001_plugin_waits_dropped(r)


@attack("N38_23c_plugin_waits_dropped_control", "control: WL-001's plugin waits dropped under data.32")
def n38_23c(r):
    _wl001_plugin_waits_dropped(r)


@attack("N38_23d_relabel_data29_after_window",
        "N38_23 verified on the SIG's clock of 2026-12-21 (data.30 published 2026-12-07 + 14 days)",
        after_sign=_clock("2026-12-21T00:00:00Z")[0], post=_clock("x")[1])
def n38_23d(r):
    n38_23(r)


# ---------------------------------------------- the typed view: duplicates, nulls, type confusion
def _dup_outcome(out: Path) -> None:
    text = (out / "report.json").read_text()
    anchor = '"id": "TR-001",\n'
    i = text.index(anchor) + len(anchor)
    indent = text[text.rindex("\n", 0, i - 1) + 1:text.index('"id"', i - len(anchor))]
    (out / "report.json").write_text(text[:i] + indent + '"outcome": "fail",\n' + text[i:])


@attack("N38_24_duplicate_key_outcome",
        "report.json states TR-001's outcome twice: \"fail\" first, \"pass\" after (Python keeps the last; a reader "
        "keeping the first sees a failure)", after=_dup_outcome, raw=True)
def n38_24(r):
    pass


def _dup_tier(out: Path) -> None:
    text = (out / "report.json").read_text()
    (out / "report.json").write_text(text.replace('\n  "tier": "stable",', '\n  "tier": "none",\n  "tier": "stable",', 1))


@attack("N38_24b_duplicate_key_tier", "report.json states the tier twice: none, then stable", after=_dup_tier, raw=True)
def n38_24b(r):
    pass


@attack("N38_25_whole_checklist_collected_dropped",
        "selection.whole_checklist_collected deleted (optional in the schema; the typed view reads None)")
def n38_25(r):
    r["selection"].pop("whole_checklist_collected")


@attack("N38_26_env_node_twice_fr006",
        "environment.devices.nodes lists node a twice (node b dropped) and FR-006 records node a's signature twice: the "
        "one list the L1 rule compares with agrees")
def n38_26(r):
    nodes = r["environment"]["devices"]["nodes"]
    a = next(n for n in nodes if n["labels"]["ray.io/accelerator-domain"] == "simlink-a")
    r["environment"]["devices"]["nodes"] = [copy.deepcopy(a), copy.deepcopy(a)]
    m = M(r, "FR-006")
    m["before"] = [copy.deepcopy(m["before"][0]), copy.deepcopy(m["before"][0])]


@attack("N38_27_check_reason_number", "TR-015's reason a number (0) and TR-016's tests null beside a pass (type confusion)",
        raw=True)
def n38_27(r):
    find(r, "TR-015")["reason"] = 0
    find(r, "TR-016")["tests"] = None


# ---------------------------------------------- generic classes on the usage checks
@attack("N38_28_data_step_with_error",
        "TR-015 on simacc: a data step ('killed before the transfer: the same object sent to a new receiver') records "
        "error 'AssertionError: received tensor differs from the sent one' beside ok: true")
def n38_28(r):
    s = M(r, "TR-015")["simacc"]["steps"][1]
    s["error"] = "AssertionError: received tensor differs from the sent one"


@attack("N38_29_type_record_copied", "TR-017: the cpu record (steps, scenario, handover, warm_pool) copied over simacc's")
def n38_29(r):
    m = M(r, "TR-017")
    m["simacc"] = copy.deepcopy(m["cpu"])


@attack("N38_30_step_bound_raised_control", "control: TR-015's receiver-killed step bounded by 60 s (release: 30 s)")
def n38_30(r):
    M(r, "TR-015")["simacc"]["steps"][0]["bound_s"] = 60.0


@attack("N38_31_handover_absorbs_scenario_time",
        "TR-019 on simacc: its scenario ran 40 s past scenario_bound_s less its excluded time; the forger moves those "
        "seconds out of the scenario into the handover's took_s (not judged, no wait)")
def n38_31(r):
    m = M(r, "TR-019")["simacc"]
    h = m["handover"][0]
    h["took_s"] = round(h["took_s"] + 40.0, 3)
    c = find(r, "TR-019")
    c["duration_s"] = round(c["duration_s"] + 40.0, 3)
    _bump_run(r, 40.0)


@attack("N38_32_warm_pool_lent_without_giver",
        "TR-016 on cpu says 2 actors were lent, but no earlier check gave any cpu actor back (TR-015's cpu handover "
        "returned 0, stopped 4): the pool's tally does not add up across checks")
def n38_32(r):
    h = M(r, "TR-015")["cpu"]["handover"][0]
    h["returned"], h["stopped"] = 0, 4
    h["why_stopped"] = sorted(set(h.get("why_stopped", [])) | {"gone: ActorDiedError"})


@attack("N38_15b_remote_one_node_consistently",
        "N38_15 with the cluster described as one node everywhere it is stated (environment.devices.nodes node b "
        "dropped, total 4; shape.nodes, preflight.nodes, cluster.nodes, history 1): PF-004's n0 matrix then agrees")
def n38_15b(r):
    n38_15(r)
    dev = r["environment"]["devices"]
    dev["nodes"] = dev["nodes"][1:]
    dev["total"] = 4.0
    r["shape"]["nodes"] = 1
    r["preflight"]["nodes"] = 1
    r["cluster"]["nodes"] = 1
    r["cluster"]["history"][0]["nodes"] = 1
