"""The kubeletconfig controller follows Nodes and OpenShift KubeletConfigs through watches, not only its resync: the
operator runs against a real `knuma apiserver` with a resync period far longer than the test, so every ConfigMap
change it makes here was caused by a watch event."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knuma.api.crd import nrt_crd
from knuma.deploy.cluster import Session, connect
from knuma.kube.client import async_http
from knuma.operator.kubeletconfig import node_signature
from knuma.operator.manager import LoopSettings, install_crds, run
from knuma.operator.reconciler import Settings
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .test_kubeletconfig import CONFIGZ, Kubelets

pytestmark = pytest.mark.slow

NS = "numaresources-operator"
CNF = "numaresourcesoperator-worker-cnf"
OCP = "numaresourcesoperator-worker-ocp"
MCO = "/apis/machineconfiguration.openshift.io/v1"
POOL_LABEL = "pools.operator.machineconfiguration.openshift.io/worker-ocp"


def _mco_crd(plural: str, kind: str) -> dict[str, Any]:
    """OpenShift's machineconfiguration CRDs, as far as the controller reads them."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.machineconfiguration.openshift.io"},
        "spec": {
            "group": "machineconfiguration.openshift.io",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def _node(name: str, role: str) -> dict[str, Any]:
    labels = {f"node-role.kubernetes.io/{role}": ""}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _post(session: Session, path: str, body: dict[str, Any]) -> None:
    reply = session.http.post(path, json=body)
    assert reply.status_code == 201, reply.text


def _kubelet(session: Session, name: str) -> dict[str, Any] | None:
    import yaml

    reply = session.http.get(f"/api/v1/namespaces/{NS}/configmaps/{name}")
    if reply.status_code == 404:
        return None
    doc: dict[str, Any] = yaml.safe_load(reply.json()["data"]["config.yaml"]) or {}
    kubelet: dict[str, Any] = doc.get("kubelet") or {}
    return kubelet


def _policy(session: Session, name: str) -> str | None:
    return (_kubelet(session, name) or {}).get("topologyManagerPolicy")


def _observe_daemonsets(session: Session) -> int:
    """Write what a DaemonSet controller would for DaemonSets that select no node; how many there are."""
    items = session.http.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets").json()["items"]
    for ds in items:
        ds["status"] = {
            "observedGeneration": ds["metadata"].get("generation", 1),
            "desiredNumberScheduled": 0,
            "currentNumberScheduled": 0,
            "numberReady": 0,
            "updatedNumberScheduled": 0,
            "numberAvailable": 0,
            "numberMisscheduled": 0,
        }
        name = ds["metadata"]["name"]
        reply = session.http.put(f"/apis/apps/v1/namespaces/{NS}/daemonsets/{name}/status", json=ds)
        assert reply.status_code == 200, reply.text
    return len(items)


def _available(session: Session) -> bool:
    nro = session.http.get("/apis/nodetopology.openshift.io/v1/numaresourcesoperators/numaresourcesoperator").json()
    conditions = (nro.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


async def _eventually(check: Callable[[], bool], what: str) -> None:
    """Poll a blocking check (kubectl-like reads through the session) off the event loop the operator runs on."""
    await eventually_async(lambda: asyncio.to_thread(check), what=what)


@contextlib.asynccontextmanager
async def _operator(api: RunningApiServer, session: Session) -> AsyncIterator[None]:
    http = async_http(api.kubeconfig)
    stop = asyncio.Event()
    task = asyncio.create_task(run(session, http, Settings(NS), stop, LoopSettings(resync=3600, install_crds=False)))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await http.aclose()


async def test_nodes_and_kubeletconfigs_are_followed_without_waiting_for_the_resync(api: RunningApiServer) -> None:
    kubelets = Kubelets()
    with connect(str(api.kubeconfig)) as session:
        _post(session, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", nrt_crd())
        install_crds(session)
        for plural, kind in (("kubeletconfigs", "KubeletConfig"), ("machineconfigpools", "MachineConfigPool")):
            _post(session, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _mco_crd(plural, kind))
        await _eventually(lambda: session.http.get(f"{MCO}/kubeletconfigs").status_code == 200, "the MCO CRDs")
        for name in ("cnf-1", "cnf-2"):
            kubelets.configs[name] = dict(CONFIGZ)
            api.register_node_proxy(name, kubelets.handler(name))
            _post(session, "/api/v1/nodes", _node(name, "worker-cnf"))
        # worker-ocp has no node whose configz can be read: its settings come from the pool's KubeletConfig
        pool: dict[str, Any] = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool"}
        _post(
            session,
            f"{MCO}/machineconfigpools",
            {**pool, "metadata": {"name": "worker-ocp", "labels": {POOL_LABEL: ""}}},
        )
        kc = {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig",
            "metadata": {"name": "ocp"},
            "spec": {
                "machineConfigPoolSelector": {"matchLabels": {POOL_LABEL: ""}},
                "kubeletConfig": {"topologyManagerPolicy": "best-effort", "cpuManagerPolicy": "static"},
            },
        }
        _post(session, f"{MCO}/kubeletconfigs", kc)
        nro = {
            "apiVersion": "nodetopology.openshift.io/v1",
            "kind": "NUMAResourcesOperator",
            "metadata": {"name": "numaresourcesoperator"},
            "spec": {"nodeGroups": [{"poolName": "worker-cnf"}, {"poolName": "worker-ocp"}]},
        }
        _post(session, "/apis/nodetopology.openshift.io/v1/numaresourcesoperators", nro)

        async with _operator(api, session):
            await _eventually(lambda: _policy(session, CNF) == "single-numa-node", "the worker-cnf ConfigMap")
            await _eventually(lambda: _policy(session, OCP) == "best-effort", "the worker-ocp ConfigMap")
            # knuma apiserver runs no DaemonSet controller: say the (empty) DaemonSets are rolled out, so that the
            # operator is Available and stops re-checking every 5 s; from then on only events make passes
            await _eventually(lambda: _observe_daemonsets(session) == 2, "two DaemonSets")
            await _eventually(lambda: _available(session), "the NUMAResourcesOperator Available")
            await asyncio.sleep(1)  # the pass that the Available status write itself wakes

            # Both kubelets are reconfigured in place: configz raises no event, the ConfigMap stays as it was...
            for name in ("cnf-1", "cnf-2"):
                kubelets.configs[name] = {**CONFIGZ, "topologyManagerPolicy": "restricted"}
            await asyncio.sleep(2)
            assert (_kubelet(session, CNF) or {})["topologyManagerPolicy"] == "single-numa-node"
            # ...until a node of the group changes in a way that matters: a third node joins the group
            kubelets.configs["cnf-3"] = {**CONFIGZ, "topologyManagerPolicy": "restricted"}
            api.register_node_proxy("cnf-3", kubelets.handler("cnf-3"))
            started = time.monotonic()
            _post(session, "/api/v1/nodes", _node("cnf-3", "worker-cnf"))
            await _eventually(lambda: _policy(session, CNF) == "restricted", "the new node's effect")
            node_latency = time.monotonic() - started

            # The KubeletConfig is edited: the worker-ocp ConfigMap follows
            started = time.monotonic()
            patch = {"spec": {"kubeletConfig": {"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod"}}}
            reply = session.http.patch(
                f"{MCO}/kubeletconfigs/ocp", json=patch, headers={"Content-Type": "application/merge-patch+json"}
            )
            assert reply.status_code == 200, reply.text
            await _eventually(
                lambda: (_kubelet(session, OCP) or {}).get("topologyManagerScope") == "pod", "the KubeletConfig edit"
            )
            kc_latency = time.monotonic() - started
            assert (_kubelet(session, OCP) or {})["topologyManagerPolicy"] == "restricted"
    # far below the resync period (3600 s): the watches did it
    assert node_latency < 15 and kc_latency < 15, (node_latency, kc_latency)


def test_heartbeats_do_not_count_as_node_changes() -> None:
    node: dict[str, Any] = {
        "metadata": {"name": "n", "labels": {"a": "b"}, "resourceVersion": "1"},
        "status": {
            "allocatable": {"cpu": "8"},
            "nodeInfo": {"bootID": "x"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1", "lastTransitionTime": "t0"}],
        },
    }
    beat: dict[str, Any] = {
        **node,
        "metadata": {**node["metadata"], "resourceVersion": "2"},
        "status": {
            **node["status"],
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t2", "lastTransitionTime": "t0"}],
        },
    }
    assert node_signature(beat) == node_signature(node)
    rebooted = {**node, "status": {**node["status"], "nodeInfo": {"bootID": "y"}}}
    relabelled = {**node, "metadata": {**node["metadata"], "labels": {"a": "c"}}}
    reserved = {**node, "status": {**node["status"], "allocatable": {"cpu": "6"}}}
    for changed in (rebooted, relabelled, reserved):
        assert node_signature(changed) != node_signature(node)
