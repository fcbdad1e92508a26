"""A report page whose only picture is the topology (most runs: no performance sweep, no recovery
scenario) is drawn without importing matplotlib, which costs a suite process 0.7 s of CPU; one with
a measured chart imports it. In fresh processes, so nothing imported before counts. And the first
chart on a fresh machine says nothing on stderr while matplotlib builds its font cache."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


FONT_CACHE_PROGRAM = """
import sys, threading, time
# matplotlib logs its notice when building the font list takes over 5 s (a loaded machine):
# its timer fires at once here, so the notice is due on every fresh cache
real_timer = threading.Timer
threading.Timer = lambda _interval, function, *args, **kwargs: real_timer(0, function, *args, **kwargs)
if sys.argv[1] == "matplotlib-alone":
    from matplotlib import font_manager
else:
    from conformance.report.html.charts import Series, bandwidth_svg
    bandwidth_svg("bandwidth", [Series("cpu", [1024, 2048], [1.0, 2.0], [0.9, 1.9], [1.1, 2.1], "#1565c0")])
time.sleep(0.5)
"""


def _first_chart_stderr(kind: str, cache: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLCONFIGDIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", FONT_CACHE_PROGRAM, kind], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_the_first_chart_on_a_fresh_machine_is_quiet_while_matplotlib_builds_its_font_cache(tmp_path: Path) -> None:
    # the control: matplotlib itself says it on a fresh cache when building is slow
    assert "building the font cache" in _first_chart_stderr("matplotlib-alone", tmp_path / "alone")
    assert _first_chart_stderr("chart", tmp_path / "chart") == ""
