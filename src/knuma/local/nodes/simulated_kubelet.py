"""The simulated kubelet of one node: admission with the kubelet model, and concrete CPU, memory and device ids.

Admission is `knuma.testbed.simkubelet.SimKubelet` (the node-level resource check, then `knuma.topology.admit` under the
node's Topology Manager policy and scope), the same ground truth `knuma simulate` uses. On top of the per-zone
amounts the model allocates, this kubelet hands out what a real one reports through PodResources:

- exclusive CPU ids from the zones the model chose, whole cores first, lowest ids first (the static CPU manager's
  `takeByTopology` preference);
- one memory block per container and memory type, with the NUMA zones it spans (as the memory manager reports it);
- device ids from the zones the model chose;
- the DRA claims each container uses, with their devices on this node (PodResources `dynamic_resources`, reported by
  kubelets 1.34+).

Init containers have finished once a pod runs, so only app and sidecar containers hold resources (PodResources
`List` of the kubelet reports those). `checkpoint()` / `restore()` play the role of the CPU and memory manager
state files: a restarted node gives its running pods exactly the resources they had.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.pod import ContainerKind, Pod
from knuma.api.resources import CPU, MEMORY, is_hugepages
from knuma.exporter.sysfs import format_cpulist
from knuma.local.nodes.spec import NodeSpec
from knuma.podresources.model import ClaimResource, Container, Devices, DynamicResource, Memory
from knuma.podresources.model import Pod as PodResources
from knuma.testbed.simkubelet import AdmissionResult, ConservationError, SimKubelet
from knuma.topology.kubelet import ContainerPlacement, DeviceNUMA

__all__ = [
    "CHECKPOINT_VERSION",
    "CPUS_ANNOTATION",
    "DEVICES_ANNOTATION",
    "NUMA_ANNOTATION",
    "HeldPod",
    "SimulatedKubelet",
]

CHECKPOINT_VERSION = 1
MILLI = 1000
NUMA_ANNOTATION = "sim.knuma.io/numa"
"""Written on admitted pods: container -> the NUMA zones its exclusive resources are on (JSON). Simulator only: a
real kubelet keeps this in its state files and PodResources, not on the pod."""
CPUS_ANNOTATION = "sim.knuma.io/cpus"
"""Written on admitted pods: container -> its exclusive CPU ids, in cpulist format (JSON)."""
DEVICES_ANNOTATION = "sim.knuma.io/devices"
"""Written on admitted pods with DRA devices: container -> {`driver/device`: NUMA node} (JSON)."""


@dataclass(frozen=True)
class HeldPod:
    """A pod the kubelet runs: its uid, placements (per-zone amounts) and concrete resources."""

    uid: str
    pod_ip: str
    placements: tuple[ContainerPlacement, ...]
    resources: PodResources
    dra_devices: DeviceNUMA = field(default_factory=dict)
    """DRA devices the pod's containers use (allocated by the scheduler, aligned at admission)."""

    def numa_ids(self) -> dict[str, tuple[int, ...]]:
        """Container name -> NUMA zones its exclusive resources are on (empty when it holds none)."""
        return {p.name: p.numa_ids for p in self.placements if p.kind is not ContainerKind.INIT}

    def annotations(self) -> dict[str, str]:
        """`sim.knuma.io/numa` and `sim.knuma.io/cpus` for containers holding exclusive resources."""
        numa = {name: list(ids) for name, ids in self.numa_ids().items() if ids}
        cpus = {c.name: format_cpulist(set(c.cpu_ids)) for c in self.resources.containers if c.cpu_ids}
        out = {
            NUMA_ANNOTATION: json.dumps(numa, separators=(",", ":")),
            CPUS_ANNOTATION: json.dumps(cpus, separators=(",", ":")),
        }
        if self.dra_devices:
            devices = {
                container: {_without_pool(key): numa for key, numa in sorted(per.items())}
                for container, per in self.dra_devices.items()
            }
            out[DEVICES_ANNOTATION] = json.dumps(devices, separators=(",", ":"))
        return out


def _without_pool(key: str) -> str:
    driver, _, rest = key.partition("/")
    return f"{driver}/{rest.partition('/')[2]}"


