"""Stranded CPUs: KnumaBinPacking charges placements for the zone remainders the recent mix of pod sizes is not
expected to fill, and credits placements that leave their zone easier to fill exactly."""

from __future__ import annotations

import random

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import (
    MIX_REFRESH,
    CPUDemand,
    exclusive_cpu_sizes,
    expected_stranded_table,
    stranding_penalty,
)
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.topology.kubelet import admit
from knuma.topology.node import NodeTopology
from tests.scheduler.builders import container, guaranteed, node_info, nrt, pod

GI = 1 << 30
PACKING = ScoringStrategy(StrategyType.KNUMA_BIN_PACKING)
SIZES = (3, 5, 6, 7, 10)


def sized(cpu: int, name: str = "") -> Pod:
    return pod(guaranteed("app", str(cpu), f"{cpu}Gi"), name=name or f"g{cpu}")


def demand_of(*sizes: int) -> CPUDemand:
    demand = CPUDemand()
    for index, size in enumerate(sizes):
        demand.observe(sized(size, f"seen-{index}"))
    return demand


def zones_of(name: str, size: int, *free: int) -> NodeInfo:
    """A node whose zones hold `size` CPUs each, with `free` CPUs available per zone."""
    return node_info(nrt(name, {z: {"cpu": (str(size), str(cpus)), "memory": "64Gi"} for z, cpus in enumerate(free)}))


def twelve_cpu_zones(name: str, *free: int, devices: bool = False) -> NodeInfo:
    zones = {}
    for z, cpus in enumerate(free):
        zone: dict[str, tuple[str, str] | str] = {"cpu": ("12", str(cpus)), "memory": "64Gi"}
        if devices:
            zone["example.com/gpu"] = "2"
        zones[z] = zone
    return node_info(nrt(name, zones))


def test_sizes_are_the_long_running_exclusive_cpus_of_guaranteed_pods() -> None:
    sidecar = guaranteed("proxy", "1", restartPolicy="Always")
    p = pod(guaranteed("app", "4"), guaranteed("log", "2"), init=(guaranteed("setup", "8"), sidecar))
    assert exclusive_cpu_sizes(p) == (1, 4, 2)  # the init container's 8 CPUs are given back before the apps start
    assert exclusive_cpu_sizes(pod(guaranteed("app", "1500m"))) == ()  # fractional: shared pool, nothing pinned
    assert exclusive_cpu_sizes(pod(container("app", requests={"cpu": "4"}))) == ()  # Burstable


def test_expected_stranded_cpus_of_a_remainder_under_a_mix_of_sizes() -> None:
    """E(g): nothing fits -> g; g is a size -> 0 (a pod of that size fills it); else the count-weighted mean of
    E(g - s) over the sizes that fit (hundredths)."""
    # 3s and 5s alike: E(1) = 1, E(2) = 2, E(3) = 0, E(4) = E(1) = 1 (only a 3 fits), E(5) = 0 (a 5 fills it, not
    # (E(2) + E(0)) / 2: the 3s go where they fit exactly), E(6) = (E(3) + E(1)) / 2, E(7) = (E(4) + E(2)) / 2,
    # E(8) = (E(5) + E(3)) / 2, E(9) = (E(6) + E(4)) / 2
    assert expected_stranded_table({3: 1, 5: 1}, 9).tolist() == [0, 100, 200, 0, 100, 0, 50, 150, 0, 75]
    # 9 = 3 + 3 + 3 ends full when 3s keep coming: likely if 3s are common, not if 5s are (a 5 leaves 4, then 1)
    assert expected_stranded_table({3: 9, 5: 1}, 9)[9] == 19
    assert expected_stranded_table({3: 1, 5: 9}, 9)[9] == 99
    assert expected_stranded_table({}, 5).tolist() == [0] * 6  # nothing seen: no information, no penalty


def test_a_remainder_equal_to_a_recent_size_counts_as_filled() -> None:
    """Under the `fragmented` mix a 12-CPU zone holding a 7-CPU pod keeps 5 CPUs for a 5-CPU pod: nothing stranded,
    where a 6 + 5 pair strands one CPU; a zone that no size fills exactly strands what the mix leaves."""
    table = expected_stranded_table({3: 34, 5: 69, 6: 69, 7: 34, 10: 34}, 12)
    assert [table[size] for size in (3, 5, 6, 7, 10)] == [0] * 5
    assert table[1] == 100 and table[2] == 200 and table[4] == 100  # only a 3 fits in 4
    assert 0 < table[8] < 100  # 8 = 5 + 3 = 3 + 5, but a 6 or a 7 may come first


