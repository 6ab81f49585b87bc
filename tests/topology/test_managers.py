"""The CPU, memory and device managers' hints and allocations (`WorkingNode`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings

from knuma.api.nrt import Policy, Scope, TopologyManagerConfig
from knuma.topology import NodeTopology, NUMAZone, admit, kubelet, managers
from knuma.topology.hints import Hint, iterate_masks
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR
from knuma.topology.managers import AllocationError, WorkingNode

from .test_kubelet import GPU, Gi, cpus, gu, make_pod, nodes, pods
from .test_kubelet import node as snn_node


def node(
    zones: dict[int, dict[str, int]],
    available: dict[int, dict[str, int]] | None = None,
    policy: Policy = Policy.RESTRICTED,
) -> NodeTopology:
    """Restricted by default: under single-numa-node the managers only walk single-node masks (see below)."""
    return snn_node(zones, policy, available=available)


def zone(numa_id: int, capacity: dict[str, int], allocatable: dict[str, int], available: dict[str, int]) -> NUMAZone:
    return NUMAZone(numa_id, capacity, allocatable, available, {n: 10 if n == numa_id else 20 for n in (0, 1)})


def reserved_node(policy: Policy) -> NodeTopology:
    """2 NUMA nodes x 4 CPUs, one CPU of each reserved for the system (allocatable 3)."""
    zones = tuple(zone(i, {"cpu": cpus(4)}, {"cpu": cpus(3)}, {"cpu": cpus(3)}) for i in (0, 1))
    return NodeTopology("n", zones, TopologyManagerConfig(policy, Scope.CONTAINER))


def H(mask: int, preferred: bool = True) -> Hint:
    return Hint(mask, preferred)


# -- CPU manager -----------------------------------------------------------------------------------------------------


def test_cpu_hints_every_mask_preferred_at_minimal_width():
    work = WorkingNode.of(node({0: {"cpu": cpus(4)}, 1: {"cpu": cpus(4)}}))
    assert work.countable_hints("cpu", 2) == [H(0b01), H(0b10), H(0b11, False)]
    assert work.countable_hints("cpu", 6) == [H(0b11)]
    assert work.countable_hints("cpu", 9) == []


def test_cpu_preferred_width_counts_reserved_cpus():
    """generateCPUTopologyHints sizes minAffinitySize with every CPU of the NUMA nodes (CPUsInNUMANodes), reserved
    ones included: 4 CPUs 'fit' one NUMA node although only 3 are allocatable there, so {0,1} is not preferred."""
    work = WorkingNode.of(reserved_node(Policy.RESTRICTED))
    assert work.countable_hints("cpu", 4) == [H(0b11, False)]
    assert not admit(make_pod(gu("app", "4")), reserved_node(Policy.RESTRICTED)).admitted
    assert admit(make_pod(gu("app", "4")), reserved_node(Policy.BEST_EFFORT)).admitted
    assert admit(make_pod(gu("app", "3")), reserved_node(Policy.SINGLE_NUMA_NODE)).admitted


def test_cpu_hints_count_free_cpus_only():
    work = WorkingNode.of(node({0: {"cpu": cpus(4)}, 1: {"cpu": cpus(4)}}, available={0: {"cpu": cpus(1)}}))
    assert work.countable_hints("cpu", 2) == [H(0b10), H(0b11, False)]
    snn = WorkingNode.of(
        node({0: {"cpu": cpus(4)}, 1: {"cpu": cpus(4)}}, {0: {"cpu": cpus(1)}}, Policy.SINGLE_NUMA_NODE)
    )
    assert snn.countable_hints("cpu", 2) == [H(0b10)]


def test_reusable_cpus_must_lie_inside_the_mask():
    work = WorkingNode.of(node({0: {"cpu": cpus(4)}, 1: {"cpu": cpus(4)}}))
    taken = work.allocate_countable("cpu", 2, 0b10, reusable_after=True)  # an init container on NUMA 1
    assert taken == {1: cpus(2)}
    assert work.reusable["cpu"] == {1: 2}
    assert work.countable_hints("cpu", 2) == [H(0b10), H(0b11, False)]  # {0} would leave the reusable CPUs out
    assert work.countable_hints("cpu", 4) == [H(0b10), H(0b11, False)]
    taken = work.allocate_countable("cpu", 3, 0b10, reusable_after=False)  # the app reuses 2, takes 1 more
    assert taken == {1: cpus(3)}
    assert work.reusable["cpu"] == {1: 0}
    assert work.free[1]["cpu"] == cpus(1)


def test_cpu_allocation_spills_outside_the_hint_and_fails_when_short():
    work = WorkingNode.of(node({0: {"cpu": cpus(4)}, 1: {"cpu": cpus(4)}}, available={0: {"cpu": cpus(1)}}))
    assert work.allocate_countable("cpu", 3, 0b01, reusable_after=False) == {0: cpus(1), 1: cpus(2)}
    with pytest.raises(AllocationError, match="not enough cpu"):
        work.allocate_countable("cpu", 3, None, reusable_after=False)


# -- device manager --------------------------------------------------------------------------------------------------


def test_device_hints_and_preferred_width_from_all_devices():
    n = node({0: {GPU: 2}, 1: {GPU: 2}}, available={0: {GPU: 0}, 1: {GPU: 1}})
    work = WorkingNode.of(n)
    assert work.countable_hints(GPU, 1) == [H(0b10), H(0b11, False)]
    assert work.countable_hints(GPU, 2) == []  # fewer available than requested: an empty list, not nil
    empty = WorkingNode.of(node({0: {GPU: 2}, 1: {GPU: 2}}))
    assert empty.countable_hints(GPU, 3) == [H(0b11)]


# -- memory manager --------------------------------------------------------------------------------------------------


def test_memory_preferred_width_from_allocatable():
    zones = tuple(
        zone(i, {"memory": 5 * Gi}, {"memory": 4 * Gi}, {"memory": 4 * Gi}) for i in (0, 1)
    )  # 1Gi reserved per NUMA node
    work = WorkingNode.of(NodeTopology("n", zones, TopologyManagerConfig(Policy.RESTRICTED)))
    assert work.memory_hints({"memory": 4 * Gi}) == [H(0b01), H(0b10), H(0b11, False)]
    assert work.memory_hints({"memory": 4 * Gi + 1}) == [H(0b11)]


def test_memory_hints_cover_every_requested_type_at_once():
    n = node({0: {"memory": 4 * Gi, "hugepages-2Mi": 0}, 1: {"memory": 4 * Gi, "hugepages-2Mi": Gi}})
    work = WorkingNode.of(n)
    assert work.memory_hints({"memory": Gi, "hugepages-2Mi": Gi}) == [H(0b10), H(0b11, False)]


def test_memory_groups():
    n = node({i: {"memory": 4 * Gi} for i in range(3)})
    work = WorkingNode.of(n)
    allocation = work.allocate_memory({"memory": 6 * Gi}, 0b011, True, reusable_after=False)
    assert allocation == {"memory": {0: 4 * Gi, 1: 2 * Gi}}
    assert work.groups == {0: {0, 1}, 1: {0, 1}}
    # node 1 is in the group {0,1}: it cannot serve a single-NUMA request, nor join another group
    assert work.memory_hints({"memory": Gi}) == [H(0b100), H(0b011, False)]
    # a node used alone cannot join a group
    work.allocate_memory({"memory": Gi}, 0b100, True, reusable_after=False)
    assert work.memory_hints({"memory": 5 * Gi}) == []


def test_partly_used_nodes_start_as_single_numa_assignments():
    n = node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}}, available={0: {"memory": 3 * Gi}})
    work = WorkingNode.of(n)
    assert work.used_memory == {0}
    assert work.memory_hints({"memory": 5 * Gi}) == []
    assert work.memory_hints({"memory": 3 * Gi}) == [H(0b01), H(0b10)]


def test_memory_allocate_default_and_extended_hints():
    n = node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}})
    work = WorkingNode.of(n)
    assert work.allocate_memory({"memory": Gi}, None, True, reusable_after=False) == {"memory": {0: Gi}}
    # {0} has 3Gi left: the hint is extended to the narrowest mask that includes it and holds the request
    work = WorkingNode.of(node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}}))
    assert work.allocate_memory({"memory": 5 * Gi}, 0b01, False, reusable_after=False) == {"memory": {0: 4 * Gi, 1: Gi}}
    work = WorkingNode.of(node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}}))
    # the only superset of {0} holding 3Gi is {0,1}, not preferred (node 1 alone could hold it)
    work = WorkingNode.of(node({0: {"memory": 2 * Gi}, 1: {"memory": 8 * Gi}}))
    with pytest.raises(AllocationError, match="extended preferred hint"):
        work.allocate_memory({"memory": 3 * Gi}, 0b01, True, reusable_after=False)
    assert work.allocate_memory({"memory": 3 * Gi}, 0b01, False, reusable_after=False) == {"memory": {0: 2 * Gi, 1: Gi}}
    work = WorkingNode.of(node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}}))
    with pytest.raises(AllocationError):
        work.allocate_memory({"memory": 9 * Gi}, None, False, reusable_after=False)


def test_init_container_memory_reuse_is_keyed_by_mask():
    n = node({0: {"memory": 4 * Gi}, 1: {"memory": 4 * Gi}})
    work = WorkingNode.of(n)
    work.allocate_memory({"memory": 3 * Gi}, 0b01, True, reusable_after=True)
    work.allocate_memory({"memory": 1 * Gi}, 0b01, True, reusable_after=True)  # reuses; the larger block stays
    assert work.reusable_memory == {"memory": {0b01: {0: 3 * Gi}}}
    assert work.free[0]["memory"] == Gi
    # calculateHints: free + reusable for that exact mask
    assert work.memory_hints({"memory": 4 * Gi}) == [H(0b01), H(0b10)]
    # a container on {1} does not reuse what was reserved on {0}
    assert work.allocate_memory({"memory": Gi}, 0b10, True, reusable_after=False) == {"memory": {1: Gi}}
    assert work.allocate_memory({"memory": 4 * Gi}, 0b01, True, reusable_after=False) == {"memory": {0: 4 * Gi}}
    assert work.reusable_memory == {"memory": {0b01: {0: 0}}}
    assert work.free[0]["memory"] == 0


# -- single-numa-node walks single-node masks only -----------------------------------------------------------------


def test_single_numa_node_memory_in_a_multi_numa_group_is_rejected():
    """Nodes 0 and 1 form a memory group; node 2 holds a single-NUMA allocation. calculateHints offers only {0,1}
    (a grouped node cannot serve alone), so single-numa-node rejects, even though node 0 has the free memory and a
    CPU hint points there. (Regression: with single-node masks only, memory looked like "no preference".)"""
    zones = {i: {"cpu": cpus(4), "memory": 4 * Gi} for i in range(3)}
    free = {
        0: {"cpu": cpus(4), "memory": 3 * Gi},
        1: {"cpu": cpus(4), "memory": 3 * Gi},
        2: {"cpu": cpus(4), "memory": Gi},
    }
    grouped = replace(snn_node(zones, available=free), memory_groups={0: frozenset({0, 1}), 1: frozenset({0, 1})})
    result = admit(make_pod(gu("app", "1", "2Gi")), grouped)
    assert not result.admitted
    assert result.reason == TOPOLOGY_AFFINITY_ERROR
    work = WorkingNode.of(grouped)
    assert work.memory_hints({"memory": 2 * Gi}) == [H(0b011, False)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=pods(), n=nodes(policies=(Policy.SINGLE_NUMA_NODE,)))
def test_single_node_masks_give_the_same_admission_as_every_mask(p, n):
    fast = admit(p, n)
    with patch.object(WorkingNode, "_masks", lambda self: iterate_masks(self.node.numa_ids)):
        full = admit(p, n)
    assert (fast.admitted, fast.reason, fast.placements) == (full.admitted, full.reason, full.placements)
    assert fast.node == full.node


def test_devices_reused_from_init_containers_come_first_wherever_they_are():
    """devicesToAllocate takes reusable devices before aligned free ones. Here the init container holds both GPUs of
    NUMA 1; the app's GPU and NIC hints merge (best-effort) to the non-preferred {0}, yet the app gets a reused GPU
    on NUMA 1 and NUMA 0's GPU stays free."""
    nic = "example.com/nic"
    zones = {0: {"cpu": cpus(4), GPU: 1, nic: 1}, 1: {"cpu": cpus(4), GPU: 2}}
    p = make_pod(
        {"name": "app", "resources": {"limits": {GPU: "1", nic: "1"}}},
        init=({"name": "setup", "resources": {"limits": {GPU: "2"}}},),
    )
    result = admit(p, node(zones, policy=Policy.BEST_EFFORT))
    assert result.admitted
    setup, app = result.placements
    assert setup.allocated == {GPU: {1: 2}}
    assert app.affinity == (0,)
    assert app.allocated == {GPU: {1: 1}, nic: {0: 1}}
    assert {z.id: z.available[GPU] for z in result.node.zones} == {0: 1, 1: 1}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=pods(), n=nodes())
