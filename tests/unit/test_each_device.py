"""RdtCtx.each_device: a check that moves tensors runs on every device type the manifest's
transport declares, names the types it exercised, says which it could not run on and why, and
fails naming each type that failed (conformance/rdt/context.py)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.rdt.context import LATER_DEVICE_BYTES, RdtCtx, later_bytes
from conformance.report.results import NOT_APPLICABLE_PREFIX, not_applicable
from conformance.run.budget import Budget
from conformance.timing.host_load import MachineryRecord


def _ctx(*devices: str) -> RdtCtx:
    transport: Any = SimpleNamespace(devices=tuple(devices))
    return RdtCtx(run=None, check=None, metrics={}, shape_name="shared", budget=None, transport=transport)  # type: ignore[arg-type]  # stubs: each_device reads neither


def test_one_type_keeps_the_metrics_flat_and_the_failure_as_it_was() -> None:
    ctx = _ctx("dev")
    seen: list[tuple[str, bool]] = []

    def one(device: str, first: bool) -> None:
        seen.append((device, first))
        ctx.metrics["objects"] = 3
    ctx.each_device(one)
    assert seen == [("dev", True)] and ctx.metrics == {"objects": 3, "devices": ["dev"]}

    ctx = _ctx("dev")
    with pytest.raises(AssertionError, match="^wrong$"):
        ctx.each_device(lambda device, first: (_ for _ in ()).throw(AssertionError("wrong")))


def test_every_type_runs_with_its_own_metrics_and_failures_name_their_type() -> None:
    ctx = _ctx("dev", "host")
    seen: list[tuple[str, bool, str]] = []

    def one(device: str, first: bool) -> None:
        seen.append((device, first, ctx.device))
        ctx.metrics["objects"] = 1 if first else 2
        assert first, f"tensor_device {device!r} is wrong"
    with pytest.raises(AssertionError) as exc:
        ctx.each_device(one)
    assert seen == [("dev", True, "dev"), ("host", False, "host")]   # a failure on one type does not stop the next
    assert str(exc.value) == "on host: tensor_device 'host' is wrong"
    assert ctx.metrics == {"dev": {"objects": 1}, "host": {"objects": 2}, "devices": ["dev", "host"]}


def test_a_type_the_check_cannot_run_on_is_named_with_its_reason_and_all_such_is_not_applicable() -> None:
    ctx = _ctx("dev", "host")

    def one(device: str, first: bool) -> None:
        if device == "host":
            not_applicable("needs 2 endpoints with a host device on one node")
        ctx.metrics["objects"] = 1
    ctx.each_device(one)
    assert ctx.metrics["devices"] == ["dev"]
    assert ctx.metrics["not_applicable_on"] == {"host": "needs 2 endpoints with a host device on one node"}

    ctx = _ctx("dev", "host")
    with pytest.raises(pytest.skip.Exception) as skipped:
        ctx.each_device(lambda device, first: not_applicable(f"no {device} here"))
    assert str(skipped.value.msg) == NOT_APPLICABLE_PREFIX + "on dev: no dev here; on host: no host here"


def test_later_types_move_the_smallest_payload() -> None:
    assert later_bytes(1 << 20, True) == 1 << 20
    assert later_bytes(1 << 20, False) == LATER_DEVICE_BYTES
    assert later_bytes(16, False) == 16


def test_a_recovery_transfer_scenario_runs_on_each_type_named_in_the_checks_own_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """FR-012..018 through the same loop: each type's scenario recorded under the check's own
    metrics (where verify judges scenarios), its name saying the type; a device type whose
    peers no node can place is not applicable on it, with the reason."""
    from conformance.areas.recovery import context as recovery_context
    from conformance.areas.recovery.context import TransferRecoveryCtx

    check: Any = SimpleNamespace(id="FR-000")
    setup: Any = SimpleNamespace(config=SimpleNamespace(devices=("dev", "cpu", "other")))
    manifest: Any = SimpleNamespace(resource_name="ACC")
    run: Any = SimpleNamespace(manifest=manifest)
    ctx = TransferRecoveryCtx(run=None, check=check, metrics={}, shape_name="recovery-transfers",
                              budget=Budget(check, {}, MachineryRecord()), setup=setup)
    monkeypatch.setattr(TransferRecoveryCtx, "manifest", property(lambda self: run.manifest), raising=False)
    monkeypatch.setattr(recovery_context, "_node_with_units", lambda resource, n: resource == "ACC" and n == 2)
    seen: list[str] = []

    def one(device: str) -> None:
        seen.append(ctx.device)
        if device == "other":
            not_applicable("no such device here")
        with ctx.timed("source-dies", 5.0):
            ctx.metrics["result"] = device
    ctx.each_device(one)
    assert seen == ["dev", "cpu", "other"]
    assert set(ctx.metrics["scenarios"]) == {"source-dies on dev", "source-dies on cpu"}
    assert ctx.metrics["dev"] == {"result": "dev"} and ctx.metrics["cpu"] == {"result": "cpu"}
    assert ctx.metrics["not_applicable_on"] == {"other": "no such device here"}

    ctx = TransferRecoveryCtx(run=None, check=check, metrics={}, shape_name="recovery-transfers",
                              budget=Budget(check, {}, MachineryRecord()), setup=setup)
    ctx.each_device(lambda device: None, units_per_node=1)   # one peer a node: no node has the 1 unit the stub gives
    assert ctx.metrics["devices"] == ["cpu"]                  # the host needs none
    assert ctx.metrics["not_applicable_on"]["dev"] == "peers on dev need 1 ACC unit(s) on one node; no node has them"


def test_a_recovery_reason_naming_the_fault_twin_says_what_the_twin_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """FR-016 fails (and is waived) with Ray's own error, which names the suite's fault-injecting
    twin `<NAME>_RECOVERY`: the reason says that name is the suite's wrapper of the vendor's class."""
    from conformance.areas.recovery.context import TransferRecoveryCtx
    from conformance.report.judges import FAIL, PASS, Verdict

    check: Any = SimpleNamespace(id="FR-016")
    setup: Any = SimpleNamespace(config=SimpleNamespace(name="TACHYON"), fault_name="TACHYON_RECOVERY")
    ctx = TransferRecoveryCtx(run=None, check=check, metrics={}, shape_name="recovery-transfers",
                              budget=Budget(check, {}, MachineryRecord()), setup=setup)
    said = "a transfer with the restarted source: Unsupported tensor transport protocol TACHYON_RECOVERY"
    monkeypatch.setattr(TransferRecoveryCtx, "verdict", lambda self: Verdict(FAIL, said))
    with pytest.raises(AssertionError) as failed:
        ctx.decide()
    assert str(failed.value).startswith(said)
    assert "TACHYON_RECOVERY is the suite's fault-injecting twin of TACHYON" in str(failed.value)
    monkeypatch.setattr(TransferRecoveryCtx, "verdict", lambda self: Verdict(FAIL, "the source did not restart"))
    with pytest.raises(AssertionError) as failed:
        ctx.decide()
    assert str(failed.value) == "the source did not restart"
    monkeypatch.setattr(TransferRecoveryCtx, "verdict", lambda self: Verdict(PASS, ""))
    ctx.decide(extra=1)
    assert ctx.metrics["extra"] == 1
