"""Node shapes: the NUMA layout of a simulated machine (zones, CPUs, memory, hugepages, devices, reserved CPUs).

A shape is hardware plus kubelet reservations. `NodeShape.topology(...)` turns it into the `NodeTopology` a simulated
kubelet starts from (capacity = hardware, allocatable = capacity minus reserved), and `NodeShape.allocatable()` is the
node-level `status.allocatable` kube-scheduler sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from knuma.api.dra.capacity import CapacityRange, CapacityRequestPolicy, parse_request_policy
from knuma.api.dra.fields import FieldErrors, dns_label_error, dns_subdomain_error, qualified_name_errors
from knuma.api.dra.resourceslice import DEVICES_MAX
from knuma.api.nrt import MAX_ZONE_CPUS, Policy, Scope, TopologyManagerConfig
from knuma.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, amount_of, parse_resource_list
from knuma.api.types import INT32_MAX, INT64_MAX
from knuma.errors import InvalidInput
from knuma.quantity import QuantityError, parse_quantity
from knuma.topology.cpumanager import CPUManagerOptions, CPUManagerOptionsError
from knuma.topology.kubelet import MAX_MODELLED_NUMA_NODES
from knuma.topology.node import NodeTopology, NUMAZone

__all__ = ["BUILTIN_SHAPES", "MAX_NUMA_ZONES", "DraDeviceGroup", "NodeShape", "ShapeError", "shape_from_dict"]

GI = 1024**3
MILLI = 1000
DEFAULT_MAX_PODS = 110
DEFAULT_EPHEMERAL_STORAGE = 100 * GI
MAX_NUMA_ZONES = MAX_MODELLED_NUMA_NODES
"""NUMA zones a shape may have: as many as knuma models. Beyond 8 the kubelet needs `max-allowable-numa-nodes` (which
the simulated kubelets set) and its hint providers walk every combination of zones, 2^zones masks, as knuma's model
does: 24 nodes of 16 zones under `restricted` take about 20 s per scheduler on the default scenario's workload
(`single-numa-node` 4 s)."""


class ShapeError(InvalidInput):
    """A node shape that cannot describe a machine."""


@dataclass(frozen=True)
class DraPartition:
    """A partition profile of a partitionable DRA device (MIG-like): `count` per device, each drawing `compute` of
    the device's compute slices and `memory` of its memory from the counters the device shares with them."""

    profile: str
    """The profile (`3g.40gb`): the devices' `profile` attribute and, with dots as dashes, part of their names."""
    count: int
    compute: int
    memory: str


@dataclass(frozen=True)
class DraDeviceGroup:
    """Devices one simulated DRA driver publishes in ResourceSlices, `per_zone` on every NUMA zone (see
    `knuma.testbed.dra`): not counted in `resources`, because DRA devices are claimed, not requested."""

    driver: str
    """The driver name, e.g. `gpu.sim.knuma.io`; also the domain of the devices' own attributes."""
    prefix: str
    """Device names are `<prefix>-<index>` (index over the whole machine, zone by zone)."""
    per_zone: int
    model: str
    capacity: Mapping[str, str] = field(default_factory=dict)
    """Per-device capacity as quantities (`memory: 80Gi`, `bandwidth: 400G`)."""
    partitions: tuple[DraPartition, ...] = ()
    """Partition profiles (none: the devices are only given out whole). Each device is then published whole and as
    these partitions, sharing the counters `compute` (`compute_slices`) and `memory` (the device's capacity)."""
    compute_slices: int = 0
    shared: bool = False
    """Every device may be allocated to many claims at once (`allowMultipleAllocations`, consumable capacity,
    KEP-5075), each allocation taking part of its capacities (a NIC whose bandwidth many pods share)."""
    request_policies: Mapping[str, CapacityRequestPolicy] = field(default_factory=dict)
    """Capacity name -> what one allocation may take of it (`requestPolicy`); only on a `shared` group."""


