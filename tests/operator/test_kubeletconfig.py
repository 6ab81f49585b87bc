"""The kubeletconfig controller: node groups' kubelet settings distilled from configz (or OpenShift KubeletConfigs)
into the ConfigMap the group's exporters mount, and a kubelet change reaching the published NRT attributes without a
restart: configz changes -> the operator's next pass rewrites the ConfigMap -> the kubelet's ConfigMap volume swaps
`..data` -> the running exporter re-reads the file and republishes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient, KubeConfig

from knuma.api.crd import nrt_crd
from knuma.api.numaresources import parse_operator_spec
from knuma.deploy.cluster import Session, connect
from knuma.exporter.daemon import Exporter, make_client
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover
from knuma.exporter.triggers import Trigger
from knuma.kube.client import http_client
from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.operator.kubeletconfig import choose, distil, group_selector, kubeletconfig_for_pool, render_config
from knuma.operator.manager import install_crds
from knuma.operator.reconciler import Reconciler, Settings
from knuma.podresources import Allocatable
from knuma.podresources.server import PodResourcesServer
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread
from knuma.testing.polling import eventually_async
from tests.exporter.sysfs_trees import NodeSpec, write_tree
from tests.exporter.test_daemon import attributes_of, configmap_mount, read, updated_beyond

NS = "numaresources-operator"
CM = "numaresourcesoperator-worker-cnf"
CONFIGZ = {
    "kind": "KubeletConfiguration",
    "cgroupDriver": "systemd",
    "cpuManagerPolicy": "static",
    "memoryManagerPolicy": "Static",
    "reservedSystemCPUs": "0",
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod",
}


def test_distil_keeps_what_the_exporter_publishes() -> None:
    assert distil(
        {**CONFIGZ, "cpuManagerPolicyOptions": {"full-pcpus-only": True}, "topologyManagerPolicyOptions": {}}
    ) == {
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "cpuManagerPolicy": "static",
        "cpuManagerPolicyOptions": {"full-pcpus-only": "True"},
        "memoryManagerPolicy": "Static",
        "reservedSystemCPUs": "0",
    }


def test_the_majority_wins_and_the_odd_node_is_named() -> None:
    same = distil(CONFIGZ)
    odd = distil({**CONFIGZ, "topologyManagerPolicy": "best-effort"})
    chosen, warnings = choose({"w1": odd, "w2": same, "w3": same})
    assert chosen == same
    assert warnings == [
        "node w1 runs other kubelet settings than the rest of its group (topologyManagerPolicy: best-effort instead "
        "of single-numa-node); the group's exporters publish the majority's"
    ]
    assert choose({"b": odd, "a": same})[0] == same, "a tie goes to the first node by name"


def test_render_config_is_rtes_format() -> None:
    text = render_config({"topologyManagerPolicy": "restricted"}, [("kube-*", "*")])
    assert yaml.safe_load(text) == {
        "kubelet": {"topologyManagerPolicy": "restricted"},
        "podExclude": [{"namespacePattern": "kube-*", "namePattern": "*"}],
    }
    assert render_config({}) == "{}\n"


def test_group_selector_and_openshift_kubeletconfig_matching() -> None:
    spec = parse_operator_spec(
        {
            "nodeGroups": [
                {"poolName": "worker-cnf"},
                {
                    "machineConfigPoolSelector": {
                        "matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a"]}]
                    }
                },
            ]
        }
    )
    assert group_selector(spec.node_groups[0]) == "node-role.kubernetes.io/worker-cnf"
    assert group_selector(spec.node_groups[1]) == "gpu in (a)"
    pools = [
        {"metadata": {"name": "worker-cnf", "labels": {"pools.operator.machineconfiguration.openshift.io/cnf": ""}}}
    ]
    kcs = [
        {"metadata": {"name": "other"}, "spec": {"machineConfigPoolSelector": {"matchLabels": {"x": "y"}}}},
        {
            "metadata": {"name": "cnf"},
            "spec": {
                "machineConfigPoolSelector": {
                    "matchLabels": {"pools.operator.machineconfiguration.openshift.io/cnf": ""}
                }
            },
        },
    ]
    found = kubeletconfig_for_pool(kcs, pools, "worker-cnf")
    assert found is not None and found["metadata"]["name"] == "cnf"
    assert kubeletconfig_for_pool(kcs, pools, "worker") is None


class Kubelets:
    """configz of simulated nodes, changed by the test as an administrator reconfigures a kubelet."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}

    def handler(self, node: str) -> Any:
        def handle(request: ProxyRequest) -> ProxyResponse:
            if request.path.strip("/") != "configz":
                return ProxyResponse(404, b"404 page not found\n", "text/plain")
            return ProxyResponse(200, json.dumps({"kubeletconfig": self.configs[node]}).encode())

        return handle


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[RunningApiServer, Session, Kubelets]]:
    kubelets = Kubelets()
    with apiserver_in_thread(tmp_path / "api") as api, connect(str(api.kubeconfig)) as session:
        http = session.http
        assert http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=nrt_crd()).status_code == 201
        install_crds(session)
        for name in ("cnf-1", "cnf-2"):
            labels = {"node-role.kubernetes.io/worker-cnf": ""}
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
            assert http.post("/api/v1/nodes", json=node).status_code == 201
            kubelets.configs[name] = dict(CONFIGZ)
            api.register_node_proxy(name, kubelets.handler(name))
        nro = {
            "apiVersion": "nodetopology.openshift.io/v1",
            "kind": "NUMAResourcesOperator",
            "metadata": {"name": "numaresourcesoperator"},
            "spec": {"nodeGroups": [{"poolName": "worker-cnf"}]},
        }
        reply = http.post("/apis/nodetopology.openshift.io/v1/numaresourcesoperators", json=nro)
        assert reply.status_code == 201, reply.text
        yield api, session, kubelets


