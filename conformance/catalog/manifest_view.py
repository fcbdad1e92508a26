"""The vendor manifest as types: its blocks read once from a schema-valid document.

load_manifest (catalog/manifest.py) validates the manifest against schemas/manifest.schema.json and
builds this view (`Manifest.view`); the code that starts clusters, probes nodes and configures the
transport and collective checks reads these fields instead of indexing strings into the dict.
`ManifestView.from_json` is the one boundary, and it fills what an absent property means: the
schema's `default` where it states one, else the value the code applied before the view (`FILLED`);
tests/unit/test_manifest_view.py holds each field's name and type to the schema, and each filled
value to the schema's default. What stays JSON says so: a fault driver's `options` (an open object
the driver judges). The embedded manifest a report carries is not read through this view: verify
reads an untrusted document (report/judges.py narrows it itself).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

Env = Mapping[str, str]

# what an absent accelerator.quantities / cluster property means (the schema's defaults; the test holds them equal)
DEFAULT_QUANTITIES = {"valid": [1], "invalid": []}
CLUSTER_DEFAULTS = {"nodes": 1, "num_cpus_per_node": 2, "object_store_memory_mb": 300}
# what an absent collective property means (the schema's defaults; collective/config.py's ALL_OPS and
# DEFAULT_DTYPES are these, which the collective judges apply to a report's embedded manifest too)
COLLECTIVE_DEFAULTS: dict[str, Any] = {
    "dtypes": ["float32"],
    "ops": ["allreduce", "reduce", "broadcast", "allgather", "reducescatter", "barrier", "sendrecv"],
    "rdt_devices": ["cpu"], "requires_device": True, "devices": ["cpu"]}

# where the view fills an absent property the schema states no default for, with what the code applied
FILLED: dict[tuple[str, ...], Any] = {
    ("plugin",): {},
    ("accelerator", "env"): {},
    ("accelerator", "hosts"): {},
    ("accelerator", "quantities"): {},
    ("transport", "expected"): {},
    ("cluster",): {},
    ("cluster", "node_env"): [],
}


@dataclass(frozen=True)
class Plugin:
    python_path: tuple[str, ...]        # relative to the manifest (Manifest.python_path resolves them)
    version: str | None
    artifact: str | None


@dataclass(frozen=True)
class Expected:
    """accelerator.expected: what every node with devices must report."""

    devices_per_node: int
    accelerator_type: str


@dataclass(frozen=True)
class Quantities:
    """accelerator.quantities: the fractional/whole requests the plugin must grant or refuse."""

    valid: tuple[float, ...]
    invalid: tuple[float, ...]


@dataclass(frozen=True)
class Hosts:
    """accelerator.hosts: environment overlays (over accelerator.env) for hosts unlike a device host."""

    without_device: Env | None
    library_error: Env | None
    unknown_device: Env | None

    def overlay(self, kind: str) -> Env | None:
        """The overlay for a host of `kind` (without_device | library_error | unknown_device), or None."""
        if kind not in ("without_device", "library_error", "unknown_device"):
            return None
        value: Env | None = getattr(self, kind)
        return value


@dataclass(frozen=True)
class Accelerator:
    manager: str                        # "pkg.mod:Class", the AcceleratorManager subclass
    resource_name: str
    expected: Expected
    env: Env
    hosts: Hosts
    torch_device: str | None
    noset_env_var: str | None
    quantities: Quantities


@dataclass(frozen=True)
class TransportExpected:
    link_bandwidth_gbps: float | None


@dataclass(frozen=True)
class Transport:
    name: str                           # as written (Ray knows it upper-cased)
    manager: str | None                 # "pkg.mod:Class" for a custom transport
    devices: tuple[str, ...]
    expected: TransportExpected


@dataclass(frozen=True)
class Collective:
    """The collective block, an absent property as the schema's default (COLLECTIVE_DEFAULTS)."""

    backend: str
    group_class: str | None
    register: str | None
    dtypes: tuple[str, ...]
    ops: tuple[str, ...]
    nominal_link_gbps: float | None
    rdt_transport: str | None
    rdt_devices: tuple[str, ...]
    requires_device: bool
    devices: tuple[str, ...]


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    kind: str
    min_bandwidth_gbps: float | None


@dataclass(frozen=True)
class TopologyExpected:
    devices_per_node: int | None
    links: tuple[Link, ...] | None
    fully_connected: bool | None
    device_domains: tuple[tuple[str, ...], ...] | None
    domains: tuple[str, ...] | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TopologyExpected:
        """topology.expected of a schema-valid manifest (KeyError otherwise): the run's own, and the
        one a report embeds, which the TL-006 judge reads after the manifest schema passed it."""
        links = doc.get("links")
        return cls(devices_per_node=doc.get("devices_per_node"),
                   links=None if links is None else tuple(
                       Link(a=link["a"], b=link["b"], kind=link["kind"], min_bandwidth_gbps=link.get("min_bandwidth_gbps"))
                       for link in links),
                   fully_connected=doc.get("fully_connected"),
                   device_domains=None if doc.get("device_domains") is None else tuple(
                       tuple(d) for d in doc["device_domains"]),
                   domains=_tuple(doc.get("domains")))


