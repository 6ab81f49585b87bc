"""`knuma apiserver` as a real process: kubeconfig output, auth, insecure mode, clean shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from knuma.testing.apiserver import apiserver_process
from tests.local.apiserver.conftest import Http

pytestmark = pytest.mark.slow


def test_prints_kubeconfig_on_stdout_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "knuma", "apiserver", "--port", "0", "--bind", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("preferences:"):
                break
        config = yaml.safe_load("".join(lines))
        assert config["kind"] == "Config"
        assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
        assert config["clusters"][0]["cluster"]["certificate-authority-data"]
        assert len(config["users"][0]["user"]["token"]) > 20
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=5)
            raise
    assert proc.returncode == 0
    assert "listening on https://127.0.0.1:" in err


def test_subprocess_fixture_with_kubeconfig_out(tmp_path: Path) -> None:
    with apiserver_process(tmp_path) as api:
        assert api.kubeconfig.stat().st_mode & 0o777 == 0o600
        http = Http(api)
        assert http.get("/api/v1/namespaces").status == 200
        assert http.get("/api/v1/namespaces", auth=False).status == 401
        assert api.process is not None
    assert api.process.returncode == 0


def test_insecure_mode_serves_plain_http_without_token(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, insecure=True) as api:
        assert api.url.startswith("http://")
        assert api.token is None
        assert Http(api).get("/api/v1/namespaces/default", auth=False).json["metadata"]["name"] == "default"


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, insecure=True) as api:
        port = api.url.rsplit(":", 1)[1]
        proc = subprocess.run(
            [sys.executable, "-m", "knuma", "apiserver", "--port", port, "--insecure"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert proc.stdout == ""
