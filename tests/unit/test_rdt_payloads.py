"""The RDT harness's one payload/digest scheme (conformance.rdt.payloads): the seeded buffers the
usage and recovery scenarios move, and what "arrived bit-exact" compares (no Ray)."""
from __future__ import annotations

import torch

from conformance.rdt.payloads import buffer_case, build, describe, same_bytes, seeded


def test_a_seeded_buffer_is_the_same_in_every_process_and_named_by_its_seed() -> None:
    case = seeded(4096, 7)
    assert case["id"] == 7 and case["nbytes"] == 4096
    a, b = build(case), build(seeded(4096, 7))
    assert a.dtype == torch.uint8 and a.shape == (4096,) and torch.equal(a, b)
    assert not torch.equal(a, build(seeded(4096, 8)))
    assert not torch.equal(build(buffer_case(4096)), build(buffer_case(4096, "/other")))


def test_same_bytes_compares_structure_dtype_shape_and_bytes_not_the_device() -> None:
    t = build(seeded(1024, 3))
    sent = describe(t)
    on_host = dict(sent, device="cuda")   # the driver digests on the host what a device transport moved
    assert same_bytes(sent, describe(t.clone())) and same_bytes(sent, on_host)
    flipped = t.clone()
    flipped[5] ^= 1
    assert not same_bytes(sent, describe(flipped))
    assert not same_bytes(sent, describe(t.view(torch.int8)))          # another dtype
    assert not same_bytes(sent, describe(t.reshape(32, 32)))           # another shape
    assert not same_bytes(sent, describe([t]))                         # another structure
    assert not same_bytes(None, sent)                                   # a producer that never produced
