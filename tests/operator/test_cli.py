"""`knuma operator` as a process: CRDs rendered offline, a clean exit on SIGTERM, clear errors when the API server is
unreachable or the kubeconfig is wrong."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from knuma.testing.apiserver import apiserver_in_thread

KNUMA = str(Path(sys.executable).with_name("knuma"))


def test_render_crds_prints_both_crds() -> None:
    done = subprocess.run([KNUMA, "operator", "--render-crds"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    docs = list(yaml.safe_load_all(done.stdout))
    assert [d["spec"]["names"]["kind"] for d in docs] == ["NUMAResourcesOperator", "NUMAResourcesScheduler"]


def test_bad_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [KNUMA, "operator", "--kubeconfig", str(tmp_path / "missing")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "error:" in done.stderr and "missing" in done.stderr


def test_unreachable_api_server_is_reported(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    done = subprocess.run(
        [KNUMA, "operator", "--kubeconfig", str(kubeconfig), "--metrics-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert (
        "error: cannot reach the API server at http://127.0.0.1:9" in done.stderr
        and "check --kubeconfig" in done.stderr
    )


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_operator_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    log = tmp_path / "operator.log"
    with apiserver_in_thread(tmp_path / "api") as api, log.open("w") as err:
        proc = subprocess.Popen(
            [KNUMA, "operator", "--kubeconfig", str(api.kubeconfig), "--metrics-port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 20
            # "operator started" is logged once the CRDs are installed and the informers run.
            while "operator started" not in log.read_text():
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the operator did not start"
                time.sleep(0.05)
            proc.send_signal(sig)
            proc.wait(15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    assert proc.returncode == 0, log.read_text()
    assert "operator stopped" in log.read_text()
