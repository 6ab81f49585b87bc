"""`knuma gather DIR` against a real `knuma apiserver` holding a small stack: the archive has the NRT objects, each
readable node's configz, the custom resources, the exporter pod, the FailedScheduling events and the check report;
what the cluster refuses (a node's configz, logs) is listed in errors.txt instead of failing; an unreachable cluster
exits 3."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import yaml

from knuma.api.crd import nrt_crd
from knuma.deploy.cluster import connect
from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.operator.manager import install_crds
from knuma.testing.apiserver import apiserver_in_thread
from tests.deploy.check.test_cli import kubeconfig_for

CONFIGZ = {"kind": "KubeletConfiguration", "topologyManagerPolicy": "single-numa-node", "cpuManagerPolicy": "static"}


def configz(request: ProxyRequest) -> ProxyResponse:
    return ProxyResponse(200, json.dumps({"kubeletconfig": CONFIGZ}).encode())


def forbidden(request: ProxyRequest) -> ProxyResponse:
    return ProxyResponse(403, json.dumps({"kind": "Status", "code": 403, "message": "nodes/proxy forbidden"}).encode())


def post(http: Any, path: str, obj: dict[str, Any]) -> None:
    reply = http.post(path, json=obj)
    assert reply.status_code == 201, reply.text


def test_gather_collects_a_bundle_and_lists_what_was_refused(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path / "api") as api, connect(str(api.kubeconfig)) as session:
        http = session.http
        post(http, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", nrt_crd())
        install_crds(session)
        for name in ("w1", "w2"):
            post(http, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        api.register_node_proxy("w1", configz)
        api.register_node_proxy("w2", forbidden)
        nrt = {
            "apiVersion": "topology.node.k8s.io/v1alpha2",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "w1"},
            "zones": [],
            "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
        }
        post(http, "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies", nrt)
        nro = {
            "apiVersion": "nodetopology.openshift.io/v1",
            "kind": "NUMAResourcesOperator",
            "metadata": {"name": "numaresourcesoperator"},
            "spec": {"nodeGroups": [{"poolName": "worker"}]},
        }
        post(http, "/apis/nodetopology.openshift.io/v1/numaresourcesoperators", nro)
        exporter = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "exporter-w1", "labels": {"app.kubernetes.io/name": "knuma-exporter"}},
            "spec": {"nodeName": "w1", "containers": [{"name": "knuma-exporter", "image": "knuma"}]},
        }
        post(http, "/api/v1/namespaces/default/pods", exporter)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "stuck.1"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "stuck"},
            "reason": "FailedScheduling",
            "message": "0/2 nodes are available: 2 cannot align container.",
            "type": "Warning",
        }
        post(http, "/api/v1/namespaces/default/events", event)
        done = subprocess.run(
            [sys.executable, "-m", "knuma", "gather", str(tmp_path / "out"), "--kubeconfig", str(api.kubeconfig)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    archive = Path(done.stdout.strip())
    assert archive.parent == tmp_path / "out" and archive.name.endswith(".tar.gz")
    with tarfile.open(archive) as tar:
        root = archive.name.removesuffix(".tar.gz")
        names = {n.removeprefix(root + "/") for n in tar.getnames()}

        def read(name: str) -> str:
            member = tar.extractfile(f"{root}/{name}")
            assert member is not None
            return member.read().decode()

        assert {"nodes.yaml", "noderesourcetopologies.yaml", "kubelet/w1.configz.json", "check.txt"} <= names
        assert "kubelet/w2.configz.json" not in names
        assert json.loads(read("kubelet/w1.configz.json")) == {"kubeletconfig": CONFIGZ}
        assert [o["metadata"]["name"] for o in yaml.safe_load(read("noderesourcetopologies.yaml"))] == ["w1"]
        [cr] = yaml.safe_load(read("custom-resources/numaresourcesoperators.yaml"))
        assert cr["spec"]["nodeGroups"] == [{"poolName": "worker"}]
        assert yaml.safe_load(read("pods/default/exporter-w1.yaml"))["spec"]["nodeName"] == "w1"
        [failed] = yaml.safe_load(read("events/failed-scheduling.yaml"))
        assert failed["message"] == "0/2 nodes are available: 2 cannot align container."
        assert json.loads(read("check.json"))["success"] is False
        errors = read("errors.txt")
    assert "configz of node w2: HTTP 403" in errors
    assert "logs of default/exporter-w1 container knuma-exporter: HTTP 404" in errors
    assert "not collected: configz of node w2" in done.stderr


def test_gather_from_an_unreachable_cluster_exits_3(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_for(tmp_path, "http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, "-m", "knuma", "gather", str(tmp_path / "out"), "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3 and "cannot gather: cannot reach the API server" in done.stderr
