"""`knuma e2e` against `knuma up`, as a user runs it against their cluster: first with `--deploy missing` on a bare
cluster (the suite deploys the stack, runs the selected tests, removes the stack), then the whole suite against a
stack deployed with `knuma deploy --wait`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local.up.test_up import Up

pytestmark = pytest.mark.slow


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    home = tmp_path / "home"
    home.mkdir()
    # exporter processes, so that the exporter-restart test restarts a real one
    running = Up(tmp_path / "cluster", home, "--nodes", "2", "--shape", "small", "--exporters", "process")
    try:
        yield running
    finally:
        running.kill()


def knuma(up: Up, *args: str, timeout: float = 420.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "knuma", *args, "--kubeconfig", str(up.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=up.data_dir.parent,  # not the repository: the suite must not depend on its pytest configuration
    )


@pytest.mark.timeout(1200)  # its `knuma` runs time out on their own first (420, 180 and 420 s), with their output
def test_e2e_deploys_when_missing_then_runs_whole_against_a_deployed_stack(up: Up) -> None:
    selected = knuma(up, "e2e", "--deploy", "missing", "-k", "publishes_a_fresh or fits", "-v")
    assert selected.returncode == 0, selected.stdout[-3000:] + selected.stderr[-2000:]
    assert "2 passed, 4 deselected" in selected.stdout
    assert "test_every_node_publishes_a_fresh_nrt_matching_its_kubelet PASSED" in selected.stdout
    # the stack it deployed is gone again, and so is everything the tests created
    assert up.get("deployments", "-A")["items"] == [] and up.get("daemonsets", "-A")["items"] == []
    assert not [n for n in up.get("namespaces")["items"] if n["metadata"]["name"].startswith("knuma-e2e-")]

    deployed = knuma(up, "deploy", "--wait", "-T", "90s", timeout=180)
    assert deployed.returncode == 0, deployed.stderr
    before = len(up.stderr.read_text())
    whole = knuma(up, "e2e")
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-2000:]
    assert "6 passed" in whole.stdout and "skipped" not in whole.stdout
    assert "warning" not in whole.stdout  # pytest's about modules knuma imported before it (anyio), every run
    # the restart tests deleted the deployed scheduler's and one exporter's (simulated) pods: knuma up restarted the
    # real processes standing for them (its scheduler, which schedules that profile, and that node's exporter), and
    # what the tests did meanwhile was handled by the new ones
    log = up.stderr.read_text()[before:]
    assert "deleted: restarting knuma up's scheduler process" in log, log[-3000:]
    assert "scheduler started again (restart" in log, log[-3000:]
    assert "deleted: restarting the exporter process of worker-000" in log, log[-3000:]
    assert "exporter worker-000 started again (restart" in log, log[-3000:]
    assert "exited with" not in log, log[-3000:]  # restarts asked for, no failures: they never stop the cluster
    assert not [p for p in up.get("pods", "-A")["items"] if p["metadata"]["namespace"].startswith("knuma-e2e-")]


def test_e2e_says_when_the_stack_is_not_usable(up: Up) -> None:
    result = knuma(up, "e2e", "-k", "nrt", timeout=120)
    assert result.returncode == 3
    assert "the stack is not usable" in result.stdout + result.stderr
    assert "pass --deploy missing" in result.stdout + result.stderr
