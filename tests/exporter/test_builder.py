from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.api.fingerprint import Method, compute
from knuma.api.nrt import NodeResourceTopology, Policy, Scope
from knuma.api.pod import Pod as PodModel
from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.scan import scan
from knuma.exporter.sysfs import MachineTopology, NUMANode, discover
from knuma.exporter.tmconfig import PodPattern, TopologyManagerSettings
from knuma.podresources import Allocatable, Container, Devices, Memory, Pod, PodResourcesClient
from knuma.podresources.server import PodResourcesServer
from knuma.topology.cpumanager import CPUManagerOptions
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology

from .sysfs_trees import NodeSpec, write_tree

GiB = 1024**3
MiB = 1024**2


def resources(nrt: NodeResourceTopology) -> dict[str, dict[str, tuple[int, int, int]]]:
    """zone -> resource -> (capacity, allocatable, available)"""
    return {z.name: {r.name: (r.capacity, r.allocatable, r.available) for r in z.resources} for z in nrt.zones}


def xeon_allocatable() -> Allocatable:
    """kubelet static CPU manager with reservedSystemCPUs 0,1; 4 NIC VFs per NUMA node."""
    return Allocatable(
        cpu_ids=tuple(range(2, 24)),
        devices=(
            Devices("example.com/nic", ("vf0", "vf1", "vf2", "vf3"), (0,)),
            Devices("example.com/nic", ("vf4", "vf5", "vf6", "vf7"), (1,)),
        ),
    )


def test_reference_example_on_the_xeon_fixture(xeon_sysfs: Path) -> None:
    """The example object of the reference (rte.md section a), fingerprint included."""
    pods = [Pod("default", "app-1", (Container("app", (2, 4, 6, 8), (Devices("example.com/nic", ("vf0",), (0,)),)),))]
    tm = TopologyManagerSettings(Policy.SINGLE_NUMA_NODE, Scope.CONTAINER)
    result = build(discover(xeon_sysfs), KubeletState(xeon_allocatable(), pods), BuildOptions("worker-0", tm))
    out = result.nrt.to_dict()
    assert out["metadata"]["annotations"] == {"topology.node.k8s.io/fingerprint": "pfp0v001894b86b7c51e552d"}
    assert out["attributes"] == [
        {"name": "nodeTopologyPodsFingerprint", "value": "pfp0v001894b86b7c51e552d"},
        {"name": "nodeTopologyPodsFingerprintMethod", "value": "with-exclusive-resources"},
        {"name": "topologyManagerPolicy", "value": "single-numa-node"},
        {"name": "topologyManagerScope", "value": "container"},
    ]
    assert out["zones"] == [
        {
            "name": "node-0",
            "type": "Node",
            "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
            "resources": [
                {"name": "cpu", "capacity": "12", "allocatable": "11", "available": "7"},
                {"name": "example.com/nic", "capacity": "4", "allocatable": "4", "available": "3"},
            ],
        },
        {
            "name": "node-1",
            "type": "Node",
            "costs": [{"name": "node-0", "value": 20}, {"name": "node-1", "value": 10}],
            "resources": [
                {"name": "cpu", "capacity": "12", "allocatable": "11", "available": "11"},
                {"name": "example.com/nic", "capacity": "4", "allocatable": "4", "available": "4"},
            ],
        },
    ]
    assert result.warnings == ()
    assert result.pods == 1
    # what the scheduler reads back
    topo = NodeTopology.from_nrt(NodeResourceTopology.from_dict(out))
    assert topo.zone_by_id[0].available == {"cpu": 7000, "example.com/nic": 3}
    assert topo.config.policy is Policy.SINGLE_NUMA_NODE


@pytest.fixture
def machine(tmp_path: Path) -> MachineTopology:
    """4 NUMA nodes x 8 CPUs, 16 GiB each, 2Mi and 1Gi huge pages."""
    nodes = {
        i: NodeSpec(cpus=list(range(i * 8, i * 8 + 8)), mem_kb=16 * 1024 * 1024, hugepages={2048: 512, 1048576: 2})
        for i in range(4)
    }
    return discover(write_tree(tmp_path, nodes))


