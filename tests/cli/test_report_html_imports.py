"""A report page whose only picture is the topology (most runs: no performance sweep, no recovery
scenario) is drawn without importing matplotlib, which costs a suite process 0.7 s of CPU; one with
a measured chart imports it. In fresh processes, so nothing imported before counts."""
from __future__ import annotations

import os
import subprocess
import sys

PROGRAM = """
import sys
from conformance.report.html import render_report_html
from html_samples import failing_report
report = failing_report()
if sys.argv[1] == "topology-only":
    report["sections"].pop("Recovery", None)
page = render_report_html(report)
print(page.count('<svg role="img"'), 'aria-label="topology:' in page, "matplotlib" in sys.modules)
"""


def _render(kind: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, kind], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_a_page_with_only_the_topology_does_not_import_matplotlib() -> None:
    assert _render("topology-only") == "1 True False"


def test_a_page_with_a_measured_chart_draws_it_with_matplotlib() -> None:
    assert _render("with-recovery") == "2 True True"
