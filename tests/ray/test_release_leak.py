"""The one wait for devices to be free again (conformance.run.release) on a real Ray: what Ray's
GCS reports alive holding units (an actor, a placement group, a task still running: the tables and
task events the wait reads without the dashboard) is named as a leak, never waited out as the host's; once they end, the units come back
as Ray's accounting within the bound. tests/unit/test_release_wait.py holds the owner rules. One
real Ray."""
from __future__ import annotations

from pathlib import Path

from script_result import script_result

SCRIPT = r'''
import json, time
import ray
from ray.util.placement_group import placement_group, remove_placement_group
from conformance.run import release
from conformance.timing.host_load import MachineryRecord

ray.init(address="local", num_cpus=1, resources={"SIMACC": 3}, include_dashboard=False)


@ray.remote(num_cpus=0, resources={"SIMACC": 1})
class Holder:
    def ping(self):
        return 1


holder = Holder.remote()
ray.get(holder.ping.remote(), timeout=120)
pg = placement_group([{"SIMACC": 1}], name="kept")
ray.get(pg.ready(), timeout=120)


@ray.remote(num_cpus=0, resources={"SIMACC": 1}, max_retries=0)
def still_running():
    time.sleep(600)


task = still_running.remote()
deadline = time.monotonic() + 60   # a worker reports its task's events about once a second
while time.monotonic() < deadline and len(release.live_holders("SIMACC") or []) < 3:
    time.sleep(0.2)
out = {"held": [h.describe() for h in release.live_holders("SIMACC") or []]}
rec = MachineryRecord()
try:
    release.await_released("SIMACC", "every device to be free after the check", 1.0, machinery=rec)
    out["leak"] = None
except release.NotReleased as exc:
    out["leak"] = str(exc)
ray.kill(holder)
remove_placement_group(pg)
ray.cancel(task, force=True)
t0 = time.monotonic()
release.await_released("SIMACC", "every device to be free after the check", 20.0, machinery=rec)
out["freed_s"] = time.monotonic() - t0
# the units are back; the cancelled task's end reaches the GCS with its owner's next report of task
# events (about once a second), so its last reported state may still read running for a moment
deadline = time.monotonic() + 30
while time.monotonic() < deadline and release.live_holders("SIMACC"):
    time.sleep(0.2)
out["after"] = [h.describe() for h in release.live_holders("SIMACC") or []]
out["after_s"] = time.monotonic() - deadline + 30
print("RESULT " + json.dumps(out))
ray.shutdown()
'''


def test_what_ray_reports_alive_holding_units_is_a_leak_and_their_end_frees_them(tmp_path: Path) -> None:
    got = script_result(SCRIPT, tmp_path)
    assert len(got["held"]) == 3, got
    assert got["held"][0].startswith("task still_running [") and got["held"][0].endswith("holding 1"), got
    assert got["held"][1].startswith("actor Holder [") and got["held"][1].endswith("holding 1"), got
    assert got["held"][2].startswith("placement group 'kept' ["), got
    assert got["leak"] is not None and "still held by what Ray reports alive (task still_running" in got["leak"], got
    assert "actor Holder" in got["leak"] and "placement group 'kept'" in got["leak"] and "a leak" in got["leak"], got
    assert got["after"] == [] and got["freed_s"] < 20, got
