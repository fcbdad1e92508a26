"""Reports for the page tests: a real run's report, and a failing one made from it.

The failing report carries what a hostile or broken submission could: markup, ANSI escapes and
bidi controls in every kind of outside string, `javascript:` and absolute-path links, missing
sections, an interrupted run, failed and errored checks with log excerpts, and the `next_steps`
and `log_excerpt`/`log_files` fields that runs add.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

# a real 2-node run (the example of release 0.1.0+data.6, kept as it was: the page tests count
# its pictures and edit its sections; reports/example is regenerated with each release)
EXAMPLE = Path(__file__).resolve().parent / "real_run_data6" / "report.json"
HOSTILE = "<script>alert('x')</script><img src=https://example.invalid/t.png>\x1b[32mPASS\x1b[0m\u202eevil"


def example_report() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def failing_report() -> dict[str, Any]:
    r = copy.deepcopy(example_report())
    r["manifest"]["vendor"] = "Nimbus <b>Compute</b>\x1b[2J"
    r["manifest"]["product"] = "N1 " + HOSTILE
    by_id = {c["id"]: c for c in r["checks"]}
    dp8 = by_id["DP-008"]
    dp8.update(outcome="fail", reason="WorkerCrashedError: the worker died " + HOSTILE,
               log_excerpt=("Failed to preload the module \"conformance.cluster.inject_autoinstall\"\n"
                            "Traceback (most recent call last):\n  ...\n"
                            "ModuleNotFoundError: No module named 'nimbus_sdk'\n" + HOSTILE),
               log_files=["logs/DP-008/worker-01.err", "javascript:alert(1)", "/home/vendor/secret.log"])
    by_id["TR-004"].update(outcome="error", reason="OutOfMemoryError: object store full")
    by_id["DP-015"].update(outcome="not_applicable", reason="not applicable: needs >= 3 devices per node")
    by_id["TL-006"].update(outcome="skip", reason="skipped: no domain labels")
    for t in r["tiers"]:
        t["achieved"] = False
    r["tiers"][0]["blocking"] = [{"id": "DP-008", "outcome": "fail"}]
    r["tiers"][1]["blocking"] = [{"id": "TR-004", "outcome": "error"}]
    r["tiers"][1]["below"] = "experimental"
    r["tiers"][2]["conditions"][-1].update(met=False, detail="6/9 SHOULD checks passed (67%); needs >= 80%")
    r["tier"] = None
    r["summary"] = {"pass": 59, "fail": 1, "error": 1, "not_applicable": 1, "skip": 1, "waived": 1}
    r["interrupted"] = True
    r["interrupted_reason"] = "hung: TR-004 " + HOSTILE
    del r["sections"]["Transport"]
    del r["sections"]["Topology"]
    scenarios = r["sections"]["Recovery"]["data"]["scenarios"]
    scenarios[0].update(outcome="fail", elapsed_s=171.2, detail="exceeded the bound " + HOSTILE)
    r["next_steps"] = {
        "next_tier": "experimental",
        "blocking": [
            {"id": "DP-008", "level": "MUST", "requirement": "A one-device task sees exactly its one id",
             "doc": "docs/checks.md#dp-008", "action": "make the manager importable in Ray workers " + HOSTILE},
            {"id": "TR-004", "level": "MUST", "requirement": "transfers survive memory pressure",
             "doc": "javascript:alert(1)", "action": "free /dev/shm"},
        ],
        "shape_ceiling": {"tier": "beta", "reason": "2 devices per node: DP-015 needs >= 3"},
    }
    return r


def write_submissions(root: Path) -> tuple[Path, Path, Path]:
    """A review folder: a signed honest submission, a signed one claiming a tier its results do not
    give, an unsigned one whose vendor string is hostile and whose failed check has a log file, and
    one whose report.json is broken. Returns (submissions folder, releases file, keyring file)."""
    from conformance.catalog.ladder import required_checks
    from conformance.signing import keys
    from conformance.signing.sign import sign_report_dir
    from signing_support import build_report, check_ids, suite, write_releases, write_report_dir

    pair = keys.write_keypair(root / "keys")
    releases = write_releases(root / "releases.yaml")
    subs = root / "subs"
    write_report_dir(subs / "a-honest", build_report())
    s = suite()
    inflated = build_report({required_checks(s.ladder.tiers[0], s.checklist)[0]: "fail"})
    inflated["tier"] = s.ladder.names()[-1]
    write_report_dir(subs / "b-inflated", inflated)
    hostile = build_report({check_ids()[0]: "fail"})
    hostile["manifest"]["vendor"] = "Evil " + HOSTILE
    hostile["checks"][0]["log_files"] = ["logs/first/worker.err"]
    write_report_dir(subs / "c unsigned <x>", hostile)
    (subs / "c unsigned <x>" / "logs" / "first").mkdir(parents=True)
    (subs / "c unsigned <x>" / "logs" / "first" / "worker.err").write_text("ModuleNotFoundError\n")
    (subs / "c unsigned <x>" / "report.html").write_text("<script>alert('submitted page')</script>")
    for name in ("a-honest", "b-inflated"):
        sign_report_dir(subs / name, pair.private_path, releases_file=releases)
    (subs / "d-broken").mkdir()
    (subs / "d-broken" / "report.json").write_text("{not json")
    keyring = root / "keyring.yaml"
    keyring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {pair.public_path}\n"
                       "    vendors: [ExampleCorp]\n")
    return subs, releases, keyring


def workload_report(devices: int) -> dict[str, Any]:
    """The example report with WL-001 metrics for `devices` device types: two per-round charts each
    (seconds per round, memory over rounds)."""
    report = copy.deepcopy(example_report())
    fig = {"round_seconds": [0.5, 0.6, 0.55], "store_round_seconds": [1.0, 1.1, 1.2], "size": "4 MiB", "tensors": 8,
           "receivers": 2, "memory": {"actor0": [{"held_bytes": 1 << 20}, {"held_bytes": 2 << 20}]}}
    report["checks"].append({"id": "WL-001", "title": "weight sync", "area": "workload", "level": "SHOULD",
                             "outcome": "pass", "reason": None, "duration_s": 1.0, "params": {},
                             "metrics": {"devices": {f"dev{i:03d}": copy.deepcopy(fig) for i in range(devices)}},
                             "tests": ["workload/test_x.py::test_wl_001"]})
    return report