def test_hints_from_the_mask_table_admit_as_the_python_walk_does(p, n):
    """From 4,095 masks (12 NUMA nodes) the providers select masks with numpy (`knuma.topology.masktable`); forced on
    for these small nodes (NUMA ids with gaps included), every admission comes out the same: verdict, reason, each
    container's NUMA nodes and amounts, and the node after it (reused init CPUs, memory groups)."""
    walked = kubelet._admit(p, n, None, None)
    with patch.object(managers, "DENSE_MASKS_FROM", 1):
        tabled = kubelet._admit(p, n, None, None)
    assert (tabled.admitted, tabled.reason, tabled.message) == (walked.admitted, walked.reason, walked.message)
    assert tabled.placements == walked.placements
    assert tabled.node.zones == walked.node.zones and tabled.node.memory_groups == walked.node.memory_groups


def test_the_mask_table_keeps_reused_cpus_and_memory_where_the_walk_does():
    """What init containers left reusable steers the hints: CPU masks must hold the reusable CPUs' NUMA node, and
    reusable memory counts for its own mask only. The table-based selection gives the walk's hints."""
    zones = {i: {"cpu": cpus(4), "memory": 4 * Gi} for i in range(4)}
    free = {0: {"cpu": cpus(1), "memory": Gi}, 1: {"cpu": cpus(4), "memory": Gi}, 2: {"cpu": cpus(2), "memory": 0}}
    free[3] = {"cpu": cpus(4), "memory": 4 * Gi}

    def both(work_for: Callable[[], WorkingNode], ask: Callable[[WorkingNode], list[Hint]]) -> list[Hint]:
        walked = ask(work_for())
        with patch.object(managers, "DENSE_MASKS_FROM", 1):
            tabled = ask(work_for())
        assert tabled == walked
        return walked

    def with_reuse() -> WorkingNode:
        work = WorkingNode.of(node(zones, free))
        work.reusable["cpu"] = {2: 2}
        work.reusable_memory["memory"] = {0b101: {0: Gi, 2: 2 * Gi}}
        work.groups[0] = work.groups[2] = frozenset({0, 2})  # the init container's memory spans nodes 0 and 2
        return work

    cpu_hints = both(with_reuse, lambda w: w.countable_hints("cpu", 5))
    assert cpu_hints and all(h.mask is not None and h.mask & 0b100 for h in cpu_hints)  # node 2 holds the reuse
    memory_hints = both(with_reuse, lambda w: w.memory_hints({"memory": 4 * Gi}))
    assert memory_hints == [H(0b1000), H(0b101, False)]  # the group holds 1 GiB free and 3 GiB reusable

    def grouped_with_a_free_node() -> WorkingNode:
        work = WorkingNode.of(node(zones, free))
        work.groups[0] = work.groups[3] = frozenset({0, 3})  # node 3 is free, but part of node 0's group
        return work

    grouped = both(grouped_with_a_free_node, lambda w: w.memory_hints({"memory": 4 * Gi}))
    assert grouped == [H(0b1001, False)]  # not node 3 alone: a NUMA node in a multi-NUMA group only goes with it
