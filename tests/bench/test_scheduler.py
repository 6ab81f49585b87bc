import pytest

from knuma.bench import scheduler as bench

pytestmark = pytest.mark.slow


def test_end_to_end_benchmark_binds_every_pod() -> None:
    result = bench.run(nodes=20, pods=40, zones=2)
    assert result.scheduled == 40
    assert result.pods_per_second > 0
    assert result.attempt_p50_ms <= result.attempt_p99_ms
    assert result.scheduler_cpu_seconds > 0 and result.apiserver_cpu_seconds > 0  # both processes worked
