"""The workload area's one door into the collective area.

WL-002 (data-parallel steps) and WL-001's broadcast rounds run over the manifest's collective
backend, whose harness (the block's config, the run's context with its member pool and bounded
waits, the member actor and the backend's registration) lives in conformance.areas.collective.
Areas do not import each other (tests/unit/test_layers.py); these edges are listed there in
KNOWN_CROSSINGS until that harness moves into the core as the RDT harness did (conformance/rdt/).
"""
from conformance.areas.collective.config import CollectiveConfig, collective_config
from conformance.areas.collective.context import POOL_SIZE, CollectiveContext, CollectiveError, bounded
from conformance.areas.collective.members import CollectiveMember, register_backend

__all__ = ["POOL_SIZE", "CollectiveConfig", "CollectiveContext", "CollectiveError", "CollectiveMember", "bounded",
           "collective_config", "register_backend"]
