"""Deterministic test payloads and byte-exact digests of what was sent and what arrived: the one
payload/digest scheme of every check that moves tensors (transport, performance, recovery).

A *case* is a small JSON-able dict naming a payload; `build(case, device)` makes it the same
way in any process. `seeded(nbytes, seed)` is the plain byte buffer the usage and recovery
scenarios move (its id is the seed, so a producer's digest is asked for by seed). Values are random bytes (seeded), reinterpreted as the dtype, so floats
include NaNs with payloads, infinities and denormals: a transport that converts values instead
of moving bytes is caught.

`describe(obj)` turns a received (or sent) object into a JSON-able tree where every tensor is
replaced by its dtype, shape, device type and the sha256 of its bytes in logical (row-major)
order; `compare` diffs two trees. The data checks compare bytes and structure; the metadata
check compares dtype, shape and device; `same_bytes` (the scenarios' "arrived bit-exact")
compares structure, dtype, shape and bytes. Never allclose.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from conformance.rdt.device import to_device, to_host

if TYPE_CHECKING:
    import torch

CORE_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64", "bool")
EXTRA_DTYPES = ("int16", "uint16", "uint32", "uint64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")
ALL_DTYPES = CORE_DTYPES + EXTRA_DTYPES

# shape classes of the dtype x shape matrix (TR-001)
SHAPES: dict[str, tuple[int, ...]] = {
    "0-d": (),
    "empty": (0,),
    "empty-inner": (3, 0, 5),
    "odd-1": (1,),
    "odd-7": (7,),
    "odd-1023": (1023,),
    "2-d": (17, 31),
    "4-d": (2, 3, 5, 7),
}
# layouts for the non-contiguous check (TR-002): base shape and the view taken of it
VIEWS: dict[str, tuple[tuple[int, ...], Callable[[Any], Any]]] = {
    "slice-offset": ((16, 33), lambda b: b[3:, 5:17]),
    "transpose": ((12, 20), lambda b: b.t()),
    "step-3": ((10, 30), lambda b: b[:, ::3]),
    "step-2d-offset": ((20, 41), lambda b: b[1::2, 3::4]),
    "permute-3d": ((4, 6, 8), lambda b: b.permute(2, 0, 1)),
    "expand-stride0": ((1, 24), lambda b: b.expand(5, 24)),
    "diagonal": ((17, 17), lambda b: b.diagonal()),
    "column": ((9, 13), lambda b: b[:, 4]),
    "unfold-overlap": ((50,), lambda b: b.unfold(0, 8, 3)),
    "narrow-tail": ((1000,), lambda b: b[990:]),
    "channels-last": ((2, 3, 5, 7), lambda b: b.contiguous(memory_format=__import__("torch").channels_last)),
}
VIEW_DTYPES = ("float32", "uint8", "int16", "bool")


def torch_dtype(name: str) -> torch.dtype:
    import torch
    dtype: torch.dtype = getattr(torch, name)
    return dtype


def random_tensor(dtype: str, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Seeded random bytes viewed as `dtype` (bool: 0/1 only, the only valid bool bytes)."""
    import torch

    dt = torch_dtype(dtype)
    numel = int(np.prod(shape)) if shape else 1
    nbytes = numel * torch.empty((), dtype=dt).element_size()
    raw = np.random.default_rng(seed).integers(0, 256, size=nbytes, dtype=np.uint8)
    if dtype == "bool":
        raw &= 1
    t = torch.from_numpy(raw).view(dt) if nbytes else torch.empty(0, dtype=dt)
    return t.reshape(shape)


def seed_of(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:4], "little")


# ---------------------------------------------------------------------------- cases
def tensor_case(dtype: str, shape_name: str) -> dict[str, Any]:
    return {"id": f"{dtype}/{shape_name}", "kind": "tensor", "dtype": dtype, "shape": list(SHAPES[shape_name]),
            "shape_name": shape_name}


def view_case(dtype: str, view: str) -> dict[str, Any]:
    return {"id": f"{dtype}/{view}", "kind": "view", "dtype": dtype, "view": view}


def buffer_case(nbytes: int, tag: str = "") -> dict[str, Any]:
    """A 1-D uint8 tensor of nbytes (large, performance, leak and concurrency payloads)."""
    return {"id": f"buffer/{nbytes}{tag}", "kind": "buffer", "nbytes": int(nbytes)}


