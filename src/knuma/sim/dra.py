"""Scenario `dra`: GPU + NIC + CPU pods on DGX-like nodes, placed by knuma, by an upstream-like scheduler and by the
CP-SAT optimum, with the kubelet's admission as the judge.

The cluster is `nodes` DGX-like nodes (`knuma.testbed.shapes` `dgx`: 2 NUMA nodes, each with 55 allocatable CPUs,
4 GPUs and 4 NICs, GPU *i* and NIC *i* on one PCIe root) under the `single-numa-node` Topology Manager policy (or
another one). Pods arrive one by one (seeded mix of templates) and never leave, so the question is purely how many
fit and how many the kubelet rejects:

- **knuma**: the scheduler daemon's plugins (NodeResourcesFit, NodeResourcesBalancedAllocation,
  NodeResourceTopologyMatch, DynamicResources on `knuma.devices`) decide the node and the devices with the node's
  true NUMA state (no exporter lag: this scenario isolates the device choice);
- **upstream**: kube-scheduler without NUMA awareness (NodeResourcesFit LeastAllocated, BalancedAllocation) and DRA's
  allocator as upstream runs it: the first solution of a depth-first search over the devices in slice order, no topology
  (`dynamic-resource-allocation/structured/allocator.go`);
- **optimal**: CP-SAT, every pod's devices, CPUs and memory on one NUMA node, as many pods as possible (it knows
  all pods in advance: an upper bound, not a scheduler).

Every bound pod goes through `knuma.testbed.simkubelet` with its devices (`knuma.topology.kubelet.dra_device_hints`):
`TopologyAffinityError` when the devices and the CPUs cannot share the NUMA node(s) the policy demands. A pod is
*misaligned* when its devices span NUMA nodes or sit on another NUMA node than its CPUs (counted among bound pods).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import Code, CycleState, NodeInfo, Profile, Status, schedule_one
from knuma.scheduler.framework.profiles import default_profile, node_level_profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_zones import claimed_devices
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.testbed.dra import SimDevice, device_classes, devices_of, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES, NodeShape
from knuma.testbed.simkubelet import SimKubelet

__all__ = ["DRA_TEMPLATES", "DraRun", "DraScenario", "DraTemplate", "claim_pod", "pods_of", "run_knuma", "run_upstream"]

GPU, NIC = "gpu.sim.knuma.io", "nic.sim.knuma.io"
ROOT = "resource.kubernetes.io/pcieRoot"


@dataclass(frozen=True)
class DraTemplate:
    name: str
    gpus: int
    nics: int
    same_root: bool
    """GPU and NIC with `matchAttribute: resource.kubernetes.io/pcieRoot`."""
    cpus: int
    memory_gi: int
    weight: int


DRA_TEMPLATES = (
    DraTemplate("gpu1-nic1-root", 1, 1, True, 8, 64, 4),
    DraTemplate("gpu2-nic1", 2, 1, False, 20, 128, 3),
    DraTemplate("gpu4-nic2", 4, 2, False, 24, 256, 1),
    DraTemplate("cpu16", 0, 0, False, 16, 32, 2),
)


@dataclass(frozen=True)
class DraScenario:
    nodes: int = 8
    pods: int = 40
    policy: Policy = Policy.SINGLE_NUMA_NODE
    templates: tuple[DraTemplate, ...] = DRA_TEMPLATES
    shape: str = "dgx"


@dataclass
class DraRun:
    scheduler: str
    placed: int = 0
    topology_affinity_errors: int = 0
    misaligned: int = 0
    pending: int = 0
    other_admission_errors: int = 0
    placements: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Pod -> (node, devices) for admitted pods."""
    optimal_proven: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "placed": self.placed,
            "topology_affinity_errors": self.topology_affinity_errors,
            "misaligned": self.misaligned,
            "pending": self.pending,
            "other_admission_errors": self.other_admission_errors,
            **({"proven_optimal": self.optimal_proven} if self.optimal_proven is not None else {}),
        }


