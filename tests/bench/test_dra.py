"""The DRA scheduling benchmark on a small cluster: every pod is scheduled through the daemon's cycle, pods with
claims hold distinct devices, and the report section renders its rows."""

from __future__ import annotations

import pytest

from knuma.bench import dra
from knuma.bench.report import dra_section


def test_small_run_schedules_every_pod() -> None:
    with_claims, half, without = dra.run(nodes=4, claim_pods=10, plain_pods=10)
    assert with_claims.scheduled == with_claims.pods == 10
    assert half.scheduled == half.pods == 10  # 16 GPUs of 32 free
    assert without.scheduled == without.pods == 10
    assert with_claims.p50_ms <= with_claims.p99_ms and with_claims.pods_per_second > 0


def test_more_gpus_than_the_cluster_has_leave_pods_unscheduled() -> None:
    with_claims, half, _ = dra.run(nodes=1, claim_pods=10, plain_pods=2)
    assert 4 <= with_claims.scheduled < 10  # 8 GPUs and 8 NICs: at most 8 pods, the 2-GPU ones fewer
    assert 2 <= half.scheduled <= 4 < with_claims.scheduled  # GPUs 0-3 held by claims allocated beforehand


def test_the_report_section_lists_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    real = dra.run
    monkeypatch.setattr(dra, "run", lambda: real(nodes=2, claim_pods=4, plain_pods=4))
    text = dra_section()
    assert "## Device claims: scheduling throughput" in text
    assert "| with claims (1-2 GPUs + NIC) | 2 | 4 / 4 |" in text and "| without claims | 2 | 4 / 4 |" in text
    assert "| with claims, half the GPUs allocated | 2 | 4 / 4 |" in text
