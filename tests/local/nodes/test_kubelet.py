"""The simulated kubelet: admission by the kubelet model, concrete CPU/memory/device ids, release, checkpoints."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from knuma.api.pod import Pod
from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.local.nodes.simulated_kubelet import SimulatedKubelet
from knuma.local.nodes.spec import NodeSpec
from knuma.podresources.model import ClaimResource, DynamicResource
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.topology.cpumanager import CPUManagerOptions
from knuma.topology.kubelet import SMT_ALIGNMENT_ERROR, TOPOLOGY_AFFINITY_ERROR
from knuma.topology.node import NodeTopology

from .builders import guaranteed

GI = 2**30


def kubelet(shape: str = "small") -> SimulatedKubelet:
    return SimulatedKubelet(NodeSpec("n0", 0, BUILTIN_SHAPES[shape], "pool"))


def nrt_topology(k: SimulatedKubelet) -> NodeTopology:
    machine = k.spec.machine
    state = KubeletState(machine.allocatable(), k.podresources())
    return NodeTopology.from_nrt(build(machine.topology(), state, BuildOptions(node_name=k.name)).nrt)


def test_admitted_pod_gets_whole_cores_on_one_zone() -> None:
    k = kubelet()  # 2 zones x 8 CPUs: zone 0 = 0,2,...,14, siblings c and c+8
    assert k.admit(guaranteed("a", 4, "2Gi")).admitted
    held = k.held["default/a"]
    (container,) = held.resources.containers
    assert container.cpu_ids == (0, 2, 8, 10)  # two whole cores of zone 0
    assert [(m.memory_type, m.size, m.numa_ids) for m in container.memory] == [("memory", 2 * GI, (0,))]
    assert held.numa_ids() == {"app": (0,)}
    assert held.pod_ip == "127.128.0.2"


def test_full_pcpus_only_shape_rejects_odd_cpus_with_smt_alignment_error() -> None:
    shape = replace(BUILTIN_SHAPES["small"], cpu_manager=CPUManagerOptions(full_pcpus_only=True))
    k = SimulatedKubelet(NodeSpec("n0", 0, shape, "pool"))
    result = k.admit(guaranteed("odd", 3))
    assert (result.admitted, result.reason) == (False, SMT_ALIGNMENT_ERROR)
    assert result.message == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    assert k.admit(guaranteed("even", 4)).admitted
    assert len(k.held["default/even"].resources.containers[0].cpu_ids) == 4


def test_rejected_pod_holds_nothing() -> None:
    k = kubelet()
    result = k.admit(guaranteed("wide", 10))
    assert (result.admitted, result.reason) == (False, TOPOLOGY_AFFINITY_ERROR)
    assert k.held == {} and k.podresources() == []


def test_release_gives_ids_back_and_nrt_follows() -> None:
    k = kubelet("gpu")
    pod = guaranteed("g", 6, "8Gi", extra={"nvidia.com/gpu": "2"})
    assert k.admit(pod).admitted
    (container,) = k.held["default/g"].resources.containers
    assert [(d.resource_name, d.device_ids, d.numa_ids) for d in container.devices] == [
        ("nvidia.com/gpu", ("gpu-0-0", "gpu-0-1"), (0,))
    ]
    zone0 = nrt_topology(k).zones[0].available
    assert zone0["nvidia.com/gpu"] == 2 and zone0["cpu"] == 47000 - 6000
    assert k.release("default/g") and not k.release("default/g")
    assert nrt_topology(k).zones[0].available["cpu"] == 47000
    assert k.admit(replace(pod, name="h")).admitted
    assert k.held["default/h"].resources.containers[0].devices[0].device_ids == ("gpu-0-0", "gpu-0-1")


def test_exporter_view_equals_the_kubelet_model_through_random_churn() -> None:
    """The NRT the exporter builds from PodResources equals the model's ground truth after every admit/release."""
    rng = random.Random(7)
    k = kubelet("four-numa")
    live: list[str] = []
    for step in range(300):
        if live and rng.random() < 0.4:
            key = live.pop(rng.randrange(len(live)))
            assert k.release(key)
        else:
            pod = guaranteed(f"p{step}", rng.choice([1, 2, 3, 5, 8]), f"{rng.choice([1, 2, 4])}Gi")
            if k.admit(pod).admitted:
                live.append(pod.key)
        k.model.check()
        for got, want in zip(nrt_topology(k).zones, k.model.topology.zones, strict=True):
            assert dict(got.available) == dict(want.available), f"step {step}, zone {got.id}"


def test_checkpoint_restores_the_same_allocation() -> None:
    k = kubelet("two-socket")
    pods = [guaranteed(f"p{i}", cpu, "3Gi", extra={"hugepages-1Gi": "2Gi"}) for i, cpu in enumerate([3, 8, 2, 5])]
    for pod in pods:
        assert k.admit(pod).admitted
    k.release(pods[1].key)
    saved = json.loads(json.dumps(k.checkpoint()))
    fresh = kubelet("two-socket")
    for pod in pods:
        assert fresh.restore(pod, saved) == (pod.key != pods[1].key)
    assert fresh.held == k.held
    assert fresh.model.topology == k.model.topology and fresh.model.requested == k.model.requested
    # the next admission lands exactly where it would have without the restart
    nxt = guaranteed("next", 4)
    assert fresh.admit(nxt).admitted and k.admit(nxt).admitted
    assert fresh.held[nxt.key] == k.held[nxt.key]


def test_restore_refuses_another_pod_with_the_same_name() -> None:
    k = kubelet()
    first = guaranteed("a", 2)
    assert k.admit(first).admitted
    saved = k.checkpoint()
    other: Pod = replace(first, uid="another-uid")
    assert not kubelet().restore(other, saved)


def test_a_dra_backed_extended_resource_is_no_device_plugin_resource() -> None:
    """A pod asks for `example.com/nic`, which the node does not list (its NICs are DRA devices): the kubelet's fit
    check skips it (`removeMissingExtendedResources`) and the device manager allocates nothing for it; the NICs
    come from the pod's extended-resource claim, aligned with the CPUs, reported as dynamic resources and kept by a
    checkpoint."""
    k = kubelet("dgx")
    assert "example.com/nic" not in k.model.allocatable
    pod = guaranteed("nics", 4, extra={"example.com/nic": "2"})
    devices = {"app": {"nic.sim.knuma.io/n0/nic-4": 1, "nic.sim.knuma.io/n0/nic-5": 1}}
    nics = (ClaimResource("nic.sim.knuma.io", "n0", "nic-4"), ClaimResource("nic.sim.knuma.io", "n0", "nic-5"))
    dynamic = {"app": (DynamicResource("nics-extended-resources-x7k2p", "default", nics),)}
    result = k.admit(pod, devices, dynamic)
    assert result.admitted, result.message
    held = k.held[pod.key]
    (container,) = held.resources.containers
    assert container.devices == () and container.dynamic_resources == dynamic["app"]
    assert held.numa_ids() == {"app": (1,)}  # the CPUs follow the NICs
    assert k.podresources()[0].containers[0].dynamic_resources == dynamic["app"]
    saved = json.loads(json.dumps(k.checkpoint()))
    fresh = kubelet("dgx")
    assert fresh.restore(pod, saved)
    assert fresh.held[pod.key].resources == held.resources
