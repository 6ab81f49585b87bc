"""The exporter runs on every node, so what it imports is memory on every node (target < 60 MB resident): the
aiohttp client the scheduler uses for its per-pod writes must not come along with `knuma.kube`."""

from __future__ import annotations

import subprocess
import sys


def test_the_exporter_daemon_does_not_import_the_schedulers_http_client() -> None:
    probe = (
        "import sys, knuma.cli.exporter, knuma.exporter.daemon, knuma.exporter.publisher, knuma.kube.rest;"
        "print(sorted(m for m in ('aiohttp', 'numpy', 'matplotlib') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
