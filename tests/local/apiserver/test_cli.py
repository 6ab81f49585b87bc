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


def _listening(pid: int, port: int) -> set[str]:
    """The local addresses `pid`'s process listens on at `port` (from /proc/net/tcp and tcp6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = str(fd.readlink()) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            address, state, inode = fields[1], fields[3], fields[9]
            host, _, hex_port = address.partition(":")
            if state == "0A" and inode in inodes and int(hex_port, 16) == port:
                found.add(host)
    return found


def test_insecure_on_loopback_says_so_and_all_interfaces_are_reported(tmp_path: Path) -> None:
    """Issue 18 item 11: `--insecure` on loopback says what it is; `--bind 0.0.0.0` reports what it listens on."""
    with apiserver_process(tmp_path / "a", insecure=True) as api:
        assert api.process is not None
    log = (tmp_path / "a" / "apiserver.log").read_text()
    assert "note: --insecure: plain HTTP without authentication (loopback only)" in log
    args = ["--bind", "0.0.0.0"]
    with apiserver_process(tmp_path / "b", extra_args=args) as api:
        assert api.process is not None
        port = int(api.url.rsplit(":", 1)[1])
        assert _listening(api.process.pid, port) == {"00000000"}
    log = (tmp_path / "b" / "apiserver.log").read_text()
    assert f"listening on all interfaces (0.0.0.0 port {port}); clients here use https://127.0.0.1:{port}" in log


def test_an_empty_or_spaced_token_is_an_error_before_any_kubeconfig_is_written(tmp_path: Path) -> None:
    """`--token ""` wrote a kubeconfig without credentials (`user: {}`) that every request answered 401 with."""
    for token, what in (("", "is empty"), ("two words", "has spaces or control characters")):
        out = tmp_path / f"kubeconfig-{len(token)}"
        proc = subprocess.run(
            [sys.executable, "-m", "knuma", "apiserver", "--token", token, "--kubeconfig-out", str(out)],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert proc.returncode == 2
        assert proc.stderr == (
            f"error: --token (or $KNUMA_APISERVER_TOKEN) {what}: give a bearer token of printable characters without "
            "spaces, or omit it to have one generated\n"
        )
        assert not out.exists()
