"""The loopback benchmark runs and reports sane rates (the figures themselves are in the README)."""

from __future__ import annotations

import pytest

from knuma.bench.apiserver import run


@pytest.mark.slow
@pytest.mark.parametrize("durable", [False, True])
def test_bench_reports_rates(durable: bool) -> None:
    result = run(durable=durable, objects=60, watchers=2, concurrency=4)
    assert result.mode == ("durable" if durable else "memory")
    assert result.creates_per_s > 0 and result.updates_per_s > 0
    assert result.watch_events_per_s > 0
    assert "creates/s" in result.line()
