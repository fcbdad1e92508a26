"""A model-shaped state: what an RL trainer publishes to its inference workers every step.

Dozens of tensors of mixed shapes and dtypes, some of them views of others (a fused QKV weight
split into three row slices, an output head tied to the embedding, a transposed projection), of
a total size a param sets. `layout` is pure and JSON-able, so the driver, the trainer and the
receivers all derive the same state from it; `fill_round` rewrites the state's own storage in
place with round k's seeded bytes (a training step's update), so round k's expected digest is
known on the driver without trusting the trainer.

Bytes, not values: a round's bytes are random (seeded), reinterpreted as the dtype, so floats
include NaNs and denormals and a transport that converts values instead of moving bytes is caught.
"""
from __future__ import annotations

from typing import Any

from conformance.rdt import payloads

# The dtypes every layout holds (torch's core floating and integer types), and those it holds
# only where the device can (probed on the trainer's device: Endpoint.supported_dtypes).
BASE_DTYPES = ("float32", "float16", "int64")
OPTIONAL_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
# bytes per element of the layout's dtypes (torch's itemsize), so the layout and its size are
# derived without torch: verify recomputes a run's state from the params (its judge is pure)
ITEMSIZE = {"float32": 4, "float16": 2, "int64": 8, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
VIEWS_PER_BLOCK = 4          # q, k, v slices of the fused weight and the transposed projection


def layout(total_bytes: int, blocks: int, dtypes: list[str]) -> list[dict[str, Any]]:
    """The state's entries, in order: a base {"name", "dtype", "shape"} owns its storage; a view
    {"name", "of", "view"} is a view of an earlier base (q/k/v: row thirds; t: the transpose;
    tied: the same tensor). Each block holds a fused weight, a projection, a norm, a bias and an
    integer step counter; the dtypes rotate over `dtypes` so every one appears. The float bases
    share `total_bytes` about equally (rows a multiple of 3 so the QKV thirds are exact)."""
    if blocks < 1 or not dtypes:
        raise ValueError("a layout needs at least one block and one dtype")
    floats = [d for d in dtypes if not d.startswith(("int", "uint"))] or list(dtypes)
    per_base = max(96, total_bytes // (blocks * 2 + 1))
    entries: list[dict[str, Any]] = []

    def square(dtype: str) -> list[int]:
        size = itemsize(dtype)
        side = max(3, int((per_base // size) ** 0.5))
        return [side - side % 3 or 3, side]

    embed_dtype = floats[0]
    entries.append({"name": "embed", "dtype": embed_dtype, "shape": square(embed_dtype)})
    for b in range(blocks):
        dtype = floats[b % len(floats)]
        fused = f"block{b}.qkv"
        entries.append({"name": fused, "dtype": dtype, "shape": square(dtype)})
        for i, part in enumerate("qkv"):
            entries.append({"name": f"block{b}.{part}", "of": fused, "view": f"rows{i}/3"})
        proj = f"block{b}.proj"
        entries.append({"name": proj, "dtype": floats[(b + 1) % len(floats)], "shape": square(floats[(b + 1) % len(floats)])})
        entries.append({"name": f"block{b}.proj_t", "of": proj, "view": "t"})
        entries.append({"name": f"block{b}.norm", "dtype": dtype, "shape": [67]})
        entries.append({"name": f"block{b}.bias", "dtype": floats[(b + 2) % len(floats)], "shape": [3, 31]})
        entries.append({"name": f"block{b}.step", "dtype": "int64" if "int64" in dtypes else dtype, "shape": []})
    entries.append({"name": "lm_head", "of": "embed", "view": "tied"})
    return entries


def itemsize(dtype: str) -> int:
    """Bytes per element of `dtype` (the table, else torch's)."""
    return ITEMSIZE.get(dtype) or int(payloads.torch_dtype(dtype).itemsize)


def nbytes(entries: list[dict[str, Any]]) -> int:
    """The bytes of the bases (what a round rewrites; views add no storage)."""
    total = 0
    for e in entries:
        if "of" not in e:
            numel = 1
            for d in e["shape"]:
                numel *= int(d)
            total += numel * itemsize(e["dtype"])
    return total


def tensor_count(entries: list[dict[str, Any]]) -> int:
    return len(entries)


def build(entries: list[dict[str, Any]], device: str) -> dict[str, Any]:
    """The state on `device` (zeros; `fill_round` writes a round's bytes)."""
    import torch

    state: dict[str, Any] = {}
    for e in entries:
        if "of" in e:
            state[e["name"]] = _view(state[e["of"]], e["view"])
        else:
            state[e["name"]] = torch.zeros(e["shape"], dtype=payloads.torch_dtype(e["dtype"]), device=device)
    return state


def _view(base: Any, how: str) -> Any:
    if how == "t":
        return base.t()
    if how == "tied":
        return base
    if how.startswith("rows"):
        i, n = (int(x) for x in how.removeprefix("rows").split("/"))
        step = base.shape[0] // n
        return base[i * step:(i + 1) * step]
    raise ValueError(f"unknown view {how!r}")


def fill_round(state: dict[str, Any], entries: list[dict[str, Any]], round_no: int) -> None:
    """Rewrite every base's storage in place with round `round_no`'s seeded bytes (its views
    follow: they share the storage)."""
    for e in entries:
        if "of" in e:
            continue
        base = state[e["name"]]
        numel = base.numel()
        if not numel:
            continue
        raw = round_bytes(round_no, e["name"], numel * base.element_size())
        base.view(-1).view(payloads.torch_dtype("uint8")).copy_(raw.to(base.device))


def round_bytes(round_no: int, name: str, n: int) -> Any:
    """Round `round_no`'s seeded bytes of the base `name` (a CPU uint8 tensor of n)."""
    import numpy as np
    import torch

    rng = np.random.default_rng(payloads.seed_of("wl", round_no, name))
    return torch.frombuffer(bytearray(rng.bytes(n)), dtype=torch.uint8)


def expected(entries: list[dict[str, Any]], round_no: int) -> Any:
    """Round `round_no`'s digest tree, computed here (on the host) from the layout alone."""
    state = build(entries, "cpu")
    fill_round(state, entries, round_no)
    return payloads.describe(state)


def subset(entries: list[dict[str, Any]], dtypes: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """The entries whose bases hold one of `dtypes`, with the views of those bases (pure): what
    a collective that claims only these dtypes can carry. Names and order are kept, so a round's
    bytes (seeded by name) are the same as in the whole layout."""
    kept: set[str] = set()
    out = []
    for e in entries:
        if "of" in e:
            if e["of"] in kept:
                kept.add(e["name"])
                out.append(e)
        elif e["dtype"] in dtypes:
            kept.add(e["name"])
            out.append(e)
    return out
