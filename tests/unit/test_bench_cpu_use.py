"""The benchmark's CPU accounting (benchmarks/cpu_use.py): process kinds and what a sample counts."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from cpu_use import TORCH_WORKERS, CpuUse, births_by_mark, describe, has_torch, process_kind, program_label


def test_process_kinds_from_command_lines() -> None:
    """Command lines as Ray 2.60 leaves them in /proc/<pid>/cmdline (seen on this machine)."""
    py, ray = "/venv/bin/python", "/venv/lib/python3.11/site-packages/ray"
    raylet = (f"{ray}/core/src/ray/raylet/raylet --raylet_socket_name=/tmp/ray/s/sockets/raylet "
              f"--python_worker_command={py} {ray}/_private/workers/default_worker.py --node-ip-address=x")
    assert process_kind(raylet) == "raylets"
    assert process_kind(f"{ray}/core/src/ray/gcs/gcs_server --log_dir=/tmp/ray/s/logs") == "GCS servers"
    assert process_kind(f"{py} {ray}/_private/workers/default_worker.py --x") == "Ray workers"  # before its title
    assert process_kind("ray::IDLE") == "Ray workers"
    assert process_kind("ray::UsagePeer.receive") == "Ray workers"
    assert process_kind("ray::DashboardAgent") == "dashboard agents"
    assert process_kind("ray::RuntimeEnvAgent") == "runtime-env agents"
    assert process_kind(f"{py} -u {ray}/dashboard/agent.py --raylet-name=/tmp/ray/s/sockets/raylet") \
        == "dashboard agents"
    assert process_kind(f"{py} -m pytest -q tests") == "the suite (pytest)"
    assert process_kind("sleep 1") == "other"


def burn_and_sample(use: CpuUse, seconds: float, cwd: Path | None = None) -> None:
    """A child that burns `seconds` of CPU, kept alive until CpuUse has passed over /proc twice
    after its burn (so its last CPU is sampled), then ended."""
    burn = ("import sys, time\nt = time.process_time()\n"
            f"while time.process_time() - t < {seconds}: pass\nprint('burnt', flush=True)\nsys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             cwd=cwd, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "burnt"
    seen = use.sweeps
    deadline = time.monotonic() + 60
    while use.sweeps < seen + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    child.communicate("")


def test_a_child_process_cpu_is_counted_and_sets_the_floor() -> None:
    with CpuUse(interval_s=0.05) as use:
        burn_and_sample(use, 0.6)
    assert use.by_kind["other"] >= 0.55, dict(use.by_kind)
    assert use.busy_s >= use.by_kind["other"] * 0.9
    assert use.floor_s(cores=2) == use.busy_s / 2
    lines = describe(use, wall_s=1.0, target_s=0.01)
    assert "is below that floor" in lines[0] and "other" in lines[1]
    assert use.other[f"{Path(sys.executable).name} -c"] >= 0.55, dict(use.other)
    assert lines[2].startswith("  of which other: ")


def test_the_other_bucket_is_broken_down_by_program() -> None:
    """`other` is the largest bucket of a make test (pip, mypy, the tests' own programs): by what ran."""
    assert program_label("/venv/bin/python3 -m pip install --no-deps x.whl") == "python3 -m pip"
    assert program_label("/venv/bin/python /work/ci/tests/support/teeth.py good/x") == "python teeth.py"
    assert program_label("python3 -u -c import sys") == "python3 -c"
    assert program_label("/usr/bin/git clone -q a b") == "git"
    assert program_label("") == "?"


def test_a_process_that_ended_unreaped_keeps_its_kind() -> None:
    """A zombie's /proc/<pid>/cmdline is empty: its CPU stays with the kind it was seen running as."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
    with CpuUse(interval_s=0.05) as use:
        child = subprocess.Popen([sys.executable, "-c", burn, "default_worker.py"])   # a "Ray worker" by its argv
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(f"/proc/{child.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.05)
        seen = use.sweeps
        while use.sweeps < seen + 2 and time.monotonic() < deadline:   # sampled as a zombie, twice
            time.sleep(0.05)
        child.wait()
    assert use.by_kind["Ray workers"] >= 0.55, (dict(use.by_kind), dict(use.other))


def test_a_worker_that_maps_torch_is_counted_apart(tmp_path: Path) -> None:
    """Workers that imported torch pay 2-3 s of CPU for it: they are their own bucket. A file named
    like torch's library, mapped by a "Ray worker", stands in for the import."""
    lib = tmp_path / "libtorch_cpu.so"
    lib.write_bytes(b"\0" * 4096)
    hold = (f"import mmap, sys, time\nf = open({str(lib)!r}, 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
            "print('mapped', flush=True)\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n")
    with CpuUse(interval_s=0.05) as use:
        child = subprocess.Popen([sys.executable, "-c", hold, "default_worker.py"], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "mapped"
        assert has_torch(child.pid)
        child.wait()
    assert use.by_kind[TORCH_WORKERS] > 0, dict(use.by_kind)
    assert not has_torch(child.pid)   # ended: nothing to read


def test_a_teeth_rows_processes_are_counted_to_its_row(tmp_path: Path) -> None:
    """Every process of a teeth row works in the row's folder (its cluster's daemons and workers
    inherit it): the CPU a row costs is the sum over them, whatever ran beside it."""
    folder = tmp_path / "teeth0" / "transport__NoFree"
    folder.mkdir(parents=True)
    with CpuUse(interval_s=0.05) as use:
        burn_and_sample(use, 0.4, cwd=folder)
    assert use.by_row["transport/NoFree"] >= 0.3, dict(use.by_row)
    assert "transport/NoFree" in describe(use, wall_s=1.0, target_s=None)[-1]


def test_a_worker_is_counted_with_the_check_running_when_it_was_born() -> None:
    """Progress lines print as each check ends: a birth before a check's line (and after the one
    before) is that check's; other kinds of process are not workers; after the last line, "after"."""
    births = [(1.0, "Ray workers"), (2.0, TORCH_WORKERS), (2.5, "raylets"), (3.5, TORCH_WORKERS),
              (9.0, "Ray workers")]
    marks = [(3.0, "DP-001"), (4.0, "TR-001"), (5.0, "TR-002")]
    got = births_by_mark(births, marks)
    assert got == {"DP-001": {"Ray workers": 1, TORCH_WORKERS: 1}, "TR-001": {TORCH_WORKERS: 1},
                   "after": {"Ray workers": 1}}
