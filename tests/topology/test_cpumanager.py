"""The static CPU manager's policy options in admission: `full-pcpus-only` (SMTAlignmentError),
`distribute-cpus-across-numa`, `align-by-socket`, `strict-cpu-reservation`; parsing and NRT attributes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from knuma.api.nrt import NodeResourceTopology, Policy, Scope
from knuma.topology import NodeTopology, admit
from knuma.topology.cpumanager import (
    ATTR_CPUS_PER_CORE,
    ATTR_NUMA_SOCKETS,
    ATTR_RESERVED_CORE_SIBLINGS,
    CPUManagerOptions,
    CPUManagerOptionsError,
    distribute_across_numa,
)
from knuma.topology.kubelet import SMT_ALIGNMENT_ERROR, TOPOLOGY_AFFINITY_ERROR
from tests.topology.test_kubelet import available, cpus, gu, make_pod, placement_ids

SMT2 = CPUManagerOptions(full_pcpus_only=True, cpus_per_core=2)


def node(
    zones: int,
    per_zone: int,
    policy: Policy = Policy.SINGLE_NUMA_NODE,
    options: CPUManagerOptions = SMT2,
    free: dict[int, int] | None = None,
) -> NodeTopology:
    allocatable = {z: {"cpu": cpus(per_zone)} for z in range(zones)}
    avail = {z: {"cpu": cpus(n)} for z, n in free.items()} if free else None
    return NodeTopology.build("w", allocatable, policy, Scope.CONTAINER, available=avail, cpu_manager=options)


# -- full-pcpus-only -------------------------------------------------------------------------------------------------


def test_full_pcpus_only_rejects_cpus_that_are_not_whole_cores():
    """`staticPolicy.Allocate`: `numCPUs % cpuGroupSize != 0` is an SMTAlignmentError (1.22+), whatever is free."""
    result = admit(make_pod(gu("app", "3")), node(2, 8))
    assert not result.admitted
    assert result.reason == SMT_ALIGNMENT_ERROR
    assert result.message == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    assert result.container == "app"
    assert admit(make_pod(gu("app", "4")), node(2, 8)).admitted
    assert admit(make_pod(gu("app", "3")), node(2, 8, options=CPUManagerOptions(cpus_per_core=2))).admitted
    # fractional CPUs are shared-pool CPUs: no exclusive allocation, no SMT check
    assert admit(make_pod(gu("app", "1500m")), node(2, 8)).admitted


def test_the_topology_manager_merges_before_the_cpu_manager_allocates():
    """Container scope: hints and merge for a container, then `Allocate`; a container the merge rejects reports
    TopologyAffinityError, and an earlier container's odd count is reported before a later one's alignment."""
    too_big = admit(make_pod(gu("app", "9")), node(2, 8))
    assert too_big.reason == TOPOLOGY_AFFINITY_ERROR
    odd_first = admit(make_pod(gu("a", "1"), gu("b", "10")), node(2, 8))
    assert (odd_first.reason, odd_first.container) == (SMT_ALIGNMENT_ERROR, "a")


def test_full_pcpus_only_counts_the_siblings_of_reserved_cpus_out():
    """1.27+ (kubernetes#114114): more CPUs than `default set - reservedPhysicalCPUs` is an SMTAlignmentError; the
    siblings of reserved CPUs stay in the shared pool."""
    options = replace(SMT2, reserved_core_siblings=2)
    n = node(2, 8, Policy.BEST_EFFORT, options, free={0: 2, 1: 6})
    result = admit(make_pod(gu("app", "8")), n)
    assert not result.admitted
    assert result.message == (
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 6, requested CPUs = 8, "
        "CPUs per core = 2"
    )
    assert admit(make_pod(gu("app", "6")), n).admitted


def test_cpus_an_init_container_leaves_reusable_are_not_free_physical_cpus():
    """`GetAvailablePhysicalCPUs` is the default set: an init container's CPUs are assigned, not in it, so the app
    container that would reuse them is refused when the rest of the node is full."""
    n = node(1, 8)
    assert admit(make_pod(gu("app", "8")), n).admitted
    result = admit(make_pod(gu("app", "8"), init=(gu("setup", "4"),)), n)
    assert (result.reason, result.container) == (SMT_ALIGNMENT_ERROR, "app")
    assert "available physical CPUs = 4" in result.message


# -- distribute-cpus-across-numa -------------------------------------------------------------------------------------


def test_distribute_spreads_a_multi_numa_container_evenly_and_changes_later_admissions():
    packed = node(2, 8, Policy.RESTRICTED, CPUManagerOptions())
    spread = node(2, 8, Policy.RESTRICTED, CPUManagerOptions(distribute_cpus_across_numa=True))
    wide = make_pod(gu("app", "10"))
    first = admit(wide, packed)
    assert first.placements[0].allocated["cpu"] == {0: cpus(8), 1: cpus(2)}  # takeByTopologyNUMAPacked
    second = admit(wide, spread)
    assert second.placements[0].allocated["cpu"] == {0: cpus(5), 1: cpus(5)}
    assert available(second, "cpu") == {0: cpus(3), 1: cpus(3)}
    # a 4-CPU pod then fits one NUMA node after packing, but only two after distributing: restricted rejects it
    assert admit(make_pod(gu("next", "4")), first.node).admitted
    assert admit(make_pod(gu("next", "4")), second.node).reason == TOPOLOGY_AFFINITY_ERROR


def test_distribute_follows_takebytopologynumadistributed():
    # minimum NUMA count from the machine's groups per node; the remainder to the subset that balances best
    assert distribute_across_numa({0: 8, 1: 8}, 10, 1, 16, 2) == {0: 5, 1: 5}
    assert distribute_across_numa({0: 8, 1: 8}, 6, 1, 16, 2) == {0: 6}
    assert distribute_across_numa({0: 2, 1: 8}, 6, 1, 16, 2) == {1: 6}
    assert distribute_across_numa({0: 8, 1: 8, 2: 8}, 10, 2, 24, 3) == {0: 6, 1: 4}  # 2 nodes suffice
    # not a multiple of the group size (full-pcpus-only cores): the kubelet packs instead
    assert distribute_across_numa({0: 8, 1: 8}, 9, 2, 16, 2) is None
    assert distribute_across_numa({0: 2, 1: 2}, 6, 1, 16, 2) is None


# -- align-by-socket -------------------------------------------------------------------------------------------------


def test_align_by_socket_prefers_hints_within_the_fewest_sockets():
    """`isHintSocketAligned`: a 4-CPU request fits one NUMA node on an empty machine, but with 2 free CPUs per node
    only two-node masks hold it; restricted rejects those unless they stay on one socket."""
    sockets = {0: 0, 1: 0, 2: 1, 3: 1}
    free = {0: 2, 1: 2, 2: 2, 3: 2}
    plain = node(4, 4, Policy.RESTRICTED, CPUManagerOptions(), free=free)
    assert admit(make_pod(gu("app", "4")), plain).reason == TOPOLOGY_AFFINITY_ERROR
    by_socket = node(4, 4, Policy.RESTRICTED, CPUManagerOptions(align_by_socket=True, numa_sockets=sockets), free=free)
    result = admit(make_pod(gu("app", "4")), by_socket)
    assert result.admitted
    assert placement_ids(result) == {"app": (0, 1)}


# -- numaFirst and socketsFirst (cpu_assignment.go, newCPUAccumulator) ---------------------------------------------

SNC2 = {0: 0, 1: 0, 2: 1, 3: 1}
"""Two sockets of two NUMA nodes each: more NUMA nodes than sockets, so the kubelet takes CPUs `socketsFirst`."""


def _left_after(request: str, free: dict[int, int], sockets: dict[int, int]) -> dict[int, int]:
    """CPUs left per NUMA node after one container of `request` CPUs, under Topology Manager policy `none` (no
    hint: `takeByTopologyNUMAPacked` over every available CPU)."""
    result = admit(make_pod(gu("app", request)), node(4, 8, Policy.NONE, CPUManagerOptions(numa_sockets=sockets), free))
    assert result.admitted
    return {n: c // 1000 for n, c in available(result, "cpu").items()}


def test_more_numa_nodes_than_sockets_takes_cpus_from_the_fullest_socket_first():
    """`socketsFirst.sortAvailableNUMANodes`: sockets by available CPUs (fewest first), each socket's NUMA nodes
    by the same rule; `numaFirst` sorts the NUMA nodes alone. Socket 1 holds 9 available CPUs, socket 0 holds 11:
    the kubelet fills socket 1 (4 from node 3, then 2 from node 2), where `numaFirst` would take node 0's 3 first."""
    free = {0: 3, 1: 8, 2: 5, 3: 4}
    assert _left_after("6", free, SNC2) == {0: 3, 1: 8, 2: 3, 3: 0}
    one_per_node = {0: 0, 1: 1, 2: 2, 3: 3}  # as many sockets as NUMA nodes: numaFirst
    assert _left_after("6", free, one_per_node) == {0: 0, 1: 8, 2: 5, 3: 1}
    assert _left_after("6", free, {}) == {0: 0, 1: 8, 2: 5, 3: 1}  # sockets unknown: one per NUMA node


def test_sockets_first_sorts_again_after_taking_a_whole_numa_node():
    """After `takeFullNUMANodes` takes node 0 whole, socket 0 has 5 CPUs left against socket 1's 8, so the last
    two CPUs come from node 1 (`sortAvailableCores` sorts again), not from node 2 as the first order had it."""
    free = {0: 8, 1: 5, 2: 4, 3: 4}
    assert _left_after("10", free, SNC2) == {0: 0, 1: 3, 2: 4, 3: 4}
    assert _left_after("10", free, {}) == {0: 0, 1: 5, 2: 2, 3: 4}


def test_sockets_first_takes_a_whole_socket_before_whole_numa_nodes():
    """`socketsFirst.takeFullFirstLevel` claims socket 1 (nodes 2 and 3, every CPU available) for a 16-CPU
    container; `numaFirst` claims whole NUMA nodes 1 and 2 (node 0 is not whole; then the lowest ids)."""
    free = {0: 7, 1: 8, 2: 8, 3: 8}
    assert _left_after("16", free, SNC2) == {0: 7, 1: 8, 2: 0, 3: 0}
    assert _left_after("16", free, {}) == {0: 7, 1: 0, 2: 0, 3: 8}


def test_distributed_cpus_try_numa_nodes_in_the_socket_order_too():
    """`takeByTopologyNUMADistributed` walks combinations of `sortAvailableNUMANodes`, and the first of equally
    balanced ones wins: with two NUMA nodes a socket, socket 1 (4 CPUs available) comes before socket 0 (5), so
    nodes 2 and 1 take 2 CPUs each where `numaFirst` (node 0 with 2 CPUs first) takes nodes 0 and 1."""
    available = {0: 2, 1: 3, 2: 2, 3: 2}
    assert distribute_across_numa(available, 4, 1, 32, 4) == {0: 2, 1: 2}
    assert distribute_across_numa(available, 4, 1, 32, 4, CPUManagerOptions(numa_sockets=SNC2)) == {2: 2, 1: 2}


def test_strict_cpu_reservation_does_not_change_exclusive_admission():
    strict = node(2, 8, options=CPUManagerOptions(strict_cpu_reservation=True))
    plain = node(2, 8, options=CPUManagerOptions())
    for size in ("1", "8", "9"):
        a, b = admit(make_pod(gu("app", size)), strict), admit(make_pod(gu("app", size)), plain)
        assert (a.admitted, a.reason, placement_ids(a)) == (b.admitted, b.reason, placement_ids(b))


# -- configuration and NRT attributes --------------------------------------------------------------------------------


def test_options_parse_as_newstaticpolicyoptions():
    parsed = CPUManagerOptions.parse(
        {"full-pcpus-only": "true", "distribute-cpus-across-numa": "1", "align-by-socket": "F"}
    )
    assert (parsed.full_pcpus_only, parsed.distribute_cpus_across_numa, parsed.align_by_socket) == (True, True, False)
    assert parsed.enabled() == ["full-pcpus-only", "distribute-cpus-across-numa"]
    with pytest.raises(CPUManagerOptionsError, match="unknown CPU Manager Policy option 'full-cores'"):
        CPUManagerOptions.parse({"full-cores": "true"})
    with pytest.raises(CPUManagerOptionsError, match=r"full-pcpus-only: bad value 'yes'"):
        CPUManagerOptions.parse({"full-pcpus-only": "yes"})


def test_attributes_round_trip_through_an_nrt():
    options = CPUManagerOptions(
        full_pcpus_only=True,
        align_by_socket=True,
        strict_cpu_reservation=True,
        cpus_per_core=2,
        reserved_core_siblings=2,
        numa_sockets={0: 0, 1: 1},
    )
    attributes = options.attributes()
    assert attributes == {
        "cpuManagerPolicyOptionFullPCPUsOnly": "true",
        "cpuManagerPolicyOptionAlignBySocket": "true",
        "cpuManagerPolicyOptionStrictCPUReservation": "true",
        ATTR_CPUS_PER_CORE: "2",
        ATTR_RESERVED_CORE_SIBLINGS: "2",
        ATTR_NUMA_SOCKETS: "0:0,1:1",
    }
    nrt = NodeResourceTopology.from_dict(
        {
            "apiVersion": "topology.node.k8s.io/v1alpha2",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "w"},
            "attributes": [{"name": k, "value": v} for k, v in attributes.items()],
            "zones": [
                {
                    "name": "node-0",
                    "type": "Node",
                    "resources": [{"name": "cpu", "capacity": "8", "allocatable": "8", "available": "8"}],
                }
            ],
        }
    )
    assert NodeTopology.from_nrt(nrt).cpu_manager == options
    assert CPUManagerOptions.from_attributes({ATTR_CPUS_PER_CORE: "two"}).cpus_per_core == 1
    assert CPUManagerOptions().attributes() == {}


