"""report.html's Recovery timeline block (Area.html): each recovery scenario's elapsed time
against its bound, and the details of any that failed. Pure: report.json in, the block's view out."""
from __future__ import annotations

from typing import Any, Mapping

from conformance.report.html import charts
from conformance.report.html.model import as_list, as_number, checks_by_id, section_data


def recovery(report: Mapping[str, Any]) -> dict[str, Any]:
    """Each recovery scenario's elapsed time against its bound, and the details of any that failed."""
    data = section_data(report, "Recovery")
    scenarios = [s for s in as_list(data.get("scenarios")) if isinstance(s, dict)]
    if not scenarios:
        return {}
    outcome_of = {cid: str(c.get("outcome")) for cid, c in checks_by_id(report).items()}
    bars = [charts.Scenario(f"{s.get('check', '?')} {s.get('scenario', '')}".strip(), as_number(s.get("elapsed_s")),
                            as_number(s.get("bound_s")),
                            "waived" if outcome_of.get(str(s.get("check"))) == "waived" else str(s.get("outcome")))
            for s in scenarios]
    failed = [s for s in scenarios if s.get("outcome") != "ok"]
    return {"svg": charts.recovery_svg(bars), "failed": failed, "total_s": as_number(data.get("total_elapsed_s")),
            "count": len(scenarios)}
