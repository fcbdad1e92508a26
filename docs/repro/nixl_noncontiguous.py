"""Ray's NIXL tensor transport refuses a non-contiguous tensor that the object store moves.

Reproduction for an upstream issue (Ray 2.60.0, torch 2.13.0, nixl 1.5.1, CPU only: UCX over
host memory; the same check runs for `cuda` tensors). Run: python nixl_noncontiguous.py
Prints one line per path and exits 0 when it reproduces (1 when NIXL moved the view).
"""
import ray
import torch


@ray.remote(enable_tensor_transport=True)
class Producer:
    def __init__(self) -> None:
        self.base = torch.arange(12, dtype=torch.float32).reshape(3, 4)

    def view(self) -> torch.Tensor:          # a transpose: a view with strides (1, 4)
        return self.base.T

    @ray.method(tensor_transport="NIXL")
    def view_nixl(self) -> torch.Tensor:
        return self.base.T


@ray.remote(enable_tensor_transport=True)
class Consumer:
    def values(self, t: torch.Tensor) -> list:
        return t.tolist()


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    producer, consumer = Producer.remote(), Consumer.remote()
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4).T.tolist()
    by_store = ray.get(consumer.values.remote(producer.view.remote()))
    print("object store:", "arrives as its values" if by_store == expected else f"WRONG {by_store}")
    try:
        by_nixl = ray.get(consumer.values.remote(producer.view_nixl.remote()))
        print("NIXL:", "arrives as its values" if by_nixl == expected else f"WRONG {by_nixl}")
        reproduced = False
    except Exception as exc:  # the producer's task fails: RayTaskError(ValueError)
        print("NIXL: raises", type(exc).__name__, str(exc).strip().splitlines()[-1])
        reproduced = True
    ray.shutdown()
    raise SystemExit(0 if reproduced else 1)