@dataclass(frozen=True)
class NodeShape:
    """One machine type: `zones` identical NUMA zones, each with `cpus` CPUs, `memory` bytes and `resources`
    (hugepages, devices), minus `reserved_cpus` (`reservedSystemCPUs`, spread over the zones from NUMA 0) and
    `reserved_memory` bytes per zone (`reservedMemory`)."""

    name: str
    zones: int
    cpus: int
    memory: int
    resources: Mapping[str, int] = field(default_factory=dict)
    reserved_cpus: int = 0
    reserved_memory: int = 0
    max_pods: int = DEFAULT_MAX_PODS
    description: str = ""
    dra: tuple[DraDeviceGroup, ...] = ()
    """DRA devices (ResourceSlices) of the machine, beyond the device-plugin `resources`."""
    pcie_roots_per_zone: int = 1
    """Device `i` of every group on a zone sits on PCIe root `i % pcie_roots_per_zone` of that zone, so the i-th GPU
    and the i-th NIC share a root (`resource.kubernetes.io/pcieRoot`), as on DGX-like machines."""
    cpu_manager: CPUManagerOptions = field(default_factory=CPUManagerOptions)
    """The kubelet's `cpuManagerPolicyOptions` on this machine type (e.g. `full-pcpus-only`); the CPU topology facts
    (threads per core, siblings of reserved CPUs) are filled in by `topology()` from the machine's numbering."""
    sockets: int = 0
    """Sockets (physical packages), each holding the same number of consecutive zones; 0 means one socket per zone
    for one or two zones or an odd number of them, two zones per socket otherwise (sub-NUMA clustering)."""

    def __post_init__(self) -> None:
        if self.zones < 1:
            raise ShapeError(f"shape {self.name}: needs at least one NUMA zone")
        if self.cpus < 1:
            raise ShapeError(f"shape {self.name}: needs at least one CPU per zone")
        if self.reserved_cpus >= self.zones * self.cpus:
            raise ShapeError(f"shape {self.name}: reservedCPUs ({self.reserved_cpus}) leaves no CPU to pods")
        if self.reserved_memory >= self.memory:
            raise ShapeError(f"shape {self.name}: reservedMemory leaves no memory to pods")
        if self.sockets < 0 or self.sockets > self.zones or (self.sockets and self.zones % self.sockets):
            raise ShapeError(
                f"shape {self.name}: sockets must divide its {self.zones} NUMA zone(s) evenly (every socket holds as "
                f"many zones, as the kubelet's CPU topology assumes), got {self.sockets}"
            )

    def reserved_per_zone(self) -> list[int]:
        """Reserved CPUs taken round-robin from NUMA 0 (`reservedSystemCPUs: 0,<sibling>...` on real machines)."""
        per_zone = [0] * self.zones
        for index in range(self.reserved_cpus):
            per_zone[index % self.zones] += 1
        return per_zone

    @property
    def threads_per_core(self) -> int:
        """Two hardware threads per core when a zone has an even number of CPUs, else one (as
        `knuma.local.nodes.machine.Machine` numbers them: CPU c and c + total/2 share a core)."""
        return 1 if self.cpus % 2 else 2

    def reserved_core_siblings(self) -> int:
        """CPUs that share a core with one of the reserved CPUs `0..reserved-1` without being reserved."""
        if self.threads_per_core == 1:
            return 0
        half = self.zones * self.cpus // 2
        reserved = set(range(self.reserved_cpus))
        return len({cpu % half + offset for cpu in reserved for offset in (0, half)} - reserved)

    @property
    def socket_count(self) -> int:
        if self.sockets:
            return self.sockets
        return self.zones if self.zones <= 2 or self.zones % 2 else self.zones // 2

    def socket_of(self, numa_id: int) -> int:
        """The socket of a zone: consecutive zones share one (the SLIT-like distances say so: 12 within a socket,
        20+ across), as the simulated machine's `physical_package_id` does."""
        return numa_id // (self.zones // self.socket_count)

    def cpu_manager_options(self) -> CPUManagerOptions:
        """The shape's CPU manager options with its CPU topology facts (the socket map as the exporter reads it from
        sysfs: it decides `numaFirst` or `socketsFirst`, and `align-by-socket`)."""
        sockets = {z: self.socket_of(z) for z in range(self.zones)}
        return replace(
            self.cpu_manager,
            cpus_per_core=self.threads_per_core,
            reserved_core_siblings=self.reserved_core_siblings(),
            numa_sockets=sockets,
        )

    def zone_capacity(self) -> dict[str, int]:
        return {CPU: self.cpus * MILLI, MEMORY: self.memory, **self.resources}

    def zone_allocatable(self, numa_id: int) -> dict[str, int]:
        out = self.zone_capacity()
        out[CPU] -= self.reserved_per_zone()[numa_id] * MILLI
        out[MEMORY] -= self.reserved_memory
        return out

    def allocatable(self) -> dict[str, int]:
        """Node `status.allocatable`: the zones' allocatable summed, plus pods and ephemeral storage."""
        total: dict[str, int] = {PODS: self.max_pods, EPHEMERAL_STORAGE: DEFAULT_EPHEMERAL_STORAGE}
        for numa_id in range(self.zones):
            for name, amount in self.zone_allocatable(numa_id).items():
                total[name] = total.get(name, 0) + amount
        return total

    def topology(
        self, node_name: str, policy: Policy = Policy.SINGLE_NUMA_NODE, scope: Scope = Scope.CONTAINER
    ) -> NodeTopology:
        """The empty node as its kubelet sees it."""
        zones = []
        for numa_id in range(self.zones):
            allocatable = self.zone_allocatable(numa_id)
            distances = {
                other: 10 if other == numa_id else _distance(self.socket_of(numa_id), self.socket_of(other))
                for other in range(self.zones)
            }
            zones.append(NUMAZone(numa_id, self.zone_capacity(), allocatable, dict(allocatable), distances))
        max_numa = max(8, self.zones)  # `max-allowable-numa-nodes` raised when the machine needs it
        config = TopologyManagerConfig(policy, scope, max_numa)
        return NodeTopology(node_name, tuple(zones), config, cpu_manager=self.cpu_manager_options())