def seeded(nbytes: int, seed: int) -> dict[str, Any]:
    """A 1-D uint8 tensor of nbytes from `seed`, whose id is the seed (the scenarios' payloads)."""
    return {"id": int(seed), "kind": "buffer", "nbytes": int(nbytes), "seed": int(seed)}


CONTAINERS = ("list-mixed", "dict-nested", "tuple-and-data", "many-small", "same-tensor-twice")


def container_case(name: str) -> dict[str, Any]:
    return {"id": f"container/{name}", "kind": "container", "name": name}


def _container(name: str, seed: int) -> Any:
    def t(dtype: str, shape: tuple[int, ...], k: int) -> torch.Tensor:
        return random_tensor(dtype, shape, seed + k)

    if name == "list-mixed":
        return [t("float32", (8, 16), 1), t("uint8", (1000,), 2), t("int16", (3, 4, 5), 3), t("bool", (33,), 4)]
    if name == "dict-nested":
        return {"weights": t("float32", (64, 32), 1), "bias": t("float32", (32,), 2),
                "layers": [t("int16", (7, 9), 3), {"mask": t("bool", (5, 5), 4), "step": 41}],
                "name": "dense-1"}
    if name == "tuple-and-data":
        return (t("float32", (128,), 1), np.arange(1 << 18, dtype=np.int64), b"\x00\x01" * 300_000,
                {"lr": 0.125, "tags": ["a", "b"]}, t("uint8", (3, 3), 2))
    if name == "many-small":
        return [t("float32", (i + 1,), i) for i in range(32)]
    if name == "same-tensor-twice":
        shared = t("float32", (40, 10), 1)
        return {"a": shared, "b": shared, "c": [shared, t("uint8", (16,), 2)]}
    raise ValueError(f"unknown container {name}")


def build(case: dict[str, Any], device: str = "cpu") -> Any:
    """The payload a case names, with every tensor on `device` (a torch device type)."""
    return _build_pair(case, device)[1]


def build_with_digest(case: dict[str, Any], device: str = "cpu") -> tuple[Any, Any]:
    """(the payload on `device`, its describe() digest) with the digest taken from the host copy
    the payload was made from: nothing waits for the device, so the payload returns while its
    host-to-device copies may still be queued on the device's stream, as a real producer's
    kernels are (a transport must synchronize before it reads device memory)."""
    host, obj = _build_pair(case, device)
    return obj, describe(host, device=device)


def _build_pair(case: dict[str, Any], device: str) -> tuple[Any, Any]:
    """(the payload on the host, the same payload on `device`)."""
    import torch

    seed = int(case["seed"]) if "seed" in case else seed_of(case["id"])
    kind = case["kind"]
    if kind == "tensor":
        host = random_tensor(case["dtype"], tuple(case["shape"]), seed)
        return host, host.to(device)
    if kind == "view":
        shape, fn = VIEWS[case["view"]]
        base = random_tensor(case["dtype"], shape, seed)
        return fn(base), fn(base.to(device))
    if kind == "buffer":
        n = case["nbytes"]
        host = torch.from_numpy(np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8))
        return host, host.to(device)
    if kind == "container":
        tree = _container(case["name"], seed)
        return tree, to_device(tree, device)
    raise ValueError(f"unknown case kind {kind}")


# ---------------------------------------------------------------------------- digests
def tensor_bytes(t: torch.Tensor) -> np.ndarray:
    """The tensor's elements in row-major order as a uint8 array (every dtype; no copy when
    the tensor is a contiguous CPU tensor, so 256 MiB payloads are hashed in place)."""
    import torch

    c = to_host(t.detach()).contiguous().reshape(-1)   # stream-ordered: waits for the device's queued work
    if c.numel() == 0:
        return np.empty(0, dtype=np.uint8)
    data: np.ndarray = c.view(torch.uint8).numpy()
    return data


def describe_tensor(t: torch.Tensor, device: str | None = None) -> dict[str, Any]:
    """A tensor's digest; `device` names the device type of the tensor `t` is a host copy of."""
    data = tensor_bytes(t)
    return {"tensor": True, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "device": device or t.device.type, "device_index": t.device.index if device is None else None,
            "nbytes": int(data.size), "sha256": hashlib.sha256(data.data).hexdigest(),
            "head": data[:8].tobytes().hex(), "contiguous": bool(t.is_contiguous())}


