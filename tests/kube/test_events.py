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


async def test_events_are_named_in_time_order_and_kubelet_node_events_are_found_by_describe(tmp_path: Path) -> None:
    """client-go names an Event `<object>.<nanoseconds in hex>`, so `kubectl get events` (by name) lists an object's
    events in the order they happened; the kubelet's node reference has the node's name as its UID, and `kubectl
    describe node` looks events up by that too."""
    with apiserver_in_thread(tmp_path) as api:
        http = async_http(api.kubeconfig)
        try:
            await http.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
            recorder = EventRecorder(http, "kubelet")
            pod = ObjectReference("Pod", "default", "p", "uid-p")
            reasons = [f"Step{i}" for i in range(12)]
            for reason in reasons:
                recorder.record(pod, "Normal", reason, reason)
                await recorder.flush()  # one at a time: posted in order
            recorder.record(ObjectReference("Node", "", "n1", "n1"), "Warning", "KubeletSays", "from the kubelet")
            await recorder.flush()
        finally:
            await http.aclose()
        assert KUBECTL
        kubectl = [KUBECTL, "--kubeconfig", str(api.kubeconfig)]
        listed = subprocess.run(
            [*kubectl, "get", "events", "--field-selector", "involvedObject.name=p", "-o", "name"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        shown = subprocess.run(
            [*kubectl, "get", "events", "--field-selector", "involvedObject.name=p"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()[1:]
        assert len(listed) == 12 and all(name.startswith("event/p.") for name in listed)
        assert [line.split()[2] for line in shown] == reasons
        described = subprocess.run(
            [*kubectl, "describe", "node", "n1"], capture_output=True, text=True, check=True
        ).stdout
        assert "KubeletSays" in described and "from the kubelet" in described