def _distance(socket_a: int, socket_b: int) -> int:
    """SLIT-like distances between two zones on these sockets: 12 on the same socket, 20+ across."""
    if socket_a == socket_b:
        return 12
    return 20 + 2 * (abs(socket_a - socket_b) - 1)


BUILTIN_SHAPES: dict[str, NodeShape] = {
    shape.name: shape
    for shape in (
        NodeShape(
            "two-socket",
            zones=2,
            cpus=32,
            memory=128 * GI,
            resources={"hugepages-1Gi": 32 * GI},
            reserved_cpus=2,
            reserved_memory=2 * GI,
            description="2 sockets x 32 CPUs, 128Gi and 32 x 1Gi hugepages per NUMA zone, 2 reserved CPUs",
        ),
        NodeShape(
            "four-numa",
            zones=4,
            cpus=16,
            memory=64 * GI,
            reserved_cpus=4,
            reserved_memory=1 * GI,
            description="4 NUMA zones (sub-NUMA clustering) x 16 CPUs and 64Gi, 4 reserved CPUs",
        ),
        NodeShape(
            "eight-numa",
            zones=8,
            cpus=12,
            memory=48 * GI,
            reserved_cpus=4,
            reserved_memory=1 * GI,
            description="8 NUMA zones x 12 CPUs and 48Gi (e.g. 4-socket with SNC-2), 4 reserved CPUs",
        ),
        NodeShape(
            "gpu",
            zones=2,
            cpus=48,
            memory=256 * GI,
            resources={"nvidia.com/gpu": 4},
            reserved_cpus=2,
            reserved_memory=2 * GI,
            description="GPU server: 2 zones x 48 CPUs, 256Gi and 4 GPUs (device plugin) and 2 DRA NICs, 2 reserved "
            "CPUs",
            dra=(DraDeviceGroup("nic.sim.knuma.io", "nic", 2, "cx7", {"bandwidth": "200G"}),),
            pcie_roots_per_zone=2,
        ),
        NodeShape(
            "dgx",
            zones=2,
            cpus=56,
            memory=1024 * GI,
            reserved_cpus=2,
            reserved_memory=4 * GI,
            description="DGX-like: 2 sockets x 56 CPUs and 1Ti; DRA: 4 GPUs and 4 NICs per socket, a GPU and a NIC on "
            "each of 4 PCIe roots per socket",
            dra=(
                DraDeviceGroup("gpu.sim.knuma.io", "gpu", 4, "h100", {"memory": "80Gi"}),
                DraDeviceGroup("nic.sim.knuma.io", "nic", 4, "cx7", {"bandwidth": "400G"}),
            ),
            pcie_roots_per_zone=4,
        ),
        NodeShape(
            "mig",
            zones=2,
            cpus=32,
            memory=256 * GI,
            reserved_cpus=2,
            reserved_memory=2 * GI,
            description="MIG-like GPU server: 2 zones x 32 CPUs and 256Gi; DRA: 2 GPUs per zone, each published "
            "whole and as 2 x 3g.40gb and 7 x 1g.10gb partitions sharing its counters",
            dra=(
                DraDeviceGroup(
                    "gpu.sim.knuma.io",
                    "gpu",
                    2,
                    "a100",
                    {"memory": "80Gi"},
                    partitions=(DraPartition("3g.40gb", 2, 3, "40Gi"), DraPartition("1g.10gb", 7, 1, "10Gi")),
                    compute_slices=7,
                ),
            ),
            pcie_roots_per_zone=2,
        ),
        NodeShape(
            "shared-nic",
            zones=2,
            cpus=32,
            memory=256 * GI,
            reserved_cpus=2,
            reserved_memory=2 * GI,
            description="Shared NICs: 2 zones x 32 CPUs and 256Gi; DRA: one 100G NIC per zone that many pods share "
            "(consumable capacity: each allocation takes 10G to 100G of bandwidth, in 10G steps, 10G by default)",
            dra=(
                DraDeviceGroup(
                    "nic.sim.knuma.io",
                    "nic",
                    1,
                    "e810",
                    {"bandwidth": "100G"},
                    shared=True,
                    request_policies={
                        "bandwidth": CapacityRequestPolicy(
                            default=parse_quantity("10G"),
                            valid_range=CapacityRange(
                                parse_quantity("10G"), parse_quantity("100G"), parse_quantity("10G")
                            ),
                        )
                    },
                ),
            ),
        ),
        NodeShape(
            "small",
            zones=2,
            cpus=8,
            memory=32 * GI,
            reserved_cpus=0,
            description="small 2-zone node for tests: 8 CPUs and 32Gi per zone",
        ),
    )
}


