"""Events through `knuma.kube.events.EventRecorder` against a real `knuma apiserver`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from knuma.kube.client import async_http
from knuma.kube.events import EventRecorder, ObjectReference
from knuma.testing.apiserver import apiserver_in_thread

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent))


async def test_an_event_about_a_node_goes_to_the_default_namespace_and_kubectl_describe_shows_it(
    tmp_path: Path,
) -> None:
    """A cluster-scoped object has no namespace: its Events go to `default` (client-go's `makeEvent`), with no
    namespace in `involvedObject`, where `kubectl describe node` finds them."""
    with apiserver_in_thread(tmp_path) as api:
        http = async_http(api.kubeconfig)
        try:
            created = await http.post(
                "/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
            )
            uid = created.json()["metadata"]["uid"]
            recorder = EventRecorder(http, "node-controller")
            recorder.record(
                ObjectReference("Node", "", "n1", uid), "Normal", "NodeNotReady", "Node n1 status is now: NodeNotReady"
            )
            await recorder.flush()
            events = (await http.get("/api/v1/events")).json()["items"]
            assert [(e["metadata"]["namespace"], e["reason"]) for e in events] == [("default", "NodeNotReady")]
            assert "namespace" not in events[0]["involvedObject"]
        finally:
            await http.aclose()
        assert KUBECTL
        described = subprocess.run(
            [KUBECTL, "--kubeconfig", str(api.kubeconfig), "describe", "node", "n1"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "NodeNotReady  " in described and "Node n1 status is now: NodeNotReady" in described