def memory_manager_allocatable() -> Allocatable:
    blocks = []
    for numa in range(4):
        blocks += [
            Memory("memory", 14 * GiB, (numa,)),
            Memory("hugepages-2Mi", 1 * GiB, (numa,)),
            Memory("hugepages-1Gi", 2 * GiB, (numa,)),
        ]
    return Allocatable(
        cpu_ids=tuple(c for c in range(32) if c not in (0, 1)),
        memory=tuple(blocks),
        devices=(
            Devices("vendor.com/gpu", ("gpu0",), (1,)),
            Devices("vendor.com/gpu", ("gpu1",), (3,)),
            Devices("vendor.com/fpga", ("f0",), ()),  # no locality: node level only
        ),
    )


KUBELET_PODS = [
    # Guaranteed, integral CPU: exclusive CPUs, memory pinned by the memory manager
    Pod(
        "prod",
        "db-0",
        (
            Container(
                "db",
                cpu_ids=(8, 9, 10, 11),
                memory=(Memory("memory", 4 * GiB, (1,)), Memory("hugepages-1Gi", 1 * GiB, (1,))),
                devices=(Devices("vendor.com/gpu", ("gpu0",), (1,)),),
            ),
        ),
    ),
    # Guaranteed, fractional CPU (1500m): shared pool, no cpu_ids; memory still pinned
    Pod("prod", "api-0", (Container("api", memory=(Memory("memory", 1 * GiB, (2,)),)),)),
    # Burstable: nothing exclusive at all
    Pod("dev", "web-0", (Container("web"),)),
    # memory-manager pod spanning two NUMA nodes (multi-NUMA group {2,3}): 13 GiB on node 2 (free), rest on 3
    Pod("prod", "big-0", (Container("big", memory=(Memory("memory", 16 * GiB, (2, 3)),)),)),
    # hugepages 2Mi only, with a device
    Pod(
        "prod",
        "dpdk-0",
        (
            Container(
                "dpdk",
                cpu_ids=(24, 25),
                memory=(Memory("hugepages-2Mi", 512 * MiB, (3,)),),
                devices=(Devices("vendor.com/gpu", ("gpu1",), (3,)),),
            ),
        ),
    ),
]


def test_end_to_end_over_grpc(machine: MachineTopology) -> None:
    with (
        PodResourcesServer(allocatable=memory_manager_allocatable(), pods=KUBELET_PODS) as kubelet,
        PodResourcesClient(kubelet.address) as client,
    ):
        state = scan(client)
    result = build(machine, state, BuildOptions("worker-1"))
    got = resources(result.nrt)
    assert got["node-0"] == {
        "cpu": (8000, 6000, 6000),
        "hugepages-1Gi": (2 * GiB, 2 * GiB, 2 * GiB),
        "hugepages-2Mi": (1 * GiB, 1 * GiB, 1 * GiB),
        "memory": (16 * GiB, 14 * GiB, 14 * GiB),
    }
    assert got["node-1"] == {
        "cpu": (8000, 8000, 4000),
        "hugepages-1Gi": (2 * GiB, 2 * GiB, 1 * GiB),
        "hugepages-2Mi": (1 * GiB, 1 * GiB, 1 * GiB),
        "memory": (16 * GiB, 14 * GiB, 10 * GiB),
        "vendor.com/gpu": (1, 1, 0),
    }
    assert got["node-2"]["memory"] == (16 * GiB, 14 * GiB, 0)  # 1 GiB api-0, then 13 GiB of big-0
    assert got["node-2"]["cpu"] == (8000, 8000, 8000)
    assert got["node-3"]["memory"] == (16 * GiB, 14 * GiB, 11 * GiB)  # the remaining 3 GiB of big-0
    assert got["node-3"]["hugepages-2Mi"] == (1 * GiB, 1 * GiB, 512 * MiB)
    assert got["node-3"]["cpu"] == (8000, 8000, 6000)
    assert got["node-3"]["vendor.com/gpu"] == (1, 1, 0)
    assert all("vendor.com/fpga" not in zone for zone in got.values())
    # fingerprint: web-0 has nothing exclusive and is left out by the default method
    assert result.nrt.attributes["nodeTopologyPodsFingerprint"] == compute(
        [("prod", "db-0"), ("prod", "api-0"), ("prod", "big-0"), ("prod", "dpdk-0")]
    )
    assert result.pods == 4
    every = build(machine, state, BuildOptions("worker-1", fingerprint_method=Method.ALL)).nrt
    assert every.attributes["nodeTopologyPodsFingerprint"] == compute((p.namespace, p.name) for p in KUBELET_PODS)
    assert every.attributes["nodeTopologyPodsFingerprintMethod"] == "all"