def claim_pod(
    name: str,
    index: int,
    *,
    cpus: int,
    memory_gi: int,
    gpus: int,
    nics: int,
    same_root: bool,
    scheduler_name: str | None = None,
) -> tuple[Pod, dict[str, Any]]:
    """A Guaranteed pod of `cpus` and `memory_gi` GiB and, when it asks for devices, its ResourceClaim (`{}` when it
    does not): `gpus` GPUs and `nics` NICs (`resource.k8s.io/v1` exact requests), on one PCIe root when
    `same_root`. The simulator's arrivals and the DRA benchmark's pods are both made here."""
    container: dict[str, Any] = {
        "name": "main",
        "image": "x",
        "resources": {"limits": {"cpu": str(cpus), "memory": f"{memory_gi}Gi"}},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    claim: dict[str, Any] = {}
    if gpus or nics:
        container["resources"]["claims"] = [{"name": "devices"}]
        spec["resourceClaims"] = [{"name": "devices", "resourceClaimName": f"{name}-devices"}]
        requests = [
            {"name": "gpu", "exactly": {"deviceClassName": GPU, "count": gpus}},
            {"name": "nic", "exactly": {"deviceClassName": NIC, "count": nics}},
        ]
        devices: dict[str, Any] = {"requests": requests}
        if same_root:
            devices["constraints"] = [{"requests": ["gpu", "nic"], "matchAttribute": ROOT}]
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"{name}-devices", "namespace": "default", "uid": f"claim-{index}"},
            "spec": {"devices": devices},
        }
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": f"uid-{index}"}, "spec": spec}
    return Pod.from_manifest(manifest), claim


def pods_of(scenario: DraScenario, seed: int) -> list[tuple[Pod, DraTemplate, dict[str, Any]]]:
    """The arriving pods (with their template and their ResourceClaim), in arrival order."""
    rng = random.Random(seed)
    weights = [t.weight for t in scenario.templates]
    out = []
    for i in range(scenario.pods):
        template = rng.choices(scenario.templates, weights)[0]
        pod, claim = claim_pod(
            f"{template.name}-{i:03d}",
            i,
            cpus=template.cpus,
            memory_gi=template.memory_gi,
            gpus=template.gpus,
            nics=template.nics,
            same_root=template.same_root,
        )
        out.append((pod, template, claim))
    return out


class _Cluster:
    """Ground truth: one simulated kubelet per node, and which devices are taken."""

    def __init__(self, scenario: DraScenario) -> None:
        self.shape: NodeShape = BUILTIN_SHAPES[scenario.shape]
        self.names = [f"dgx-{i:03d}" for i in range(scenario.nodes)]
        self.kubelets = {
            n: SimKubelet(n, self.shape.allocatable(), self.shape.topology(n, scenario.policy, Scope.CONTAINER))
            for n in self.names
        }
        self.devices: dict[str, SimDevice] = {d.key: d for d in devices_of(self.shape)}
        self.taken: dict[str, set[str]] = {n: set() for n in self.names}

    def infos(self) -> list[NodeInfo]:
        return [
            NodeInfo(n, k.allocatable, dict(k.requested), len(k.running), topology=k.topology)
            for n, k in self.kubelets.items()
        ]

    def admit(self, run: DraRun, pod: Pod, node: str, devices: Sequence[str]) -> bool:
        """The kubelet decides; devices of a rejected pod are freed (its claim is deallocated once it failed)."""
        numa = {self.devices[d].numa for d in devices}
        kubelet = self.kubelets[node]
        result = kubelet.admit(pod, {"main": {f"{d}": self.devices[d].numa for d in devices}} if devices else None)
        misaligned = len(numa) > 1
        if result.admitted:
            held = {n for p in kubelet.running[pod.key].placements for n in p.numa_ids}
            misaligned = misaligned or bool(numa and held and held != numa)
            self.taken[node].update(devices)
            run.placed += 1
            run.placements[pod.name] = (node, tuple(devices))
        elif result.reason == "TopologyAffinityError":
            run.topology_affinity_errors += 1
        else:
            run.other_admission_errors += 1
        run.misaligned += int(misaligned)
        return result.admitted