class SimulatedKubelet:
    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        shape = spec.shape
        self.model = SimKubelet(spec.name, shape.allocatable(), shape.topology(spec.name, spec.policy, spec.scope))
        machine = spec.machine
        self._free_cpus = {
            zone: {c for c in cpus if c not in machine.reserved_cpus} for zone, cpus in enumerate(machine.cpus_by_zone)
        }
        self._free_devices = {
            name: {zone: list(ids) for zone, ids in enumerate(per_zone)} for name, per_zone in machine.devices.items()
        }
        self._free_ips = list(range(2, 255))
        self.held: dict[str, HeldPod] = {}
        """`namespace/name` -> the pod holding resources on this node."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def generation(self) -> int:
        """Bumped whenever what the node reports (allocations) changes."""
        return self.model.generation

    def admit(
        self,
        pod: Pod,
        dra_devices: DeviceNUMA | None = None,
        dynamic_resources: Mapping[str, tuple[DynamicResource, ...]] | None = None,
    ) -> AdmissionResult:
        """Admit `pod` (the kubelet's `canAdmitPod`), allocating its resources; a rejected pod holds nothing.
        `dra_devices`: the NUMA nodes of the DRA devices allocated to each container, aligned by the Topology
        Manager with the CPUs and memory (`knuma.topology.kubelet.dra_device_hints`). `dynamic_resources`: the
        claims each container uses, as PodResources reports them (`knuma.local.nodes.claims.container_claims`)."""
        if pod.key in self.held:
            self.release(pod.key)  # a new pod under the name of an old one: the old one is gone
        result = self.model.admit(pod, dra_devices)
        if result.admitted:
            placements = self.model.running[pod.key].placements
            resources = self._assign(pod, placements, dynamic_resources or {})
            self.held[pod.key] = HeldPod(pod.uid, self._take_ip(pod), placements, resources, dict(dra_devices or {}))
        return result

    def release(self, key: str) -> bool:
        """The pod terminated or was deleted: give back everything it held; False if it held nothing."""
        held = self.held.pop(key, None)
        if held is None:
            return False
        self.model.release(key)
        for container in held.resources.containers:
            for cpu in container.cpu_ids:
                self._free_cpus[self.spec.machine.zone_of_cpu[cpu]].add(cpu)
            for devices in container.devices:
                for device in devices.device_ids:
                    zone = self.spec.machine.zone_of_device[(devices.resource_name, device)]
                    self._free_devices[devices.resource_name][zone].append(device)
        for per_zone in self._free_devices.values():
            for ids in per_zone.values():
                ids.sort()
        self._give_ip(held.pod_ip)
        return True

    def podresources(self) -> list[PodResources]:
        """PodResources `List`: every running pod with its exclusive resources."""
        return [held.resources for held in self.held.values()]

    # -- concrete ids ----------------------------------------------------------------------------------------------

    def _assign(
        self,
        pod: Pod,
        placements: Iterable[ContainerPlacement],
        dynamic_resources: Mapping[str, tuple[DynamicResource, ...]],
    ) -> PodResources:
        containers = []
        for placement in placements:
            if placement.kind is ContainerKind.INIT:
                continue
            cpus: list[int] = []
            memory: list[Memory] = []
            devices: list[Devices] = []
            for name, per_numa in sorted(placement.allocated.items()):
                zones = {zone: amount for zone, amount in sorted(per_numa.items()) if amount}
                if not zones:
                    continue
                if name == CPU:
                    for zone, milli in zones.items():
                        cpus += self._take_cpus(zone, milli // MILLI)
                elif name == MEMORY or is_hugepages(name):
                    memory.append(Memory(name, sum(zones.values()), tuple(zones)))
                else:
                    for zone, count in zones.items():
                        devices.append(Devices(name, self._take_devices(name, zone, count), (zone,)))
            dynamic = dynamic_resources.get(placement.name, ())
            containers.append(Container(placement.name, tuple(sorted(cpus)), tuple(devices), tuple(memory), dynamic))
        return PodResources(pod.namespace, pod.name, tuple(containers))

    def _take_cpus(self, zone: int, count: int) -> list[int]:
        free = self._free_cpus[zone]
        machine = self.spec.machine
        chosen: list[int] = []
        whole_cores = sorted({min(machine.siblings(c)) for c in free if machine.siblings(c) <= free})
        for core in whole_cores:
            threads = sorted(machine.siblings(core))
            if len(chosen) + len(threads) <= count:
                chosen += threads
            if len(chosen) == count:
                break
        if len(chosen) < count:
            chosen += sorted(free - set(chosen))[: count - len(chosen)]
        if len(chosen) < count:
            raise ConservationError(f"{self.name} NUMA {zone}: {count} CPUs allocated, {len(free)} free")
        free.difference_update(chosen)
        return chosen

    def _take_devices(self, name: str, zone: int, count: int) -> tuple[str, ...]:
        free = self._free_devices.get(name, {}).get(zone, [])
        if len(free) < count:
            raise ConservationError(f"{self.name} NUMA {zone}: {count} {name} allocated, {len(free)} free")
        taken, free[:] = free[:count], free[count:]
        return tuple(taken)

    def _take_ip(self, pod: Pod) -> str:
        if pod.spec.get("hostNetwork"):
            return self.spec.internal_ip
        if not self._free_ips:
            return ""
        return f"{self.spec.pod_subnet}.{self._free_ips.pop(0)}"

    def _give_ip(self, ip: str) -> None:
        prefix = self.spec.pod_subnet + "."
        if ip.startswith(prefix):
            self._free_ips.append(int(ip[len(prefix) :]))
            self._free_ips.sort()

    # -- checkpoint ------------------------------------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        """Everything needed to give running pods back their resources after a restart (JSON-serialisable)."""
        return {
            "version": CHECKPOINT_VERSION,
            "node": self.name,
            "pods": {key: _held_to_dict(held) for key, held in sorted(self.held.items())},
        }

    def restore(self, pod: Pod, checkpoint: Mapping[str, Any]) -> bool:
        """Give `pod` back what `checkpoint` says it held; False (nothing taken) when the checkpoint does not know
        this pod (another uid) or its resources are no longer free."""
        entry = (checkpoint.get("pods") or {}).get(pod.key)
        if checkpoint.get("version") != CHECKPOINT_VERSION or not isinstance(entry, Mapping):
            return False
        if entry.get("uid") != pod.uid or pod.key in self.held:
            return False
        try:
            held = _held_from_dict(entry, pod)
        except (KeyError, TypeError, ValueError):
            return False
        cpus = [c for container in held.resources.containers for c in container.cpu_ids]
        machine = self.spec.machine
        if any(c not in self._free_cpus.get(machine.zone_of_cpu.get(c, -1), set()) for c in cpus):
            return False
        devices = [
            (d.resource_name, device) for c in held.resources.containers for d in c.devices for device in d.device_ids
        ]
        for name, device in devices:
            zone = machine.zone_of_device.get((name, device))
            if zone is None or device not in self._free_devices[name][zone]:
                return False
        self.model.restore(pod, held.placements)
        for cpu in cpus:
            self._free_cpus[machine.zone_of_cpu[cpu]].discard(cpu)
        for name, device in devices:
            self._free_devices[name][machine.zone_of_device[(name, device)]].remove(device)
        prefix = self.spec.pod_subnet + "."
        if held.pod_ip.startswith(prefix) and int(held.pod_ip[len(prefix) :]) in self._free_ips:
            self._free_ips.remove(int(held.pod_ip[len(prefix) :]))
        self.held[pod.key] = held
        return True


def _held_to_dict(held: HeldPod) -> dict[str, Any]:
    return {
        "uid": held.uid,
        "podIP": held.pod_ip,
        "placements": [
            {
                "name": p.name,
                "kind": p.kind.value,
                "affinity": list(p.affinity) if p.affinity is not None else None,
                "allocated": {name: {str(z): a for z, a in per.items()} for name, per in p.allocated.items()},
            }
            for p in held.placements
        ],
        "containers": [
            {
                "name": c.name,
                "cpuIds": list(c.cpu_ids),
                "devices": [
                    {"resourceName": d.resource_name, "deviceIds": list(d.device_ids), "numaIds": list(d.numa_ids)}
                    for d in c.devices
                ],
                "memory": [
                    {"memoryType": m.memory_type, "size": m.size, "numaIds": list(m.numa_ids)} for m in c.memory
                ],
                "dynamicResources": [_dynamic_to_dict(d) for d in c.dynamic_resources],
            }
            for c in held.resources.containers
        ],
    }


def _held_from_dict(raw: Mapping[str, Any], pod: Pod) -> HeldPod:
    placements = tuple(
        ContainerPlacement(
            name=str(p["name"]),
            kind=ContainerKind(p["kind"]),
            affinity=tuple(int(n) for n in p["affinity"]) if p.get("affinity") is not None else None,
            allocated={name: {int(z): int(a) for z, a in per.items()} for name, per in p["allocated"].items()},
        )
        for p in raw["placements"]
    )
    containers = tuple(
        Container(
            name=str(c["name"]),
            cpu_ids=tuple(int(x) for x in c["cpuIds"]),
            devices=tuple(
                Devices(str(d["resourceName"]), tuple(str(x) for x in d["deviceIds"]), tuple(d["numaIds"]))
                for d in c["devices"]
            ),
            memory=tuple(Memory(str(m["memoryType"]), int(m["size"]), tuple(m["numaIds"])) for m in c["memory"]),
            dynamic_resources=tuple(_dynamic_from_dict(d) for d in c.get("dynamicResources") or ()),
        )
        for c in raw["containers"]
    )
    return HeldPod(pod.uid, str(raw.get("podIP") or ""), placements, PodResources(pod.namespace, pod.name, containers))


def _dynamic_to_dict(dynamic: DynamicResource) -> dict[str, Any]:
    return {
        "claimName": dynamic.claim_name,
        "claimNamespace": dynamic.claim_namespace,
        "claimResources": [
            {"driverName": r.driver_name, "poolName": r.pool_name, "deviceName": r.device_name}
            for r in dynamic.claim_resources
        ],
    }


def _dynamic_from_dict(raw: Mapping[str, Any]) -> DynamicResource:
    """A checkpoint entry (written since dynamic resources are reported; older checkpoints have none)."""
    resources = tuple(
        ClaimResource(str(r["driverName"]), str(r["poolName"]), str(r["deviceName"])) for r in raw["claimResources"]
    )
    return DynamicResource(str(raw["claimName"]), str(raw["claimNamespace"]), resources)
