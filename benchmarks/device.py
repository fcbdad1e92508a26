"""What the simulated device `simacc` (conformance/simulated/device) costs in CPU, beside the host.

    python benchmarks/device.py

Its kernels are Python over torch's CPU kernels and its memory is reached by copies, so every
check that puts tensors on it pays for that: these figures say how much. Measured in a fresh
process, each beside its host baseline from the same run (median of 5):

* the first use in a process (torch loads modules for Python devices on the first op): paid
  once per worker, at endpoint start (conformance.rdt.endpoint);
* one small op enqueued and synchronized, beside the same op on the host;
* host-to-device and device-to-host copies, and a device clone, per size, in GiB/s beside a
  host clone of the same size.

Prints figures, never asserts: speed is measured here, not in timed unit tests.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

FIRST_USE = ("import time, torch\nfrom conformance.simulated import device\ndevice.install()\n"
             "t = time.perf_counter(); torch.zeros(1, device='simacc').to('cpu'); print(time.perf_counter() - t)")
SIZES = (64 << 10, 1 << 20, 16 << 20)


def median_s(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    first = [float(subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(2)]
    import torch

    from conformance.simulated import device
    device.install()
    torch.zeros(1, device="simacc").to("cpu")
    print(f"simacc first use in a process: {statistics.median(first):.2f} s (paid once per worker, at endpoint start)")
    small_host, small_dev = torch.ones(16), torch.ones(16).to("simacc")
    host_op = median_s(lambda: small_host.add_(1))
    dev_op = median_s(lambda: (small_dev.add_(1), torch.simacc.synchronize()))
    print(f"one small op: host {host_op * 1e6:.1f} us, simacc {dev_op * 1e6:.1f} us enqueued and synchronized "
          f"({dev_op / host_op:.0f}x)")
    print(f"{'size':>8}  {'host clone':>10}  {'to simacc':>10}  {'to host':>10}  {'simacc clone':>12}  (GiB/s)")
    for n in SIZES:
        rates = copy_rates(n)
        print(f"{n >> 10:>6}Ki  " + "  ".join(f"{r:>10.2f}" if i < 3 else f"{r:>12.2f}" for i, r in enumerate(rates)))


def copy_rates(n: int) -> list[float]:
    """GiB/s of a host clone, a copy to the device, a copy back and a device clone of n bytes."""
    import torch

    host = torch.ones(n, dtype=torch.uint8)
    on_dev = host.to("simacc")
    torch.simacc.synchronize()
    return [n / median_s(f) / 2 ** 30 for f in (
        lambda: host.clone(),
        lambda: (host.to("simacc"), torch.simacc.synchronize()),
        lambda: on_dev.to("cpu"),
        lambda: (on_dev.clone(), torch.simacc.synchronize()))]


if __name__ == "__main__":
    main()
