"""KnumaBinPacking: the share of the node's NUMA CPUs in use after the kubelet model's placement."""

from __future__ import annotations

from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from tests.scheduler.builders import container, guaranteed, node_info, nrt, pod

PACKING = ScoringStrategy(StrategyType.KNUMA_BIN_PACKING)


def two_zones(name: str, free0: str, free1: str, policy: str = "single-numa-node") -> NodeInfo:
    return node_info(
        nrt(name, {0: {"cpu": ("8", free0), "memory": "8Gi"}, 1: {"cpu": ("8", free1), "memory": "8Gi"}}, policy)
    )


def test_score_is_the_share_of_numa_cpus_in_use_after_the_pod() -> None:
    plugin = NodeResourceTopologyMatch(PACKING)
    p = pod(guaranteed("app", "2"))
    # 16 CPUs, 6 free before, 4 after: 12 of 16 in use
    assert plugin.score(CycleState(), p, two_zones("a", "2", "4")) == 75
    # an empty node: 2 of 16
    assert plugin.score(CycleState(), p, two_zones("b", "8", "8")) == 12
    # does not fit in one zone: the kubelet would reject it
    assert plugin.score(CycleState(), pod(guaranteed("app", "6")), two_zones("c", "4", "4")) == 0
    # pods without exclusive CPUs score 100 everywhere, as with upstream's strategies
    assert plugin.score(CycleState(), pod(container("be")), two_zones("d", "8", "8")) == 100


def test_guaranteed_pods_go_to_the_fullest_node_that_fits_and_knuma_uses_it_by_default() -> None:
    nodes = [two_zones("empty", "8", "8"), two_zones("half", "4", "8"), two_zones("full", "1", "1")]
    p = pod(guaranteed("app", "4"))
    assert schedule_one(default_profile(), p, nodes).selected == "half"
    assert schedule_one(default_profile(ScoringStrategy(StrategyType.LEAST_ALLOCATED)), p, nodes).selected == "empty"


def test_restricted_nodes_are_scored_from_the_predicted_placement_too() -> None:
    ones = CPUDemand()
    ones.observe(pod(guaranteed("app", "1", "1Gi"), name="one"))  # 1-CPU pods fill any remainder: no stranding term
    plugin = NodeResourceTopologyMatch(PACKING, demand=ones)
    wide = pod(guaranteed("app", "10", "10Gi"))  # spans both zones under restricted: 2 + 10 in use of 16
    node = two_zones("r", "6", "8", policy="restricted")
    assert plugin.score(CycleState(), wide, node) == 75
    # With only 10-CPU pods seen, the 6 and 8 free CPUs were stranded for pods that fit one zone; spanning both, the
    # wide pod uses them: credited up to the top score
    assert NodeResourceTopologyMatch(PACKING).score(CycleState(), wide, node) == 100