def shape_from_dict(name: str, raw: Any) -> NodeShape:
    """A custom shape from a cluster spec:

    ```yaml
    shapes:
      big:
        numaZones: 2
        cpusPerZone: 32
        memoryPerZone: 128Gi
        resourcesPerZone: {hugepages-1Gi: 16Gi, example.com/nic: 2}
        reservedCPUs: 2
        reservedMemoryPerZone: 1Gi
        maxPods: 110
        cpuManagerPolicyOptions: {full-pcpus-only: "true"}
        dra:                      # DRA devices, per zone (`DraDeviceGroup`; see `_dra_group`)
        - {driver: nic.sim.knuma.io, prefix: nic, perZone: 1, model: e810, shared: true,
           capacity: {bandwidth: {value: 100G, requestPolicy: {default: 10G, validRange: {min: 10G, step: 10G}}}}}
    ```
    """
    where = f"shapes.{name}"
    if not isinstance(raw, Mapping):
        raise ShapeError(f"{where}: expected a mapping with numaZones, cpusPerZone and memoryPerZone")
    known = {
        "numaZones",
        "cpusPerZone",
        "memoryPerZone",
        "resourcesPerZone",
        "reservedCPUs",
        "reservedMemoryPerZone",
        "maxPods",
        "sockets",
        "description",
        "cpuManagerPolicyOptions",
        "dra",
    }
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ShapeError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for required in ("numaZones", "cpusPerZone", "memoryPerZone"):
        if required not in raw:
            raise ShapeError(f"{where}: missing {required}")
    try:
        zones = _int(
            raw["numaZones"],
            f"{where}.numaZones",
            1,
            MAX_NUMA_ZONES,
            "the most NUMA zones knuma models (the hint merge walks all 2^zones masks)",
        )
        memory = _memory(raw["memoryPerZone"], f"{where}.memoryPerZone", zones)
        reserved_memory = _memory(raw.get("reservedMemoryPerZone", 0), f"{where}.reservedMemoryPerZone", zones)
        resources = parse_resource_list(raw.get("resourcesPerZone"), f"{where}.resourcesPerZone")
        for resource, amount in resources.items():
            _per_node(amount, zones, f"{where}.resourcesPerZone.{resource}", raw["resourcesPerZone"][resource])
        return NodeShape(
            name,
            zones=zones,
            cpus=_int(
                raw["cpusPerZone"], f"{where}.cpusPerZone", 1, MAX_ZONE_CPUS, "the most CPUs a NUMA zone may have"
            ),
            memory=memory,
            resources=resources,
            reserved_cpus=_int(raw.get("reservedCPUs", 0), f"{where}.reservedCPUs"),
            reserved_memory=reserved_memory,
            max_pods=_int(
                raw.get("maxPods", DEFAULT_MAX_PODS), f"{where}.maxPods", 0, INT32_MAX, "the kubelet's (an int32)"
            ),
            description=str(raw.get("description", "")),
            sockets=_sockets(raw.get("sockets", 0), f"{where}.sockets", zones),
            cpu_manager=_cpu_manager(raw.get("cpuManagerPolicyOptions"), f"{where}.cpuManagerPolicyOptions"),
            dra=_dra_groups(raw.get("dra"), f"{where}.dra", zones),
        )
    except ShapeError:
        raise
    except ValueError as err:
        raise ShapeError(str(err)) from None