def test_cpu_manager_none_publishes_no_cpu(machine: MachineTopology) -> None:
    """With the `none` CPU manager the kubelet reports no cpu_ids: no CPU is NUMA-pinned, so no `cpu` in zones."""
    state = KubeletState(Allocatable(devices=(Devices("vendor.com/gpu", ("g",), (0,)),)), [])
    got = resources(build(machine, state, BuildOptions("n")).nrt)
    assert got["node-0"] == {"vendor.com/gpu": (1, 1, 1)}
    assert got["node-1"] == {}


def test_memory_only_when_the_kubelet_reports_it(machine: MachineTopology) -> None:
    state = KubeletState(Allocatable(cpu_ids=tuple(range(32))), [])
    got = resources(build(machine, state, BuildOptions("n")).nrt)
    assert set(got["node-0"]) == {"cpu"}


def test_unknown_memory_type_is_ignored(machine: MachineTopology) -> None:
    allocatable = Allocatable(memory=(Memory("memory", GiB, (0,)), Memory("pmem", GiB, (0,))))
    pods = [Pod("a", "p", (Container("c", memory=(Memory("pmem", GiB, (0,)),)),))]
    result = build(machine, KubeletState(allocatable, pods), BuildOptions("n"))
    assert resources(result.nrt)["node-0"] == {"memory": (16 * GiB, GiB, GiB)}
    assert result.warnings == ("allocatable memory of unknown type 'pmem'; ignored",)


def test_available_never_below_zero(machine: MachineTopology) -> None:
    allocatable = Allocatable(cpu_ids=(4, 5), memory=(Memory("memory", GiB, (0,)),))
    pods = [Pod("a", "p", (Container("c", cpu_ids=(4, 5), memory=(Memory("memory", 2 * GiB, (0,)),)),))]
    got = resources(build(machine, KubeletState(allocatable, pods), BuildOptions("n")).nrt)
    assert got["node-0"]["cpu"] == (8000, 2000, 0)
    assert got["node-0"]["memory"] == (16 * GiB, GiB, 0)


def test_non_contiguous_ids_and_memory_only_node(tmp_path: Path) -> None:
    nodes = {
        0: NodeSpec(cpus=[0, 1, 2, 3]),
        2: NodeSpec(cpus=[4, 5, 6, 7]),
        5: NodeSpec(cpus=[], mem_kb=32 * 1024 * 1024),  # CXL-style memory-only node
    }
    distances = {0: {0: 10, 2: 21, 5: 40}, 2: {0: 21, 2: 10, 5: 40}, 5: {0: 40, 2: 40, 5: 10}}
    machine = discover(write_tree(tmp_path, nodes, distances=distances))
    allocatable = Allocatable(
        cpu_ids=(1, 2, 3, 4, 5, 6, 7, 99),
        memory=(Memory("memory", 8 * GiB, (0,)), Memory("memory", 8 * GiB, (2,)), Memory("memory", 30 * GiB, (5,))),
    )
    pods = [Pod("ns", "p", (Container("c", cpu_ids=(6, 7), memory=(Memory("memory", 10 * GiB, (5,)),)),))]
    result = build(machine, KubeletState(allocatable, pods), BuildOptions("n"))
    assert [z.name for z in result.nrt.zones] == ["node-0", "node-2", "node-5"]
    got = resources(result.nrt)
    assert got["node-0"]["cpu"] == (4000, 3000, 3000)
    assert got["node-2"]["cpu"] == (4000, 4000, 2000)
    assert got["node-5"] == {"cpu": (0, 0, 0), "memory": (32 * GiB, 30 * GiB, 20 * GiB)}
    assert result.nrt.zones[2].costs == {"node-0": 40, "node-2": 40, "node-5": 10}
    assert result.warnings == ("allocatable CPUs [99] are not online CPUs of any NUMA node in sysfs; ignored",)


