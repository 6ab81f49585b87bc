"""The README's first exporter example, as a user runs it: `examples/exporter/fake-kubelet.py` (a real PodResources
gRPC server in a process of its own), the finished Job pod of `examples/exporter/finished-job.yaml` marked
`Succeeded` in a `knuma apiserver`, then `knuma exporter --once --dry-run --exclude-terminal-pods`; its output is the
README's, byte for byte, and without `--exclude-terminal-pods` the finished pod's CPUs and memory count."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from knuma.cli.main import app
from knuma.kube.client import http_client
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "exporter"
runner = CliRunner()


@pytest.fixture
def fake_kubelet(tmp_path: Path) -> Iterator[Path]:
    socket = tmp_path / "kubelet.sock"
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "fake-kubelet.py"), str(socket)], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the fake kubelet did not start"
            time.sleep(0.05)
        yield socket
    finally:
        process.terminate()
        process.wait(10)


def readme_output() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("--kubelet-config-file examples/exporter/kubelet-config.yaml --exclude-terminal-pods")
    block = text[start : text.index("```", start)]
    return block.split("\n", 1)[1]


def test_the_readme_exporter_example_runs_as_written(xeon_sysfs: Path, fake_kubelet: Path) -> None:
    with apiserver_in_thread() as api:
        run_example(api, xeon_sysfs, fake_kubelet)


def run_example(api: RunningApiServer, xeon_sysfs: Path, fake_kubelet: Path) -> None:
    http = http_client(api.kubeconfig)
    for obj in yaml.safe_load_all((EXAMPLES / "finished-job.yaml").read_text()):
        path = "/api/v1/namespaces" if obj["kind"] == "Namespace" else "/api/v1/namespaces/batch/pods"
        assert http.post(path, json=obj).status_code == 201
    succeeded = http.patch(
        "/api/v1/namespaces/batch/pods/report-28930/status",
        json={"status": {"phase": "Succeeded"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert succeeded.status_code == 200
    base = [
        *("exporter", "--once", "--dry-run", "--sysfs-root", str(xeon_sysfs), "--node-name", "worker-0"),
        *("--podresources-socket", f"unix://{fake_kubelet}"),
        *("--kubelet-config-file", str(EXAMPLES / "kubelet-config.yaml")),
    ]
    result = runner.invoke(app, [*base, "--exclude-terminal-pods", "--kubeconfig", str(api.kubeconfig)])
    assert result.exit_code == 0, result.output
    assert result.stdout == readme_output()
    without = runner.invoke(app, base)
    assert without.exit_code == 0, without.output
    zone0 = yaml.safe_load(without.stdout)["zones"][0]["resources"]
    assert {r["name"]: r["available"] for r in zone0}["cpu"] == "3"  # the finished pod's 4 CPUs still count