def run_knuma(scenario: DraScenario, seed: int, device_zones: bool = True) -> DraRun:
    """knuma's plugins, with the daemon's view of the DRA devices per NUMA zone (`device_zones` False: without it,
    as before `knuma.scheduler.plugins.dra_zones`, for comparison) and its Reserve-time device shapes."""
    cluster = _Cluster(scenario)
    state = DeviceState()
    for name in cluster.names:
        for body in resource_slices(name, cluster.shape):
            state.set_slice(body)
    for body in device_classes([cluster.shape]):
        state.set_class(body)
    base = default_profile()
    numa = next(p for p in base.filters if isinstance(p, NodeResourceTopologyMatch))
    dra = DynamicResources(state, numa.demand if device_zones else None)
    profile = Profile("knuma", (*base.filters, dra), (*base.scorers, (dra, 1)))
    run = DraRun("knuma")
    for pod, _, claim in pods_of(scenario, seed):
        if claim:
            state.set_claim(claim)
        infos = cluster.infos()
        if device_zones:
            infos = [state.with_zone_devices(info) for info in infos]  # as the daemon's cache does
        result = schedule_one(profile, pod, infos, explain=False)
        if result.selected is None:
            run.pending += 1
            continue
        devices: list[str] = []
        if claim:
            outcome, _ = dra.allocations(pod, next(i for i in infos if i.name == result.selected))
            allocation = outcome.results[0].allocation
            devices = [f"{r.driver}/{r.device}" for r in allocation.results]
            if device_zones:
                numa.demand.observe(pod, claimed_devices([allocation]))  # the daemon's Reserve
        if cluster.admit(run, pod, result.selected, devices) and claim:
            state.set_claim({**claim, "status": {"allocation": allocation.to_dict()}})
    return run


class _FirstFitDevices:
    """DynamicResources as upstream allocates: the first solution of a depth-first search in slice order."""

    name = "DynamicResources"

    def __init__(self, cluster: _Cluster, templates: Mapping[str, DraTemplate]) -> None:
        self.cluster, self.templates = cluster, templates

    def choose(self, pod: Pod, node: str) -> list[str] | None:
        template = self.templates[pod.name]
        free = [d for key, d in self.cluster.devices.items() if key not in self.cluster.taken[node]]
        gpus = [d for d in free if d.driver == GPU]
        nics = [d for d in free if d.driver == NIC]
        for chosen_gpus in itertools.combinations(gpus, template.gpus):
            for chosen_nics in itertools.combinations(nics, template.nics):
                chosen = (*chosen_gpus, *chosen_nics)
                if template.same_root and len({d.pcie_root for d in chosen}) > 1:
                    continue
                return [d.key for d in chosen]
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if self.choose(pod, node.name) is None:
            return Status(Code.UNSCHEDULABLE, "cannot allocate all claims", self.name)
        return Status()


def run_upstream(scenario: DraScenario, seed: int) -> DraRun:
    cluster = _Cluster(scenario)
    arrivals = pods_of(scenario, seed)
    devices = _FirstFitDevices(cluster, {p.name: t for p, t, _ in arrivals})
    profile = node_level_profile("upstream", (devices,))  # kube-scheduler's resource scores
    run = DraRun("upstream")
    for pod, template, _ in arrivals:
        result = schedule_one(profile, pod, cluster.infos(), explain=False)
        if result.selected is None:
            run.pending += 1
            continue
        chosen = devices.choose(pod, result.selected) if template.gpus or template.nics else []
        cluster.admit(run, pod, result.selected, chosen or [])
    return run