DRA_GROUP_FIELDS = {"driver", "prefix", "perZone", "model", "capacity", "shared"}


def _dra_groups(raw: Any, where: str, zones: int) -> tuple[DraDeviceGroup, ...]:
    """A custom shape's `dra` list. Two groups of one driver need distinct prefixes: their devices share a slice,
    where names must be unique (`validateResourceSlice`), and at most `DEVICES_MAX` devices fit in it."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ShapeError(f"{where}: expected a list of device groups (driver, prefix, perZone, model, capacity)")
    groups = tuple(_dra_group(item, f"{where}[{i}]") for i, item in enumerate(raw))
    seen: set[tuple[str, str]] = set()
    devices: dict[str, int] = {}
    for i, group in enumerate(groups):
        if (group.driver, group.prefix) in seen:
            raise ShapeError(f"{where}[{i}].prefix: {group.prefix!r} is already used by a group of {group.driver}")
        seen.add((group.driver, group.prefix))
        devices[group.driver] = devices.get(group.driver, 0) + group.per_zone * zones
        if devices[group.driver] > DEVICES_MAX:
            raise ShapeError(
                f"{where}[{i}].perZone: {group.per_zone} devices on each of {zones} zones make {devices[group.driver]} "
                f"devices of {group.driver} on a node, more than the {DEVICES_MAX} its ResourceSlice holds; lower it"
            )
    return groups


def _dra_group(raw: Any, where: str) -> DraDeviceGroup:
    """One group of devices a simulated driver publishes on every zone:

    ```yaml
    driver: nic.sim.knuma.io    # a DNS subdomain of at most 63 characters (`validateDriverName`)
    prefix: nic                 # devices are <prefix>-<index>, DNS labels
    perZone: 1
    model: e810
    shared: true                # allowMultipleAllocations: many claims share each device
    capacity:
      bandwidth: 100G           # or {value: 100G, requestPolicy: {...}}; a requestPolicy needs `shared: true`
    ```

    A request policy is checked as kube-apiserver checks the slice (`knuma.api.dra.capacity`), so a shape that
    parses publishes slices the API server accepts."""
    if not isinstance(raw, Mapping):
        raise ShapeError(f"{where}: expected a mapping with driver, prefix, perZone and model")
    unknown = sorted(str(k) for k in set(raw) - DRA_GROUP_FIELDS)
    if unknown:
        raise ShapeError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(DRA_GROUP_FIELDS))}"
        )
    for required in ("driver", "prefix", "perZone", "model"):
        if required not in raw:
            raise ShapeError(f"{where}: missing {required}")
    for key in ("driver", "prefix", "model"):
        if not isinstance(raw[key], str):
            raise ShapeError(f"{where}.{key}: expected a string, got {raw[key]!r}")
    driver, prefix, model = (str(raw[key]) for key in ("driver", "prefix", "model"))
    if problem := dns_subdomain_error(driver, 63):
        raise ShapeError(f"{where}.driver: {driver!r}: {problem}")
    if problem := dns_label_error(f"{prefix}-0"):
        raise ShapeError(f"{where}.prefix: {prefix!r}: device names <prefix>-<index> must be DNS labels: {problem}")
    per_zone = _int(raw["perZone"], f"{where}.perZone", 1, DEVICES_MAX, "the devices one ResourceSlice holds")
    shared = raw.get("shared", False)
    if not isinstance(shared, bool):
        raise ShapeError(f"{where}.shared: expected true or false, got {shared!r}")
    capacity, policies = _dra_capacity(raw.get("capacity"), f"{where}.capacity", shared)
    return DraDeviceGroup(driver, prefix, per_zone, model, capacity, shared=shared, request_policies=policies)


def _dra_capacity(raw: Any, where: str, shared: bool) -> tuple[dict[str, str], dict[str, CapacityRequestPolicy]]:
    """A group's capacities (name -> quantity or `{value, requestPolicy}`) and their request policies."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise ShapeError(f"{where}: expected a mapping of capacity name to a quantity or {{value, requestPolicy}}")
    capacity: dict[str, str] = {}
    policies: dict[str, CapacityRequestPolicy] = {}
    for name, spec in raw.items():
        here = f"{where}.{name}"
        if problems := qualified_name_errors(str(name)):
            raise ShapeError(f"{here}: {'; '.join(problems)}")
        body = spec if isinstance(spec, Mapping) else {"value": spec}
        unknown = sorted(str(k) for k in set(body) - {"value", "requestPolicy"})
        if unknown:
            raise ShapeError(f"{here}: unknown field(s) {', '.join(unknown)}; known: requestPolicy, value")
        if body.get("value") is None:
            raise ShapeError(f"{here}.value: missing")
        try:
            value = parse_quantity(body["value"])
        except QuantityError as err:
            raise ShapeError(f"{here}.value: {err}") from None
        if value.nanos < 0:  # kube-apiserver takes any quantity (`validateDeviceCapacity`); no device has less than 0
            raise ShapeError(f"{here}.value: {body['value']!r} is negative; a device's capacity is 0 or more")
        capacity[str(name)] = str(value)
        if body.get("requestPolicy") is None:
            continue
        if not shared:
            raise ShapeError(
                f"{here}.requestPolicy: needs `shared: true` on the group (kube-apiserver allows a request policy "
                "only on a device with allowMultipleAllocations)"
            )
        errors = FieldErrors()
        policy = parse_request_policy(body["requestPolicy"], f"{here}.requestPolicy", errors, value, True)
        if errors.errors:
            raise ShapeError("; ".join(str(e) for e in errors.errors))
        if policy is not None:
            policies[str(name)] = policy
    return capacity, policies


