"""Every command that talks to an API server names the URL it could not reach, and why, when nothing answers there
(a real loopback port that refuses connections): one `error:` line for the tools, a log line per retry for the
daemons, which keep trying as kube-scheduler does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from knuma.podresources import Allocatable
from knuma.podresources.server import PodResourcesServer
from knuma.testing.deadserver import DeadApiServer, dead_api_server, stderr_until

from ..exporter.sysfs_trees import NodeSpec, write_tree

KNUMA = str(Path(sys.executable).parent / "knuma")


@pytest.fixture
def dead(tmp_path: Path) -> Iterator[DeadApiServer]:
    with dead_api_server(tmp_path) as server:
        yield server


def knuma(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KNUMA, *args], capture_output=True, text=True, timeout=120, check=False)


def refused(dead: DeadApiServer) -> str:
    return f"cannot reach the API server at {dead.url}"


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["check"], 3),
        (["gather", "{tmp}/bundle"], 3),
        (["e2e"], 3),
        (["deploy"], 1),
        (["remove"], 1),
        (["detect"], 1),
        (["validate"], 3),
        (["operator", "--metrics-port", "0"], 1),
    ],
)
def test_a_tool_says_which_server_refused_in_one_line(
    dead: DeadApiServer, tmp_path: Path, command: list[str], status: int
) -> None:
    done = knuma(*(part.format(tmp=tmp_path) for part in command), "--kubeconfig", str(dead.kubeconfig))
    assert done.returncode == status, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert refused(dead) in errors[0] and "connection refused" in errors[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_the_scheduler_logs_the_server_it_cannot_reach(dead: DeadApiServer) -> None:
    args = [
        "scheduler",
        "--kubeconfig",
        str(dead.kubeconfig),
        "--no-leader-elect",
        "--metrics-port",
        "0",
        "--secure-port",
        "0",
    ]
    proc = subprocess.Popen([KNUMA, *args], stderr=subprocess.PIPE, text=True)
    try:
        logged = stderr_until(proc, refused(dead))
    finally:
        proc.terminate()
        proc.wait(30)
    line = next((line for line in logged.splitlines() if refused(dead) in line), None)
    assert line is not None, logged
    assert "(GET /api" in line and "connection refused; retrying in" in line, line


def test_the_exporter_logs_the_server_it_cannot_reach(dead: DeadApiServer, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1])})
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1))) as kubelet:
        args = ["exporter", "--node-name", "dead-0", "--sysfs-root", str(root), "--metrics-port", "0"]
        args += ["--podresources-socket", kubelet.address, "--kubeconfig", str(dead.kubeconfig)]
        proc = subprocess.Popen([KNUMA, *args], stderr=subprocess.PIPE, text=True)
        try:
            logged = stderr_until(proc, "publish failed", "cannot be watched")
        finally:
            proc.terminate()
            proc.wait(30)
    publish = next((line for line in logged.splitlines() if "publish failed" in line), None)
    assert publish is not None, logged
    assert f"cannot publish dead-0: {refused(dead)}" in publish and "connection refused" in publish, publish
    watch = next((line for line in logged.splitlines() if "cannot be watched" in line), None)
    assert watch is not None and refused(dead) in watch, logged