# -- takeByTopologyNUMAPacked at NUMA-count granularity ----------------------------------------------------------------


def test_packed_allocation_takes_whole_free_numa_nodes_first():
    """`takeFullNUMANodes`: a request that needs at least a node's CPUs takes an entirely free node first, then the
    rest from the other node; a node holding reserved CPUs is never entirely free."""
    n = node(2, 8, Policy.RESTRICTED, CPUManagerOptions(), free={0: 6, 1: 8})
    result = admit(make_pod(gu("app", "10")), n)
    assert result.placements[0].allocated["cpu"] == {0: cpus(2), 1: cpus(8)}


def test_packed_allocation_fills_the_numa_node_with_the_fewest_available_cpus_first():
    """`sortAvailableNUMANodes` / `sortAvailableCores`: ascending available CPUs, then id. With no NUMA affinity
    (policy none) every node is a candidate: 3 CPUs go to node 1, which has 5 available, not node 0 with 7."""
    n = node(2, 8, Policy.NONE, CPUManagerOptions(), free={0: 7, 1: 5})
    result = admit(make_pod(gu("app", "3")), n)
    assert result.placements[0].allocated["cpu"] == {1: cpus(3)}
    # and the remainder of a multi-node request comes from the fuller node first
    wide = admit(make_pod(gu("app", "9")), node(2, 8, Policy.BEST_EFFORT, CPUManagerOptions(), free={0: 7, 1: 5}))
    assert wide.placements[0].allocated["cpu"] == {0: cpus(4), 1: cpus(5)}