def test_eight_nodes_deterministic(tmp_path: Path) -> None:
    nodes = {i: NodeSpec(cpus=list(range(i * 32, i * 32 + 32))) for i in range(8)}
    machine = discover(write_tree(tmp_path, nodes))
    allocatable = Allocatable(cpu_ids=tuple(range(256)))
    pods = [Pod("ns", f"p{i}", (Container("c", cpu_ids=(i * 2, i * 2 + 1)),)) for i in range(64)]
    one = build(machine, KubeletState(allocatable, pods), BuildOptions("n")).nrt.to_dict()
    two = build(machine, KubeletState(allocatable, list(reversed(pods))), BuildOptions("n")).nrt.to_dict()
    assert one == two
    assert [z["name"] for z in one["zones"]] == [f"node-{i}" for i in range(8)]
    assert [r["available"] for z in one["zones"] for r in z["resources"]] == [
        "0",
        "0",
        "0",
        "0",
        "32",
        "32",
        "32",
        "32",
    ]


def test_multi_numa_allocatable_device_counted_once(machine: MachineTopology) -> None:
    allocatable = Allocatable(cpu_ids=(2,), devices=(Devices("x.io/nic", ("a", "b"), (2, 1)),))
    got = resources(build(machine, KubeletState(allocatable, []), BuildOptions("n")).nrt)
    assert got["node-1"]["x.io/nic"] == (2, 2, 2)
    assert "x.io/nic" not in got["node-2"]


def test_reference_container_removes_the_shared_pool(machine: MachineTopology) -> None:
    """An old kubelet lists the shared pool as cpu_ids of non-exclusive containers."""
    shared = tuple(range(16, 32))
    allocatable = Allocatable(cpu_ids=tuple(range(32)))
    pods = [
        Pod("rte", "exporter-x", (Container("shared-pool-container", cpu_ids=shared),)),
        Pod("dev", "burstable", (Container("c", cpu_ids=shared),)),
        Pod("prod", "pinned", (Container("c", cpu_ids=(0, 1)),)),
    ]
    naive = resources(build(machine, KubeletState(allocatable, pods), BuildOptions("n")).nrt)
    assert naive["node-3"]["cpu"] == (8000, 8000, 0)
    options = BuildOptions("n", reference_container=("rte", "exporter-x", "shared-pool-container"))
    result = build(machine, KubeletState(allocatable, pods), options)
    got = resources(result.nrt)
    assert got["node-3"]["cpu"] == (8000, 8000, 8000)
    assert got["node-0"]["cpu"] == (8000, 8000, 6000)
    assert result.nrt.attributes["nodeTopologyPodsFingerprint"] == compute([("prod", "pinned")])


def test_pod_and_resource_exclusion(machine: MachineTopology) -> None:
    allocatable = memory_manager_allocatable()
    options = BuildOptions(
        "n", pod_exclude=(PodPattern("prod", "db-*"),), resource_exclude=frozenset({"hugepages-1Gi"})
    )
    result = build(machine, KubeletState(allocatable, KUBELET_PODS), options)
    got = resources(result.nrt)
    assert got["node-1"]["cpu"] == (8000, 8000, 8000)
    assert "hugepages-1Gi" not in got["node-1"]
    assert result.pods == 3


