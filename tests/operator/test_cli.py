"""`knuma operator` as a process: CRDs rendered offline, a clean exit on SIGTERM, clear errors when the API server is
unreachable or the kubeconfig is wrong."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.kube import rest
from knuma.kube.client import http_client
from knuma.kube.errors import NotFound
from knuma.operator.render import LEASE_NAME as LEASE
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

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


def _wait_for(log: Path, proc: subprocess.Popen[bytes], text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{text!r} not logged: {log.read_text()}"
        time.sleep(0.05)


def _lease(api: RunningApiServer) -> dict[str, Any] | None:
    with http_client(str(api.kubeconfig)) as http:
        try:
            return rest.request_sync(http, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/" + LEASE)
        except NotFound:
            return None


@pytest.mark.slow
def test_leader_election_is_on_by_default_in_the_kubeconfig_namespace(tmp_path: Path) -> None:
    """Upstream's manager elects a leader unless told not to; outside a pod the Lease goes to the kubeconfig
    context's namespace (here `default`), and a graceful stop releases it."""
    log = tmp_path / "operator.log"
    with apiserver_in_thread(tmp_path / "api") as api, log.open("w") as err:
        proc = subprocess.Popen(
            [KNUMA, "operator", "--kubeconfig", str(api.kubeconfig), "--metrics-port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={k: v for k, v in os.environ.items() if k != "POD_NAMESPACE"},
        )
        try:
            _wait_for(log, proc, "operator started")
            lease = _lease(api)
            assert lease is not None and lease["spec"]["holderIdentity"], lease
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
        released = _lease(api)
        assert released is not None and released["spec"]["holderIdentity"] == "", released
        assert f"acquired lease default/{LEASE}" in log.read_text()

        with log.open("w") as err:  # --no-leader-elect: no Lease is needed (nor written)
            with http_client(str(api.kubeconfig)) as http:
                rest.request_sync(http, "DELETE", "/apis/coordination.k8s.io/v1/namespaces/default/leases/" + LEASE)
            proc = subprocess.Popen(
                [KNUMA, "operator", "--kubeconfig", str(api.kubeconfig), "--metrics-port", "0", "--no-leader-elect"],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            try:
                _wait_for(log, proc, "operator started")
                assert _lease(api) is None
            finally:
                proc.terminate()
                proc.wait(15)


@pytest.mark.slow
def test_a_missing_lease_namespace_is_a_clear_error(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path / "api") as api:
        args = ["--kubeconfig", str(api.kubeconfig), "--metrics-port", "0", "--leader-elect-namespace", "nowhere"]
        done = subprocess.run(
            [KNUMA, "operator", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert "namespace nowhere does not exist" in done.stderr and "--leader-elect-namespace" in done.stderr


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
