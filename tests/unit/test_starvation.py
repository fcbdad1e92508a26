"""Whether the host starved a wave's processes (conformance.timing.starvation): the kernel's
counters over one window, read into a verdict only when both the waiting and the foreign CPU say so."""
from __future__ import annotations

import os

import pytest

from conformance.timing import starvation
from conformance.timing.host_load import CpuTimes
from conformance.timing.starvation import Snapshot, between

HZ = os.sysconf("SC_CLK_TCK")


def _pair(*, span_s: float, busy_share: float, ours_s: float, waited_s: float, cores: int = 2,
          watched: int = 2) -> tuple[Snapshot, Snapshot]:
    """Two snapshots span_s apart: the host busy busy_share of its cores, the run's processes using
    ours_s of CPU, each watched process waiting waited_s for a CPU."""
    total = int(span_s * cores * HZ)
    a = Snapshot(100.0, CpuTimes(busy=0, steal=0, total=1000), {1: 5.0, 2: 1.0},
                 {10 + i: (1.0, 1.0) for i in range(watched)})
    b = Snapshot(100.0 + span_s, CpuTimes(busy=int(total * busy_share), steal=0, total=1000 + total),
                 {1: 5.0 + ours_s, 2: 1.0}, {10 + i: (1.5, 1.0 + waited_s) for i in range(watched)})
    return a, b


def test_a_hog_outside_the_run_that_keeps_the_wave_waiting_is_the_hosts() -> None:
    """make test-load: busy loops at nice -5 on every core, the wave's actors runnable throughout."""
    window = between(*_pair(span_s=240, busy_share=1.0, ours_s=40, waited_s=200))
    assert window is not None and window.host_starved
    assert window.foreign_share == pytest.approx((480 - 40) / 480, abs=0.01)
    assert "waited for a CPU 83% of the time" in window.describe()


def test_a_plugin_busy_beside_as_much_other_load_is_judged_by_the_larger() -> None:
    """make test's other lane: half the CPU outside the run, the other half the run's own."""
    window = between(*_pair(span_s=100, busy_share=1.0, ours_s=110, waited_s=60))
    assert window is not None and window.runnable_share >= starvation.RUNNABLE_SHARE
    assert window.foreign_share < window.ours_share and not window.host_starved


def test_a_wedged_plugin_beside_another_run_is_not_excused() -> None:
    """make test's other lane uses the other core; the wedged receivers sleep: they wait for no CPU."""
    window = between(*_pair(span_s=240, busy_share=0.5, ours_s=10, waited_s=2))
    assert window is not None and not window.host_starved and window.runnable_share < 0.05


def test_a_spinning_plugin_uses_the_cpu_itself_and_is_not_excused() -> None:
    """Six spinning receivers on two cores wait for a CPU most of the time, but the CPU is the run's."""
    window = between(*_pair(span_s=100, busy_share=1.0, ours_s=190, waited_s=70, watched=6))
    assert window is not None and window.runnable_share >= starvation.RUNNABLE_SHARE
    assert window.foreign_share < starvation.FOREIGN_SHARE and not window.host_starved


def test_nothing_is_excused_where_nothing_was_measured() -> None:
    a, b = _pair(span_s=60, busy_share=1.0, ours_s=0, waited_s=60)
    assert between(Snapshot(a.at, a.host, a.ours_s, {}), b) is None          # remote actors: not readable here
    assert between(Snapshot(a.at, None, a.ours_s, a.watched), b) is None     # no /proc/stat


def test_a_snapshot_reads_this_hosts_kernel() -> None:
    snap = starvation.take([os.getpid()], [os.getpid()])
    assert os.getpid() in snap.ours_s and os.getpid() in snap.watched and snap.host is not None
    ran, waited = snap.watched[os.getpid()]
    assert ran > 0 and waited >= 0
    assert starvation.schedstat(2 ** 30) is None and starvation.cpu_seconds(2 ** 30) is None
