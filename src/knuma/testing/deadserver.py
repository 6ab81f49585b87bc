"""An API server URL where nothing answers, for tests of what a user sees when the cluster is down.

`dead_api_server(directory)` binds a loopback port without listening on it (so a connection is refused at once and no
other process can take the port meanwhile) and writes a kubeconfig pointing at `https://127.0.0.1:PORT`::

    with dead_api_server(tmp_path) as dead:
        done = subprocess.run(["knuma", "check", "--kubeconfig", str(dead.kubeconfig)], ...)
        assert f"cannot reach the API server at {dead.url}" in done.stderr

`stderr_until(proc, *texts)` reads a daemon's stderr until each text has appeared in a line (the daemons keep
retrying, so a test stops them once the lines it wants are there).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["DeadApiServer", "dead_api_server", "stderr_until"]


@dataclass(frozen=True)
class DeadApiServer:
    url: str
    """`https://127.0.0.1:PORT`: a port bound by the test and not listening, so connections are refused."""
    kubeconfig: Path


@contextlib.contextmanager
def dead_api_server(directory: Path) -> Iterator[DeadApiServer]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: the kernel refuses connections to it
        url = f"https://127.0.0.1:{sock.getsockname()[1]}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "dead", "cluster": {"server": url, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "dead", "user": {"token": "unused"}}],
            "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "dead"}}],
            "current-context": "dead",
        }
        kubeconfig = directory / "dead-kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        yield DeadApiServer(url, kubeconfig)


def stderr_until(proc: subprocess.Popen[str], *texts: str, timeout: float = 60.0) -> str:
    """The process's stderr up to the line where the last of `texts` appeared; what was read so far when the process
    ends or `timeout` passes first. The caller stops the process."""
    assert proc.stderr is not None
    stream = proc.stderr
    lines: list[str] = []
    found = threading.Event()

    missing = set(texts)

    def read() -> None:
        for line in stream:
            lines.append(line)
            missing.difference_update({text for text in missing if text in line})
            if not missing:
                break
        found.set()  # every text seen, or the end of the stream

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.1) and time.monotonic() < deadline:
        pass
    return "".join(lines)