def describe(obj: object, device: str | None = None) -> Any:
    """JSON-able tree of an object, tensors replaced by their digests (taken through a host copy:
    the device's own `.to("cpu")`, which waits for the device's queued work)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return describe_tensor(obj, device)
    if isinstance(obj, (list, tuple)):
        return {"seq": type(obj).__name__, "items": [describe(x, device) for x in obj]}
    if isinstance(obj, dict):
        return {"map": {str(k): describe(v, device) for k, v in obj.items()}}
    if isinstance(obj, np.ndarray):
        return {"ndarray": str(obj.dtype), "shape": list(obj.shape), "sha256": hashlib.sha256(obj.tobytes()).hexdigest()}
    if isinstance(obj, (bytes, bytearray)):
        return {"bytes": len(obj), "sha256": hashlib.sha256(bytes(obj)).hexdigest()}
    return {"value": repr(obj)}


def tensors_in(tree: object, path: str = "") -> Iterable[tuple[str, dict[str, Any]]]:
    """(path, tensor digest) for every tensor in a describe() tree."""
    if isinstance(tree, dict) and tree.get("tensor"):
        yield path or "<root>", tree
    elif isinstance(tree, dict) and "items" in tree:
        for i, x in enumerate(tree["items"]):
            yield from tensors_in(x, f"{path}[{i}]")
    elif isinstance(tree, dict) and "map" in tree:
        for k, v in tree["map"].items():
            yield from tensors_in(v, f"{path}.{k}" if path else k)


DATA_FIELDS = ("nbytes", "sha256")
META_FIELDS = ("dtype", "shape", "device")
EXACT_FIELDS = ("dtype", "shape") + DATA_FIELDS


def compare(sent: object, got: object, fields: tuple[str, ...] = DATA_FIELDS, path: str = "") -> list[str]:
    """Differences between two describe() trees: structure always, tensors on `fields`."""
    where = path or "<root>"
    if isinstance(sent, dict) and sent.get("tensor"):
        if not (isinstance(got, dict) and got.get("tensor")):
            return [f"{where}: sent a tensor, received {_kind(got)}"]
        diffs = [f"{f} {got.get(f)!r} != sent {sent.get(f)!r}" for f in fields if sent.get(f) != got.get(f)]
        if diffs and "sha256" in fields and sent.get("sha256") != got.get("sha256"):
            diffs.append(f"first bytes {got.get('head')} vs sent {sent.get('head')}")
        return [f"{where} ({sent['dtype']}{sent['shape']}): " + "; ".join(diffs)] if diffs else []
    if isinstance(sent, dict) and "items" in sent:
        if not (isinstance(got, dict) and got.get("seq") == sent["seq"] and len(got["items"]) == len(sent["items"])):
            return [f"{where}: sent a {sent['seq']} of {len(sent['items'])}, received {_kind(got)}"]
        out: list[str] = []
        for i, (a, b) in enumerate(zip(sent["items"], got["items"])):
            out += compare(a, b, fields, f"{path}[{i}]")
        return out
    if isinstance(sent, dict) and "map" in sent:
        if not (isinstance(got, dict) and "map" in got and set(got["map"]) == set(sent["map"])):
            return [f"{where}: sent a dict with keys {sorted(sent['map'])}, received {_kind(got)}"]
        out = []
        for k in sent["map"]:
            out += compare(sent["map"][k], got["map"][k], fields, f"{path}.{k}" if path else k)
        return out
    return [] if sent == got else [f"{where}: sent {_short(sent)}, received {_short(got)}"]


def same_bytes(sent: object, got: object) -> bool:
    """Whether `got` is `sent` bit-exact: the same structure, dtypes, shapes and bytes (the device a
    digest was taken on may differ: the driver digests what it fetched on the host)."""
    return not compare(sent, got, EXACT_FIELDS)


def _kind(tree: object) -> str:
    if isinstance(tree, dict):
        if tree.get("tensor"):
            return f"a tensor {tree.get('dtype')}{tree.get('shape')}"
        if "items" in tree:
            return f"a {tree['seq']} of {len(tree['items'])}"
        if "map" in tree:
            return f"a dict with keys {sorted(tree['map'])}"
    return _short(tree)


def _short(tree: object) -> str:
    return repr(tree)[:120]