def configmap(session: Session) -> dict[str, Any]:
    reply = session.http.get(f"/api/v1/namespaces/{NS}/configmaps/{CM}")
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = yaml.safe_load(reply.json()["data"]["config.yaml"])
    return data


async def test_a_kubelet_change_reaches_the_nrt_attributes_without_restarts(
    cluster: tuple[RunningApiServer, Session, Kubelets], tmp_path: Path
) -> None:
    api, session, kubelets = cluster
    reconciler = Reconciler(session, Settings(NS))
    await asyncio.to_thread(reconciler.reconcile_all)
    assert configmap(session) == {"kubelet": {k: v for k, v in CONFIGZ.items() if k not in ("kind", "cgroupDriver")}}
    with http_client(api.kubeconfig) as http:
        ds = http.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets/{CM}").json()
    pod = ds["spec"]["template"]["spec"]
    assert {"name": "config", "configMap": {"name": CM}} in pod["volumes"]
    assert "--config=/etc/knuma-exporter/config.yaml" in pod["containers"][0]["args"]

    # the exporter of cnf-1 reads the group's ConfigMap as the kubelet mounts it (no kubelet file: the ConfigMap
    # is its only source), 2 NUMA nodes x 4 CPUs
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3]), 1: NodeSpec(cpus=[4, 5, 6, 7])})
    mount = tmp_path / "config-volume"
    mount.mkdir()
    config_file = configmap_mount(mount, 1, yaml.safe_dump(configmap(session)))
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(1, 8)))) as podresources:
        settings = ExporterSettings(
            node_name="cnf-1",
            sysfs_root=str(root),
            podresources_socket=podresources.address,
            kubeconfig=str(api.kubeconfig),
            config_file=str(config_file),
            sleep_interval=0,
            min_update_interval=0.1,
            metrics_port=None,
            add_owner_reference=False,
        )
        exporter = Exporter(
            settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
        )
        client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        stop = asyncio.Event()
        serving = asyncio.create_task(exporter.serve(stop))
        try:
            await eventually_async(lambda: exporter.updates == 1)
            published = attributes_of(await read(client, "cnf-1"))
            assert (published["topologyManagerPolicy"], published["topologyManagerScope"]) == (
                "single-numa-node",
                "pod",
            )
            assert not any(k.startswith("cpuManagerPolicyOption") for k in published)

            # the administrator reconfigures both kubelets; the operator's next pass (its resync) rewrites the
            # ConfigMap, the kubelet swaps the volume's data, the exporter republishes: nothing restarts
            for name in kubelets.configs:
                kubelets.configs[name] = {
                    **CONFIGZ,
                    "topologyManagerPolicy": "restricted",
                    "topologyManagerScope": "container",
                    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
                }
            await asyncio.to_thread(reconciler.reconcile_all)
            assert configmap(session)["kubelet"]["topologyManagerPolicy"] == "restricted"
            configmap_mount(mount, 2, yaml.safe_dump(configmap(session)))
            await updated_beyond(exporter, 1)
            assert Trigger.CONFIG in exporter.last_triggers
            published = attributes_of(await read(client, "cnf-1"))
            assert (published["topologyManagerPolicy"], published["topologyManagerScope"]) == (
                "restricted",
                "container",
            )
            assert published["cpuManagerPolicyOptionFullPCPUsOnly"] == "true"
        finally:
            stop.set()
            await serving
            await client.close()