def test_cpu_manager_options_are_published_with_the_machine_facts_they_need(xeon_sysfs: Path) -> None:
    """`full-pcpus-only` needs the threads per core (CPUs 0 and 12 share a core on the Xeon) and the siblings of
    the reserved CPUs 0 and 1 (12 and 13), which the kubelet keeps out of exclusive allocations."""
    machine = discover(xeon_sysfs)
    tm = TopologyManagerSettings(Policy.SINGLE_NUMA_NODE, Scope.CONTAINER)
    options = BuildOptions(
        "n", tm, reserved_cpus=frozenset({0, 1}), cpu_manager=CPUManagerOptions.parse({"full-pcpus-only": "true"})
    )
    nrt = build(machine, KubeletState(xeon_allocatable(), []), options).nrt
    assert nrt.attributes["cpuManagerPolicyOptionFullPCPUsOnly"] == "true"
    assert nrt.attributes["cpuManagerCPUsPerCore"] == "2"
    assert nrt.attributes["cpuManagerReservedCoreSiblings"] == "2"
    topology = NodeTopology.from_nrt(nrt)
    assert topology.cpu_manager.full_pcpus_only and topology.cpu_manager.cpu_group_size == 2
    without = build(machine, KubeletState(xeon_allocatable(), []), BuildOptions("n", tm)).nrt
    assert not any(name.startswith("cpuManager") for name in without.attributes)


def test_devices_without_numa_information_never_count_toward_a_zone(xeon_sysfs: Path) -> None:
    """devicemanager `generateDeviceTopologyHints` counts a device in a mask only through its NUMA nodes, so devices
    the plugin reports without topology never help a hint (and a resource with no NUMA device at all gets no hint:
    `deviceHasTopologyAlignment` is false). The exporter leaves them out of the zones; the model then agrees."""
    allocatable = Allocatable(
        cpu_ids=tuple(range(2, 24)),
        devices=(
            Devices("example.com/fpga", ("f0", "f1"), (0,)),
            Devices("example.com/fpga", ("f2", "f3"), ()),
            Devices("example.com/dongle", ("d0",), ()),
        ),
    )
    tm = TopologyManagerSettings(Policy.SINGLE_NUMA_NODE, Scope.CONTAINER)
    nrt = build(discover(xeon_sysfs), KubeletState(allocatable, []), BuildOptions("n", tm)).nrt
    got = resources(nrt)
    assert got["node-0"]["example.com/fpga"] == (2, 2, 2)
    assert "example.com/fpga" not in got["node-1"]
    assert all("example.com/dongle" not in zone for zone in got.values())
    topology = NodeTopology.from_nrt(nrt)

    def pod(**limits: str) -> PodModel:
        spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi", **limits}}}]}
        return PodModel.from_manifest({"metadata": {"name": "p"}, "spec": spec})

    two = admit(pod(**{"example.com/fpga": "2"}), topology)
    assert two.admitted and two.placements[0].numa_ids == (0,)
    assert admit(pod(**{"example.com/fpga": "3"}), topology).reason == "TopologyAffinityError"
    assert admit(pod(**{"example.com/dongle": "1"}), topology).admitted  # no NUMA device: no hint, no constraint


def test_without_kubelet(xeon_sysfs: Path) -> None:
    machine = discover(xeon_sysfs)
    got = resources(build(machine, None, BuildOptions("n")).nrt)
    assert got["node-0"] == {
        "cpu": (12000, 12000, 12000),
        "hugepages-1Gi": (0, 0, 0),
        "hugepages-2Mi": (0, 0, 0),
        "memory": (33771839488, 33771839488, 33771839488),
    }
    reserved = resources(build(machine, None, BuildOptions("n", reserved_cpus=frozenset({0, 1}))).nrt)
    assert reserved["node-0"]["cpu"] == (12000, 11000, 11000)
    nrt = build(machine, None, BuildOptions("n")).nrt
    assert "nodeTopologyPodsFingerprint" not in nrt.attributes


