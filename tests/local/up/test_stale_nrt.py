"""End-to-end: stale NRT on purpose (`knuma up --nrt-period 30s`: exporters publish only every 30 s, as RTE's
periodic mode) with churn, the real `knuma scheduler` against its topology-unaware profile.

Four `small` nodes (2 zones x 8 CPUs) and `examples/up/stale-nrt.yaml`: two Deployments of 5-CPU Guaranteed pods
that complete after 15 s (`sim.knuma.io/lifetime`) and are replaced by their ReplicaSet, each pinned to two of the
nodes: one scheduled by `topology-aware-scheduler`, one by `default-scheduler`. A node holds two such pods
NUMA-aligned (one per zone) but has room for three at node level. Between two NRT publications the aware profile sees
NRT up to 30 s old: its cache must still place every pod where the kubelet admits it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knuma.testing.polling import eventually
from tests.local.up.test_up import EXAMPLES, Up

pytestmark = pytest.mark.slow

RUN_SECONDS = 50.0


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    home = tmp_path / "home"
    home.mkdir()
    running = Up(tmp_path / "cluster", home, "--nodes", "4", "--shape", "small", "--nrt-period", "30s")
    yield running
    running.kill()


def test_stale_nrt_with_churn_no_topology_affinity_error_for_knuma(up: Up) -> None:
    assert "NRT every 30s only" in up.stdout.read_text()
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 4, timeout=60)
    up.kubectl("apply", "-f", str(EXAMPLES / "stale-nrt.yaml"))
    rejected: dict[str, set[str]] = {"aware": set(), "unaware": set()}
    started: dict[str, set[str]] = {"aware": set(), "unaware": set()}
    deadline = time.monotonic() + RUN_SECONDS
    while time.monotonic() < deadline:
        pods: list[dict[str, Any]] = up.get("pods")["items"]
        for pod in pods:
            app = pod["metadata"].get("labels", {}).get("app")
            if app not in rejected:
                continue
            status = pod.get("status") or {}
            if status.get("reason") == "TopologyAffinityError":
                rejected[app].add(pod["metadata"]["name"])
            elif status.get("startTime") and status.get("phase") in ("Running", "Succeeded"):
                started[app].add(pod["metadata"]["name"])
        time.sleep(1.0)
    assert not rejected["aware"], f"topology-aware-scheduler: TopologyAffinityError for {sorted(rejected['aware'])}"
    assert rejected["unaware"], "default-scheduler should have produced TopologyAffinityErrors on these nodes"
    # 4 zones, 15 s lifetimes, 50 s (an NRT publication in the middle): the aware profile keeps the zones busy, each
    # pod replaced as its predecessor completes, despite NRT up to 30 s old.
    assert len(started["aware"]) >= 9, f"only {len(started['aware'])} aware pods ran"
    assert up.stop() == 0


def test_bad_nrt_period_exits_2() -> None:
    from typer.testing import CliRunner

    from knuma.cli.main import app

    result = CliRunner().invoke(app, ["up", "--nrt-period", "30"])
    assert result.exit_code == 2 and "--nrt-period: invalid duration '30'" in result.output
    result = CliRunner().invoke(app, ["up", "--nrt-period", "200ms"])
    assert result.exit_code == 2 and "--nrt-period must be at least 1s" in result.output
