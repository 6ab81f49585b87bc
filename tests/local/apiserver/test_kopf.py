"""kopf runs an operator against the server: scanning, list+watch, finalizers, status patches, events."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from knuma.testing.apiserver import RunningApiServer
from tests.local.apiserver.conftest import Http
from tests.local.apiserver.test_crd import CRDS, widget, widget_crd

pytestmark = pytest.mark.slow

OPERATOR = """
import kopf

@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 10

@kopf.on.create("example.knuma.io", "v1", "widgets")
def created(spec, patch, body, **_):
    kopf.info(body, reason="Reconciled", message="widget sized")
    patch.status["observedSize"] = spec["size"]
    return {"handled": True}

@kopf.on.update("example.knuma.io", "v1", "widgets", field="spec.size")
def resized(new, patch, **_):
    patch.status["observedSize"] = new

@kopf.on.delete("example.knuma.io", "v1", "widgets")
def deleted(name, **_):
    open(DELETED_MARK, "w").write(name)
"""


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (KeyError, TypeError):
            pass
        assert time.monotonic() < deadline, "operator did not converge in time"
        time.sleep(0.1)


def test_kopf_operator_reconciles(
    api: RunningApiServer, http_client: Http, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kopf.testing import KopfRunner

    http_client.post(CRDS, widget_crd())
    mark = tmp_path / "deleted"
    operator = tmp_path / "operator.py"
    operator.write_text(f"DELETED_MARK = {str(mark)!r}\n" + OPERATOR)
    monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = "/apis/example.knuma.io/v1/namespaces/default/widgets"
    with KopfRunner(["run", "--standalone", "-A", "--verbose", str(operator)], timeout=60) as runner:
        http_client.post(path, widget("w", size=2))
        wait_for(lambda: http_client.get(f"{path}/w").json["status"]["observedSize"] == 2)
        obj = http_client.get(f"{path}/w").json
        assert obj["status"]["created"] == {"handled": True}
        assert "kopf.zalando.org/KopfFinalizerMarker" in obj["metadata"]["finalizers"]
        http_client.patch(f"{path}/w", {"spec": {"size": 5}}, "application/merge-patch+json")
        wait_for(lambda: http_client.get(f"{path}/w").json["status"]["observedSize"] == 5)
        http_client.delete(f"{path}/w")
        wait_for(lambda: http_client.get(f"{path}/w").status == 404)
        assert mark.read_text() == "w"
        wait_for(
            lambda: any(
                e["involvedObject"]["name"] == "w" and e["reason"] == "Reconciled"
                for e in http_client.get("/api/v1/namespaces/default/events").json["items"]
            )
        )
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None
    assert os.environ.get("KUBECONFIG") == str(api.kubeconfig)
