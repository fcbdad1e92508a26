"""Every call into vendor code is bounded; a hang found once fails later probes and starts at once."""
from __future__ import annotations

import time

import pytest

from conformance.areas.device.contract import ProbeFailed, run_contract_probe
from conformance.catalog.vendor_calls import HangRecord, KnownHang, VendorHang, bounded_call
from conformance.run.preflight import probe_node_start
from conformance.timing.timeouts import CheckTimeout, hard_timeout
from suite_runner import BROKEN


def test_the_record_blocks_the_calls_that_would_hang() -> None:
    hangs = HangRecord()
    assert hangs.blocks_node_start() is None and hangs.blocking(["get_resource_name"]) is None
    hangs.add(KnownHang("get_current_node_num_accelerators", "the preflight", 20))
    hangs.add(KnownHang("get_current_node_num_accelerators", "DP-001's contract probe", 20))   # found once
    assert len(hangs.hangs) == 1
    assert hangs.blocking(["set_current_process_visible_accelerator_ids"]) is None
    known = hangs.blocking(["get_current_node_num_accelerators"])
    assert known is not None and known.reason() == ("the plugin's get_current_node_num_accelerators() did not "
                                                    "return within 20s (a hang), found by the preflight")
    assert hangs.blocks_node_start() is known

    start = HangRecord()
    start.add(KnownHang(None, "'shared'", detail="cluster 'shared' failed to start: hard timeout"))
    assert start.blocks_node_start() is not None and start.blocking(["get_resource_name"]) is None
    imported = HangRecord()
    imported.add(KnownHang("import vendor_driver", "the preflight", 20))
    assert imported.blocking(["set_current_process_visible_accelerator_ids"]) is not None   # every probe imports


def test_the_bounds_are_data() -> None:
    from conformance.catalog.data import load_run_knobs
    k = {key: float(v) for key, v in load_run_knobs()["vendor_calls"].items()}   # as written (knobs() stretches by load)
    assert k["call_bound_s"] + k["stuck_grace_s"] < 30 and k["probe_timeout_s"] >= k["call_bound_s"]


def test_nested_hard_timeouts_each_raise_their_own_and_the_outer_goes_on() -> None:
    with pytest.raises(CheckTimeout, match="^outer:"):
        with hard_timeout(1.0, "outer", grace_s=30):
            with pytest.raises(CheckTimeout, match="^inner:"):
                with hard_timeout(0.2, "inner", grace_s=30):
                    time.sleep(5)
            time.sleep(5)            # the outer deadline still holds after the inner block
    with pytest.raises(CheckTimeout, match="^outer:"):
        with hard_timeout(0.2, "outer", grace_s=30):
            with hard_timeout(5, "inner", grace_s=30):
                time.sleep(5)        # the outer runs out first: its own reason, not the inner's


def test_a_hanging_call_is_one_line_naming_the_method_and_the_bound() -> None:
    with pytest.raises(VendorHang, match=r"^manifest: accelerator.manager: get_current_node_num_accelerators\(\) "
                                         r"did not return within 0s \(a hang\)$") as caught:
        bounded_call(time.sleep, 5, method="get_current_node_num_accelerators", bound_s=0.3, grace_s=30,
                     where="manifest: accelerator.manager: ")
    assert caught.value.method == "get_current_node_num_accelerators"
    assert bounded_call(lambda: 4, method="get_current_node_num_accelerators", bound_s=5, grace_s=30) == 4


class _HangsCounting:
    called: list[str] = []

    @staticmethod
    def get_resource_name() -> str:
        _HangsCounting.called.append("get_resource_name")
        return "X"

    @staticmethod
    def get_visible_accelerator_ids_env_var() -> str:
        raise RuntimeError("a raising method is DP-001's to judge, not a hang")

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        time.sleep(30)
        return 1

    @staticmethod
    def get_current_node_accelerator_type() -> str:
        _HangsCounting.called.append("get_current_node_accelerator_type")
        return "X1"


def test_the_preflight_probe_records_the_first_node_start_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.catalog import vendor_calls
    # 3 s: the bound must end the 30 s hang, and the calls before it return at once even on a loaded machine
    monkeypatch.setattr(vendor_calls, "knobs", lambda machinery=None: {"call_bound_s": 3, "stuck_grace_s": 30,
                                                        "probe_timeout_s": 60})
    hangs = HangRecord()
    hang = probe_node_start(_HangsCounting, {}, hangs, found_by="the preflight")
    assert hang is not None and hang.method == "get_current_node_num_accelerators" and hangs.hangs == [hang]
    assert _HangsCounting.called == ["get_resource_name"]     # nothing after the hang is called


def _hanging(**kwargs: object) -> dict[str, object]:
    return dict(python_path=[str(BROKEN)], env={"SIMACC_FAULT": "hang-start"}, **kwargs)


def test_a_probe_names_the_hung_method_records_it_and_the_next_probe_fails_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    hangs = HangRecord()
    with pytest.raises(ProbeFailed, match=r"get_current_node_num_accelerators\(\) did not return within 8s") as first:
        run_contract_probe("broken_device:HangingEnumeration", **_hanging(timeout_s=8, hangs=hangs,
                                                                          found_by="DP-001's contract probe"))
    assert first.value.hung_method == "get_current_node_num_accelerators"
    from conformance.areas.device import contract
    started: list[object] = []
    monkeypatch.setattr(contract, "_run_bounded", lambda *a, **k: started.append(a) or (0, "", "", None))
    with pytest.raises(ProbeFailed, match="not run: the plugin's get_current_node_num_accelerators.. did not return "
                                          "within 8s .a hang., found by DP-001's contract probe; not called again"):
        run_contract_probe("broken_device:HangingEnumeration", **_hanging(timeout_s=60, mode="detect", hangs=hangs))
    assert started == []          # no process was started (counted, not timed: no unit test bounds wall time)
    # a probe that never makes that call is not blocked
    assert hangs.blocking(["set_current_process_visible_accelerator_ids"]) is None


def test_host_probes_announce_each_method_whoever_calls_it(capsys: pytest.CaptureFixture[str]) -> None:
    """The host probes call the manager through Ray's code too: the traced manager names each call."""
    from conformance.areas.device.contract_probe import CALLING, traced
    from conformance.simulated.manager import SimAccManager

    manager = traced(SimAccManager)
    assert manager.__qualname__ == SimAccManager.__qualname__ and issubclass(manager, SimAccManager)
    assert manager.get_resource_name() == SimAccManager.get_resource_name()
    assert capsys.readouterr().err == f"{CALLING}get_resource_name\n"


def test_a_command_refuses_a_node_start_hang_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """What preflight, topology and bench-transport do before they start a cluster (measured with
    the shipped bound on the hanging plugin: 21-22 s to the one line, exit 2)."""
    from conformance.catalog import vendor_calls
    from conformance.catalog.manifest import load_manifest
    from conformance.run.preflight import refuse_node_start_hang
    # 3 s: the bound must end the 30 s hang, and the calls before it return at once even on a loaded machine
    monkeypatch.setattr(vendor_calls, "knobs", lambda machinery=None: {"call_bound_s": 3, "stuck_grace_s": 30,
                                                        "probe_timeout_s": 60})
    with pytest.raises(VendorHang, match=r"^manifest: accelerator.manager: get_current_node_num_accelerators\(\) "
                                         r"did not return within 3s \(a hang\)$"):
        refuse_node_start_hang(_HangsCounting, load_manifest("builtin:simulated"))
