"""The core micro-benchmarks measure what they say: wide restricted nodes judge both pods, from fresh nodes."""

from __future__ import annotations

from knuma.bench import core


def test_wide_nodes_fit_the_narrow_pod_and_refuse_the_pod_without_a_preferred_mask() -> None:
    narrow = core.measure_wide(10, 4, nodes=3, rounds=2)
    wide = core.measure_wide(10, 20, nodes=3, rounds=2)
    assert (narrow.zones, narrow.nodes, narrow.feasible) == (10, 3, 3)
    assert wide.feasible == 0  # CPUs prefer 3 zones, memory 1: TopologyAffinityError under restricted
    assert narrow.milliseconds_per_node > 0 and wide.milliseconds_per_node > 0
