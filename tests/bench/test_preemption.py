from knuma.bench import preemption as bench


def test_preemption_benchmark_finds_victims_only_where_an_eviction_helps() -> None:
    results = {r.case: r for r in bench.run(nodes=30, pods_per_node=4, attempts=2)}
    assert [r.victims for r in results.values()] == [0, 0, 1]
    assert all(r.decide_ms > 0 and r.post_filter_ms > 0 for r in results.values())
    assert all(r.pods == 120 for r in results.values())
