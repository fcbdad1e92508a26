"""RDT over SIMCOLL: the tensor transport a vendor registers beside its collective backend.

Ray 2.60 carries RDT (`@ray.method(tensor_transport=...)`) over any registered collective
backend through `CollectiveTensorTransport`, which sends and receives with
`ray.util.collective.send/recv` in the group that `ray.experimental.collective.
create_collective_group` made over the two actors. A vendor subclasses it, names its backend,
and registers it in the driver under the *same* name, before creating the actors:

    register_collective_backend("SIMCOLL", SimCollGroup)                 # every process
    register_tensor_transport("SIMCOLL", ["cpu"], SimCollTensorTransport, torch.Tensor)   # the driver

The transport is two-sided (the receiver's recv meets the sender's send) and cannot abort; Ray
pushes the class to actors created with `enable_tensor_transport=True` after the registration.
Kept apart from collective.py, so the backend alone imports nothing of Ray's RDT.
"""
from __future__ import annotations

from ray.experimental.rdt.collective_tensor_transport import CollectiveTensorTransport

from conformance.simulated.collective import NAME


class SimCollTensorTransport(CollectiveTensorTransport):
    def tensor_transport_backend(self) -> str:
        return NAME