@pytest.mark.parametrize("seed", range(5))
def test_expected_stranding_is_never_below_what_no_sum_of_sizes_fills(seed: int) -> None:
    rng = random.Random(seed)
    mix = {rng.randint(1, 12): rng.randint(1, 20) for _ in range(rng.randint(1, 4))}
    table = expected_stranded_table(mix, 40)
    reachable = {0}
    for free in range(1, 41):
        if any(free - size in reachable for size in mix if size <= free):
            reachable.add(free)
        fill = max(r for r in reachable if r <= free)
        assert table[free] >= 100 * (free - fill), (mix, free)
        if free < min(mix):
            assert table[free] == 100 * free  # no size fits: all of it is stranded
        if all(size == 1 for size in mix):
            assert table[free] == 0


def test_the_demand_reads_its_table_from_the_window() -> None:
    demand = demand_of(3, 5)
    assert [demand.expected_stranded(free) for free in range(10)] == [0, 100, 200, 0, 100, 0, 50, 150, 0, 75]
    assert demand.expected_stranded(10_000) >= 0  # the table grows on demand
    assert demand.stranded_table(10_000)[:10].tolist() == [0, 100, 200, 0, 100, 0, 50, 150, 0, 75]
    assert CPUDemand().expected_stranded(2) == 0  # nothing seen yet: no penalty, plain bin packing


def test_the_table_follows_the_mix_without_invalidating_scores_for_nothing() -> None:
    """`version` (what cached scores are checked against) changes when the table does, not with every pod: pods that
    keep the window's mix as it was keep it; a shift in the mix changes it."""
    demand = CPUDemand(window=10)
    for index in range(10):
        demand.observe(sized(3 if index % 2 else 5, f"first-{index}"))
    version = demand.version
    assert demand.mix == {3: 5, 5: 5}
    for index in range(20):  # each pod replaces one of its size in the window: the same mix
        demand.observe(sized(3 if index % 2 else 5, f"more-{index}"))
    assert demand.version == version
    before = demand.expected_stranded(9)
    for index in range(4):  # now mostly 3s
        demand.observe(sized(3, f"three-{index}"))
    assert demand.version > version and demand.mix[3] > demand.mix[5]
    assert demand.expected_stranded(9) < before  # 9 = 3 + 3 + 3 is likelier to end full
    # in a large window the table is refreshed once a tenth of the window's pods came since the last refresh
    large = CPUDemand(window=1000)
    for index in range(500):
        large.observe(sized(3 if index % 2 else 5, f"large-{index}"))
    assert sum(large.mix.values()) >= 500 - 500 // MIX_REFRESH


def test_penalty_is_the_change_in_expected_stranded_cpus_relative_to_the_zone() -> None:
    demand = demand_of(3, 5)  # E(9) = 0.75 (see above)
    node = twelve_cpu_zones("n", 9)
    assert node.topology is not None

    def penalty(cpu: int, on: NodeInfo = node) -> int:
        assert on.topology is not None
        admission = admit(sized(cpu), on.topology)
        assert admission.admitted
        return stranding_penalty(on.topology, admission.node, demand)

    assert penalty(7) == 3 * (200 - 75) // 12  # 9 - 7 leaves 2: both stranded, where 0.75 were expected
    assert penalty(5) == 3 * (100 - 75) // 12  # leaves 4: a 3-CPU pod fits, 1 CPU stranded
    assert penalty(6) == 3 * (0 - 75) // 12 < 0  # leaves 3, exactly a 3-CPU pod: a credit
    assert penalty(7, twelve_cpu_zones("gpu", 9, devices=True)) == 0  # zones with devices are exempt


def test_knuma_bin_packing_leaves_remainders_later_pods_can_use() -> None:
    """A 7-CPU pod on two nodes as full as each other: the kubelet puts it in the first zone that fits, which leaves
    2 CPUs on one node (9 - 7) and 5 on the other (12 - 7). With only its own size seen both strand everything left
    and the first node wins the tie; with mostly 5-CPU pods seen it goes where it leaves 5, which a 5-CPU pod fills."""
    nodes = [twelve_cpu_zones("leaves-two", 9, 12), twelve_cpu_zones("leaves-five", 12, 9)]
    p = sized(7, "new")
    assert schedule_one(default_profile(PACKING), p, nodes).selected == "leaves-two"  # only its own size seen: 7
    sizes = (5,) * 9 + (3,)
    demand = demand_of(*sizes)
    assert schedule_one(default_profile(PACKING, demand=demand), p, nodes).selected == "leaves-five"
    vectorized = VectorizedScheduler(nodes, PACKING, demand=demand_of(*sizes))
    feasible, scores = vectorized.filter_and_score(p)
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert scores.tolist() == [r.score for r in exact.nodes] and feasible.all()
    assert vectorized.schedule(p).node == "leaves-five"


