"""The device benchmark on a small cluster: knuma and the reference agree on which nodes fit (without NUMA)."""

from __future__ import annotations

from knuma.bench.devices import run


def test_small_run_agrees_with_the_reference() -> None:
    rows = run(nodes=6, gpus=(1, 8), reference_nodes=6, reference_limit=5_000_000)
    by = {(r.case, r.gpus, r.allocator): r for r in rows}
    for case in ("feasible", "infeasible"):
        for k in (1, 8):
            assert by[(case, k, "knuma")].fit == by[(case, k, "first-fit DFS reference")].fit
    assert by[("infeasible", 8, "knuma")].fit == 0
    assert by[("feasible", 1, "knuma")].fit == 6
    assert by[("feasible", 8, "knuma + NUMA (single-numa-node)")].fit == 0  # 8 pairs never sit on one NUMA node