@st.composite
def kubelet_states(draw: st.DrawFn) -> tuple[MachineTopology, KubeletState]:
    """Random machines (1-6 NUMA nodes, non-contiguous ids, some memory-only) and random kubelet reports,
    including inconsistent ones (allocations of CPUs outside allocatable, oversized memory blocks)."""
    ids = sorted(draw(st.sets(st.integers(0, 12), min_size=1, max_size=6)))
    nodes, cpu = [], 0
    for numa_id in ids:
        count = draw(st.integers(0, 6))
        nodes.append(
            NUMANode(
                numa_id,
                frozenset(range(cpu, cpu + count)),
                draw(st.integers(0, 8)) * GiB,
                {2 * MiB: draw(st.integers(0, 4))},
                {j: 10 if j == numa_id else 20 for j in ids},
            )
        )
        cpu += count
    machine = MachineTopology(tuple(nodes))
    all_cpus = list(range(cpu + 2))  # two CPUs the machine does not have
    numa = st.sampled_from([*ids, 99])
    allocatable = Allocatable(
        cpu_ids=tuple(draw(st.sets(st.sampled_from(all_cpus)))) if all_cpus else (),
        memory=tuple(Memory("memory", draw(st.integers(0, 8)) * GiB, (i,)) for i in ids if draw(st.booleans())),
        devices=tuple(
            Devices("x.io/dev", (f"d{k}",), tuple(draw(st.sets(numa, max_size=2))))
            for k in range(draw(st.integers(0, 4)))
        ),
    )
    pods = [
        Pod(
            "ns",
            f"p{k}",
            (
                Container(
                    "c",
                    cpu_ids=tuple(draw(st.sets(st.sampled_from(all_cpus), max_size=3))) if all_cpus else (),
                    memory=tuple(
                        Memory("memory", draw(st.integers(1, 4)) * GiB, tuple(draw(st.sets(numa, max_size=2))))
                        for _ in range(draw(st.integers(0, 2)))
                    ),
                    devices=(Devices("x.io/dev", (f"d{draw(st.integers(0, 5))}",), (draw(numa),)),),
                ),
            ),
        )
        for k in range(draw(st.integers(0, 6)))
    ]
    return machine, KubeletState(allocatable, pods)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(kubelet_states())
def test_builder_invariants(case: tuple[MachineTopology, KubeletState]) -> None:
    machine, state = case
    result = build(machine, state, BuildOptions("n"))
    nrt = result.nrt
    assert [z.name for z in nrt.zones] == [f"node-{i}" for i in machine.numa_ids]
    for zone in nrt.zones:
        for info in zone.resources:
            assert 0 <= info.available <= info.allocatable <= info.capacity
    # every allocatable CPU the machine has is counted exactly once
    cpu_alloc = sum(r.allocatable for z in nrt.zones for r in z.resources if r.name == "cpu")
    assert cpu_alloc == 1000 * len(set(state.allocatable.cpu_ids) & set(machine.cpu_to_node))
    # every NUMA-local allocatable device is counted exactly once
    local = {d.device_ids[0] for d in state.allocatable.devices if set(d.numa_ids) & set(machine.numa_ids)}
    assert sum(r.allocatable for z in nrt.zones for r in z.resources if r.name == "x.io/dev") == len(local)
    # the same input in another order gives the same object
    shuffled = KubeletState(state.allocatable, list(reversed(state.pods)))
    assert build(machine, shuffled, BuildOptions("n")).nrt.to_dict() == nrt.to_dict()
    NodeResourceTopology.from_dict(nrt.to_dict())  # readable by the scheduler side


def test_watch_namespace_limits_accounting_not_the_fingerprint(xeon_sysfs: Path) -> None:
    """RTE's `--watch-namespace`: only that namespace's pods are subtracted; the fingerprint covers every pod,
    because the scheduler computes its own over all the pods of the node."""
    pods = [
        Pod("prod", "db", (Container("db", (2, 4)),)),
        Pod("batch", "job", (Container("job", (6, 8, 10)),)),
    ]
    state = KubeletState(xeon_allocatable(), pods)
    machine = discover(xeon_sysfs)
    everything = build(machine, state, BuildOptions("worker-0"))
    prod_only = build(machine, state, BuildOptions("worker-0", namespace="prod"))
    assert resources(everything.nrt)["node-0"]["cpu"] == (12000, 11000, 6000)
    assert resources(prod_only.nrt)["node-0"]["cpu"] == (12000, 11000, 9000)
    assert prod_only.nrt.fingerprint == everything.nrt.fingerprint == compute([("prod", "db"), ("batch", "job")])
    assert build(machine, state, BuildOptions("worker-0", namespace="none")).nrt.zones[0].resources[0].available == (
        11000
    )