@dataclass(frozen=True)
class Topology:
    provider: str | None
    expected: TopologyExpected | None


@dataclass(frozen=True)
class FaultDriver:
    driver: str
    options: Mapping[str, Any] | None   # open: the driver judges its own options


@dataclass(frozen=True)
class Cluster:
    """The cluster the suite starts (ignored on a --ray-address cluster but for fault_driver)."""

    nodes: int
    num_cpus_per_node: int
    object_store_memory_mb: int
    node_env: tuple[Env, ...]           # at most one per node (load_manifest refuses more)
    fault_driver: FaultDriver | None


@dataclass(frozen=True)
class ManifestView:
    """A schema-valid manifest, typed."""

    schema_version: int
    vendor: str
    product: str
    plugin: Plugin
    accelerator: Accelerator
    collective: Collective | None
    transport: Transport | None
    topology: Topology | None
    cluster: Cluster

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ManifestView:
        """The typed view of `doc`, which must have passed the manifest schema (KeyError otherwise)."""
        collective, transport, topology = doc.get("collective"), doc.get("transport"), doc.get("topology")
        return cls(schema_version=doc["schema_version"], vendor=doc["vendor"], product=doc["product"],
                   plugin=_plugin(doc.get("plugin", FILLED[("plugin",)])), accelerator=_accelerator(doc["accelerator"]),
                   collective=None if collective is None else _collective(collective),
                   transport=None if transport is None else _transport(transport),
                   topology=None if topology is None else _topology(topology),
                   cluster=_cluster(doc.get("cluster", FILLED[("cluster",)])))


def _tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _plugin(doc: Mapping[str, Any]) -> Plugin:
    return Plugin(python_path=tuple(doc.get("python_path", [])), version=doc.get("version"),
                  artifact=doc.get("artifact"))


def _accelerator(doc: Mapping[str, Any]) -> Accelerator:
    hosts = doc.get("hosts", FILLED[("accelerator", "hosts")])
    q = doc.get("quantities", FILLED[("accelerator", "quantities")])
    return Accelerator(manager=doc["manager"], resource_name=doc["resource_name"],
                       expected=Expected(devices_per_node=doc["expected"]["devices_per_node"],
                                         accelerator_type=doc["expected"]["accelerator_type"]),
                       env=dict(doc.get("env", FILLED[("accelerator", "env")])),
                       hosts=Hosts(without_device=hosts.get("without_device"), library_error=hosts.get("library_error"),
                                   unknown_device=hosts.get("unknown_device")),
                       torch_device=doc.get("torch_device"), noset_env_var=doc.get("noset_env_var"),
                       quantities=Quantities(valid=tuple(q.get("valid", DEFAULT_QUANTITIES["valid"])),
                                             invalid=tuple(q.get("invalid", DEFAULT_QUANTITIES["invalid"]))))


def _transport(doc: Mapping[str, Any]) -> Transport:
    expected = doc.get("expected", FILLED[("transport", "expected")])
    return Transport(name=doc["name"], manager=doc.get("manager"), devices=tuple(doc.get("devices", ["cpu"])),
                     expected=TransportExpected(link_bandwidth_gbps=expected.get("link_bandwidth_gbps")))


def _collective(doc: Mapping[str, Any]) -> Collective:
    def given(name: str) -> Any:
        return doc.get(name, COLLECTIVE_DEFAULTS[name])

    return Collective(backend=doc["backend"], group_class=doc.get("group_class"), register=doc.get("register"),
                      dtypes=tuple(given("dtypes")), ops=tuple(given("ops")),
                      nominal_link_gbps=doc.get("nominal_link_gbps"), rdt_transport=doc.get("rdt_transport"),
                      rdt_devices=tuple(given("rdt_devices")), requires_device=bool(given("requires_device")),
                      devices=tuple(given("devices")))


def _topology(doc: Mapping[str, Any]) -> Topology:
    expected = doc.get("expected")
    return Topology(provider=doc.get("provider"),
                    # an empty `expected: {}` declares nothing to compare (TL-006 not applicable, as its judge says)
                    expected=TopologyExpected.from_json(expected) if expected else None)


def _cluster(doc: Mapping[str, Any]) -> Cluster:
    driver = doc.get("fault_driver")
    return Cluster(nodes=doc.get("nodes", CLUSTER_DEFAULTS["nodes"]),
                   num_cpus_per_node=doc.get("num_cpus_per_node", CLUSTER_DEFAULTS["num_cpus_per_node"]),
                   object_store_memory_mb=doc.get("object_store_memory_mb", CLUSTER_DEFAULTS["object_store_memory_mb"]),
                   node_env=tuple(dict(e) for e in doc.get("node_env", FILLED[("cluster", "node_env")])),
                   fault_driver=None if driver is None else FaultDriver(driver=driver["driver"],
                                                                        options=driver.get("options")))
