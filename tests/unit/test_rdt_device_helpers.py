"""conformance.rdt.device on the host (the device-agnostic helpers; device behaviour is pinned
with the simulated device in test_simacc_device.py)."""
from __future__ import annotations

import pytest

from conformance.rdt import device, payloads

torch = pytest.importorskip("torch")


def test_host_is_a_no_op_everywhere():
    t = torch.arange(3)
    assert device.to_host(t) is t
    assert device.to_device([t], "cpu")[0] is t
    assert device.used_bytes("cpu") is None
    device.synchronize("cpu")
    device.warm_up("cpu")


def test_an_unregistered_device_type_is_named():
    with pytest.raises(RuntimeError, match="torch.nosuchdev"):
        device.module("nosuchdev")


def test_digest_of_the_host_copy_names_the_device():
    obj, digest = payloads.build_with_digest(payloads.tensor_case("float32", "2-d"), "cpu")
    assert digest == payloads.describe(obj)
    _, on_dev = payloads.build_with_digest(payloads.view_case("uint8", "transpose"), "cpu")
    assert on_dev["device"] == "cpu" and on_dev["contiguous"] is False