def _cpu_manager(raw: Any, where: str) -> CPUManagerOptions:
    if raw is None:
        return CPUManagerOptions()
    if not isinstance(raw, Mapping):
        raise ShapeError(f'{where}: expected a mapping of option name to "true"/"false"')
    try:
        return CPUManagerOptions.parse(raw, where)
    except CPUManagerOptionsError as err:
        raise ShapeError(str(err)) from None


def _memory(value: Any, where: str, zones: int) -> int:
    """A memory quantity in bytes; an error names the spec's own key (`memoryPerZone`), not the resource name."""
    try:
        amount = amount_of(MEMORY, parse_quantity(value))
    except QuantityError as err:
        raise ShapeError(f"{where}: {err}") from None
    return _per_node(amount, zones, where, value)


def _per_node(amount: int, zones: int, where: str, value: Any) -> int:
    """`amount` of a resource on each of `zones` zones, when it is not negative and a node's total fits the int64
    that `status.allocatable` and the scheduler count in (bytes, units)."""
    if amount < 0:
        raise ShapeError(f"{where}: must not be negative, got {value!r}")
    if amount * zones > INT64_MAX:
        raise ShapeError(
            f"{where}: {value!r} on each of {zones} zones is more than a node's allocatable can hold (an int64 of "
            "base units); lower it"
        )
    return amount


def _sockets(value: Any, where: str, zones: int) -> int:
    sockets = _int(value, where, 0, zones, "one per NUMA zone at most")
    if sockets and zones % sockets:
        raise ShapeError(
            f"{where}: {sockets} sockets cannot hold {zones} NUMA zones evenly (every socket holds as many zones, as "
            "the kubelet's CPU topology assumes); give a divisor of numaZones"
        )
    return sockets


def _int(value: Any, where: str, minimum: int = 0, maximum: int | None = None, limit: str = "") -> int:
    """An integer field from `minimum` to `maximum` (not a bool: YAML `true` is an int in Python); above `maximum`
    the error says what the limit is (`limit`)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"{where}: expected an integer, got {value!r}")
    if value < minimum:
        raise ShapeError(f"{where}: expected at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ShapeError(f"{where}: {value} is more than {maximum}, {limit}; lower it")
    return value