@pytest.mark.parametrize(("common", "rare", "chosen"), [(5, 3, "seven-first"), (3, 5, "fifteen-first")])
def test_the_choice_follows_how_often_each_size_comes(common: int, rare: int, chosen: str) -> None:
    """Two nodes alike but for the order of their zones (7 and 15 free CPUs of 16): the kubelet puts a 7-CPU pod in
    the first zone that fits, so it fills 7 exactly on one node (nothing changes: 7 was going to be filled by a 7)
    and leaves 8 of 15 on the other. With 5-CPU pods common, 15 = 5 + 5 + 5 was likely to end full and 8 a little
    less (a charge); with 3-CPU pods common, 15 often ends with 3 + 3 + 3 + 3 + 3 but also with a 5 among them,
    and 8 = 5 + 3 (the 5 waits for its size) is likelier to end full (a credit)."""
    nodes = [zones_of("fifteen-first", 16, 15, 7), zones_of("seven-first", 16, 7, 15)]
    p = sized(7, "new")
    sizes = (common,) * 9 + (rare,)
    demand = demand_of(*sizes)
    exact = schedule_one(default_profile(PACKING, demand=demand), p, nodes, explain=False)
    assert exact.selected == chosen
    vectorized = VectorizedScheduler(nodes, PACKING, demand=demand_of(*sizes))
    _, scores = vectorized.filter_and_score(p)
    assert scores.tolist() == [r.score for r in exact.nodes]
    assert vectorized.schedule(p).node == chosen


def test_the_plugin_counts_pending_pods_too() -> None:
    """Pods that fit nowhere still say which sizes the zones will be asked for."""
    plugin = NodeResourceTopologyMatch(PACKING)
    full = twelve_cpu_zones("full", 2)
    assert not plugin.filter(CycleState(), sized(10, "waiting"), full).ok
    assert plugin.demand.sizes == {10}


def test_vectorized_rescores_cached_shapes_when_the_sizes_change() -> None:
    nodes = [twelve_cpu_zones("fuller", 9, 0), twelve_cpu_zones("emptier", 12, 12)]
    vectorized = VectorizedScheduler(nodes, PACKING)
    _, before = vectorized.filter_and_score(sized(7, "first"))
    # With only 7s seen, a 7 changes nothing expected anywhere (9 and 2 strand all, 12 and 5 too). Once 3s are seen,
    # 9 (3 + 3 + 3) can end full and 2 cannot: the scores cached for the 7-CPU shape are stale.
    vectorized.demand.observe(sized(3, "a-three"))
    second = sized(7, "second")
    _, after = vectorized.filter_and_score(second)
    exact = schedule_one(default_profile(PACKING, demand=vectorized.demand), second, nodes, explain=False)
    assert after.tolist() == [r.score for r in exact.nodes]
    demand = vectorized.demand
    assert after[0] == before[0] - 3 * (demand.expected_stranded(2) - demand.expected_stranded(9)) // 12
    assert after[0] < before[0]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_vectorized_and_sequential_agree_on_a_fragmenting_workload(seed: int) -> None:
    """Eight 11-12-CPU zones per node, a few pod sizes, both scopes, multi-container pods and a device zone: the
    penalty decides many placements (remainders equal to a size counted as filled among them), and both paths must
    make the same ones."""
    rng = random.Random(seed)
    nodes = []
    for index in range(10):
        zones = {z: {"cpu": (11 if z < 4 else 12) * 1000, "memory": 64 * GI} for z in range(8)}
        if index == 9:
            zones[7]["example.com/gpu"] = 2
        scope = Scope.POD if index % 3 == 0 else Scope.CONTAINER
        topology = NodeTopology.build(f"n{index}", zones, Policy.SINGLE_NUMA_NODE, scope)
        nodes.append(NodeInfo(f"n{index}", allocatable=topology.available_total() | {"pods": 110}, topology=topology))
    sequential, vectorized = SequentialScheduler(nodes, PACKING), VectorizedScheduler(nodes, PACKING)
    penalised = credited = 0
    for index in range(150):
        apps = [guaranteed(f"c{i}", str(rng.choice(SIZES)), "2Gi") for i in range(rng.choice([1, 1, 1, 2]))]
        p = pod(*apps, name=f"p{index}")
        charges = _charges(sequential, p)
        want, got = sequential.schedule(p), vectorized.schedule(p)
        assert (got.node, got.score) == (want.node, want.score), f"pod {index}"
        penalised += any(charge > 0 for charge in charges)
        credited += any(charge < 0 for charge in charges)
    assert penalised > 20 and credited > 20
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    assert [plugin.demand.expected_stranded(size) for size in SIZES] == [0] * len(SIZES)
    assert vectorized.demand.stranded_table(12).tolist() == plugin.demand.stranded_table(12).tolist()


def _charges(sequential: SequentialScheduler, p: Pod) -> list[int]:
    """The pod's stranding penalty on each node it fits (as the sequential scheduler sees them, with the pod's own
    size counted as scheduling it will)."""
    plugin = next(f for f in sequential.profile.filters if isinstance(f, NodeResourceTopologyMatch))
    plugin.demand.observe(p)
    charges = []
    for node in sequential.nodes:
        if node.topology is None:
            continue
        admission = admit(p, node.topology)
        if admission.admitted:
            charges.append(stranding_penalty(node.topology, admission.node, plugin.demand))
    return charges
