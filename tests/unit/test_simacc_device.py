"""The simulated device `simacc` (conformance/simulated/device): what the suite relies on from
torch's private Python-backend setup, and the device contract it models (memory that is not host
memory, per-device accounting, asynchronous completion, visible-ids indices).

The device is registered once in this test process (the rename of PrivateUse1 cannot be undone);
the refusal of a second name runs in a subprocess.
"""
from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def dev():
    from conformance.simulated import device

    device.install()
    device.install()   # idempotent
    return device


def test_torch_private_setup_makes_a_device_type(dev):
    assert torch._C._get_privateuse1_backend_name() == "simacc"
    t = torch.zeros(3).to("simacc")
    assert t.device.type == "simacc" and t.is_simacc
    assert torch.simacc.device_count() >= 1   # the device module is torch.simacc


def test_device_memory_is_not_host_memory(dev):
    t = torch.arange(4.0).to("simacc")
    with pytest.raises(RuntimeError):
        t.numpy()
    assert torch.equal(t.to("cpu"), torch.arange(4.0))      # explicit copies back
    assert torch.equal(t.cpu(), torch.arange(4.0))


def test_views_ops_and_dtypes_copy_back_exactly(dev):
    x = torch.randn(6, 8)
    t = x.to("simacc")
    assert torch.equal(t.t()[1:, ::2].contiguous().cpu(), x.t()[1:, ::2].contiguous())
    assert torch.equal(t.view(torch.uint8).cpu(), x.view(torch.uint8))
    assert torch.equal((t + 1).sum(0).cpu(), (x + 1).sum(0))
    for dtype in (torch.bfloat16, torch.int64, torch.bool, torch.float8_e4m3fn):
        h = torch.zeros(5, dtype=dtype)
        assert torch.equal(h.to("simacc").cpu().view(torch.uint8), h.view(torch.uint8))
    assert torch.empty(0, device="simacc").cpu().numel() == 0
    assert pickle.loads(pickle.dumps(t)).device.type == "simacc"


def test_allocator_accounts_per_device_like_torch_cuda(dev):
    gc.collect()
    before = torch.simacc.memory_allocated(0)
    torch.simacc.reset_peak_memory_stats(0)
    t = torch.empty(1024, dtype=torch.uint8, device="simacc:0")
    assert torch.simacc.memory_allocated(0) == before + 1024
    assert torch.simacc.max_memory_allocated(0) >= before + 1024
    free, total = torch.simacc.mem_get_info(0)
    assert total - free == before + 1024
    other = torch.simacc.memory_allocated(1)
    del t
    gc.collect()
    assert torch.simacc.memory_allocated(0) == before
    assert torch.simacc.memory_allocated(1) == other


def test_completion_is_asynchronous(dev):
    """Enqueued work is visible to a reader of device memory only after a synchronize, an event
    or a stream-ordered use; the copy engine (read_bytes) waits for nothing."""
    t = torch.full((4,), 7, dtype=torch.uint8).to("simacc")
    assert bytes(dev.read_bytes(t)) == b"\x00" * 4             # stale: the copy has not run
    torch.simacc.synchronize()
    assert bytes(dev.read_bytes(t)) == b"\x07" * 4
    t.add_(1)
    event = torch.simacc.Event()
    event.record(torch.simacc.current_stream())
    assert not event.query()
    event.synchronize()
    assert bytes(dev.read_bytes(t)) == b"\x08" * 4
    t.add_(1)
    assert torch.equal(t.cpu(), torch.full((4,), 9, dtype=torch.uint8))   # a host read is stream-ordered


def test_indices_follow_the_visible_ids(dev, monkeypatch):
    monkeypatch.setenv("SIMACC_VISIBLE_DEVICES", "2,3")
    assert torch.simacc.device_count() == 2
    assert torch.simacc.physical_id(1) == "3"
    torch.simacc.set_device(1)
    try:
        assert torch.empty(2, device="simacc").device.index == 1
        with pytest.raises(RuntimeError, match="invalid device index"):
            torch.simacc.set_device(2)
    finally:
        torch.simacc.set_device(0)


def test_a_second_name_is_refused_with_a_clear_error():
    code = ("import torch; torch.utils.rename_privateuse1_backend('other')\n"
            "from conformance.simulated import device\n"
            "try:\n    device.install()\nexcept device.DeviceSetupError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: torch's PrivateUse1 device is already named 'other'" in out.stdout, out.stderr


def test_a_stream_catches_up_when_work_piles_up(dev):
    """Work nobody waits for (a received tensor never read) cannot pile up without bound."""
    from conformance.simulated.device import runtime

    stream = torch.simacc.current_stream()
    torch.simacc.synchronize()
    kept = [torch.full((1024,), 7, dtype=torch.uint8).to("simacc") for _ in range(runtime.MAX_PENDING + 1)]
    assert len(stream._queue) <= runtime.MAX_PENDING
    assert bytes(dev.read_bytes(kept[0])) == b"\x07" * 1024                   # ran when the stream caught up
    assert bytes(dev.read_bytes(kept[-1])) == b"\x00" * 1024 and not stream.query()   # the newest still queued


def test_workers_register_the_device_after_torch_is_imported():
    """What the suite's preload module and .pth hook do in every worker: with
    RAY_CONFORMANCE_TORCH_DEVICE set, the device is registered right after torch's import (and a
    process that never imports torch does not import it)."""
    code = ("import sys\nfrom conformance.cluster.injection import install_torch_device_from_env\n"
            "install_torch_device_from_env()\nassert 'torch' not in sys.modules\n"
            "import torch\nprint(torch._C._get_privateuse1_backend_name(), torch.ones(2).to('simacc').device)\n")
    env = {**os.environ, "RAY_CONFORMANCE_TORCH_DEVICE": "conformance.simulated.device:install"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["simacc", "simacc:0"], out.stderr
