from knuma.bench import simulate as bench
from knuma.sim.schedulers import PRODUCT


def test_the_scaled_scenario_keeps_defaults_mix() -> None:
    scenario = bench.scenario(nodes=10, pods=100, rate=5)
    assert scenario.cluster.node_count == 10
    assert [p.count for p in scenario.cluster.pools] == [5, 3, 2]
    assert scenario.workload.pods == 100 and scenario.workload.arrival.rate == 5
    assert not scenario.optimal_supported


def test_every_compared_scheduler_runs_and_is_timed() -> None:
    measured = bench.run(nodes=12, pods=120, rate=10, jobs=2)
    assert measured.jobs == 2 and measured.cpus >= 1
    results = measured.results
    assert [r.scheduler for r in results] == list(PRODUCT)
    for r in results:
        assert r.seconds > 0 and r.cpu_seconds > 0
        assert 0 < r.placed <= 120
    assert measured.seconds > 0
    assert measured.cpu_seconds == sum(r.cpu_seconds for r in results)
    assert next(r for r in results if r.scheduler == "knuma").topology_affinity_errors == 0
