"""The loopback benchmark runs and reports sane rates (the figures themselves are in the README)."""

from __future__ import annotations

import pytest

from knuma.bench.apiserver import run, run_in_fresh_process


@pytest.mark.slow
@pytest.mark.parametrize("durable", [False, True])
def test_bench_reports_rates(durable: bool) -> None:
    result = run(durable=durable, objects=60, watchers=2, concurrency=4)
    assert result.mode == ("durable" if durable else "memory")
    assert result.creates_per_s > 0 and result.updates_per_s > 0
    assert result.watch_events_per_s > 0
    assert "creates/s" in result.line()


@pytest.mark.slow
def test_make_bench_measures_in_a_process_of_its_own() -> None:
    results = run_in_fresh_process(objects=40)
    assert [r.mode for r in results] == ["memory", "durable"]
    assert all(r.objects == 40 and r.creates_per_s > 0 and r.updates_per_s > 0 for r in results)
