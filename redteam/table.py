"""Results table of a red-team round: redteam/results.txt (from harness.py) + each attack's verify.txt.

  .venv/bin/python redteam/table.py > redteam/results.md

Class: HOLE = VERIFIED with the baseline's tier and certified capabilities (a broken or weaker
plugin certified as the real one); DOWNGRADE = VERIFIED but the recomputed tier or capabilities
fell (the report is honest about what it hid); REFUSED; CRASH (a traceback: a defect of its own).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = Path(os.environ.get("RT_WORK", "/tmp/rt"))


# VERIFIED attacks that are no hole, and why (judged by hand after the round)
NOT_HOLES = {
    "G08_reorder_checks": "harmless: order carries no meaning (junit.xml and report.md follow it, completeness is a set)",
    "H01_ansi_in_reason": "OK: verify printed it escaped (the check here is the sanitising)",
    "H04_html_in_fields": "OK: report.html escaped every tag",
    "H05_bidi_in_reason": "OK: U+202E printed escaped",
    "H06_huge_metric": "OK: bounded (report.json cap 32 MiB); verify did not hang",
    "G31_host_left_behind_cleared": "by design: host.left_behind is informational (schemas/report.trust.yaml)",
    "G32_preflight_finding_removed": "by design: preflight.findings informational (and this run had none)",
    "R06_fr016_restart_role_dropped": "raw forgery: invented pids and a restart record (the trust model's 'what it measured')",
    "X06b_leak_last_round_only": "by design: TR-013 excuses the one largest round (a busy host frees late)",
    "G22_waiver_extended": "verify judges by the release's waiver (wins: the release), but report.html shows the report's "
                           "copy (expires 2099-12-31): a presentational lie, see FINDINGS.md",
}
POLICY = {"D06_quantity_dropped_from_manifest", "T03_expected_domains_dropped", "P07_pf002_reference_manifest_lowered",
          "C04_cc010_nominal_dropped_from_manifest"}


def facts(name: str) -> tuple[str, str]:
    text = (WORK / "atk" / name / "verify.txt").read_text() if (WORK / "atk" / name / "verify.txt").exists() else ""
    tier = re.search(r"tier: recomputed '([^']*)'", text)
    caps = re.search(r"capabilities: recomputed capabilities equal the claim; certified: ([^\n]*)", text)
    return (tier.group(1) if tier else "?"), (caps.group(1).strip() if caps else "?")


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    sys.path.insert(0, str(HERE))
    import attacks
    rows = {}
    for line in (HERE / "results.txt").read_text().splitlines():
        name, models, verdict = line.split("\t", 2)
        if name in attacks.ATTACKS:
            rows[name] = (attacks.ATTACKS[name].models, verdict)   # the last run of an attack wins
    rows = {n: rows[n] for n in attacks.ATTACKS if n in rows}
    base_tier, base_caps = facts("A00_baseline")
    print("| attack | models | result | tier / certified | refusal line (first) |")
    print("|---|---|---|---|---|")
    counts: dict[str, int] = {}
    for name, (models, verdict) in rows.items():
        tier, caps = facts(name)
        if verdict.startswith("VERIFIED"):
            kind = "HOLE" if (tier, caps) == (base_tier, base_caps) else "DOWNGRADE"
            if name in POLICY and kind == "HOLE":
                kind = "HOLE (policy: manifest self-declaration)"
            if name in NOT_HOLES:
                kind, extra_note = "VERIFIED, no hole", NOT_HOLES[name]
                verdict = verdict + " — " + extra_note
            if name == "A00_baseline":
                kind = "CONTROL"
        elif verdict.startswith("CRASH"):
            kind = "CRASH"
        elif verdict.startswith("HARNESS"):
            kind = "N/A"
        else:
            kind = "REFUSED"
        counts[kind] = counts.get(kind, 0) + 1
        detail = "" if verdict.startswith("VERIFIED") else verdict.split(": ", 1)[-1]
        extra = verdict[len("VERIFIED"):].strip() if verdict.startswith("VERIFIED") else ""
        print(f"| {name} | {cell(models)} | **{kind}** {cell(extra)} | {tier} / {cell(caps)} | {cell(detail[:400])} |")
    print()
    print("Counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
