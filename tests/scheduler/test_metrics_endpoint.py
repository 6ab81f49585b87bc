"""Issue 18 item 11: the scheduler's /metrics (plain HTTP, no authentication) listens on loopback unless told
otherwise, and its log says who can reach it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from knuma.testing.apiserver import apiserver_in_thread
from tests.local.apiserver.test_cli import _listening

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_scheduler(kubeconfig: Path, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "knuma", "scheduler", "--kubeconfig", str(kubeconfig), "--no-leader-elect"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*args, "--secure-port", "0", "--metrics-port", str(port), *extra], stdout=out, stderr=out
        )


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        content = log.read_text()
        if text in content:
            return content
        assert proc.poll() is None, content
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {log.read_text()}")


def test_metrics_listen_on_loopback_by_default_and_say_so(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path / "api") as api:
        port = _free_port()
        proc = _run_scheduler(api.kubeconfig, port, tmp_path / "default.log")
        try:
            _wait_for(tmp_path / "default.log", f"without authentication on 127.0.0.1:{port} (loopback only)", proc)
            assert _listening(proc.pid, port) == {"0100007F"}
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
                assert reply.status == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
        port = _free_port()
        proc = _run_scheduler(api.kubeconfig, port, tmp_path / "all.log", "--metrics-address", "0.0.0.0")
        try:
            _wait_for(tmp_path / "all.log", f"on all interfaces (0.0.0.0:{port}): anyone who can reach", proc)
            assert _listening(proc.pid, port) == {"00000000"}
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
