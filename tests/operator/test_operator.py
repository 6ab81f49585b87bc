"""`knuma operator` against a real `knuma apiserver`: custom resources created with kubectl become the deployer's
objects with owner references; deleted objects come back; pause, wrong names and invalid specs are reported in the
status conditions; the test plays the DaemonSet / Deployment controllers to make the stack Available."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TypeVar

import pytest

from knuma.deploy.cluster import connect
from knuma.kube.client import async_http
from knuma.operator.manager import LoopSettings, run
from knuma.operator.reconciler import Settings
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
NS = "numaresources-operator"
T = TypeVar("T")

NRO = """
apiVersion: nodetopology.openshift.io/v1
kind: NUMAResourcesOperator
metadata:
  name: {name}
  annotations: {annotations}
spec:
  nodeGroups:
  - poolName: worker-cnf
  - machineConfigPoolSelector:
      matchLabels:
        node-role.kubernetes.io/worker-gpu: ""
    config:
      podsFingerprinting: Enabled
      infoRefreshMode: Events
"""

NRS = """
apiVersion: nodetopology.openshift.io/v1
kind: NUMAResourcesScheduler
metadata:
  name: numaresourcesscheduler
spec:
  schedulerName: topo-aware-scheduler
  cacheResyncPeriod: 3s
  replicas: 2
"""


class Operator:
    """`knuma.operator.manager.run` on its own event loop in a thread, as `knuma operator` runs it."""

    def __init__(self, api: RunningApiServer) -> None:
        self.api = api
        self.loop = asyncio.new_event_loop()
        self.stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        async def main() -> None:
            self.stop = asyncio.Event()
            http = async_http(self.api.kubeconfig)
            try:
                with connect(str(self.api.kubeconfig)) as session:
                    await run(session, http, Settings(NS), self.stop, LoopSettings(resync=1.0))
            finally:
                await http.aclose()

        try:
            self.loop.run_until_complete(main())
        except BaseException as err:
            self.error = err

    def __enter__(self) -> Operator:
        self.thread.start()
        # The operator installs its CRDs at start-up; kubectl can create custom resources once they are served.
        for plural in ("numaresourcesoperators", "numaresourcesschedulers"):
            crd = f"{plural}.nodetopology.openshift.io"
            eventually(lambda: get(self.api, "crd", crd), what="the CRDs")  # noqa: B023 (called before the next loop)
        return self

    def __exit__(self, *exc: object) -> None:
        deadline = time.monotonic() + 5
        while self.stop is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)
        assert not self.thread.is_alive(), "the operator did not stop"
        assert self.error is None, self.error


def kubectl(api: RunningApiServer, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(api.kubeconfig), *args], input=stdin, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def get(api: RunningApiServer, *args: str) -> dict[str, Any] | None:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(api.kubeconfig), "get", *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        assert "NotFound" in done.stderr, done.stderr
        return None
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return None


def true_condition(api: RunningApiServer, resource: str, name: str, kind: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        c = condition(get(api, resource, name), kind)
        return c if c and c["status"] == "True" else None

    found: dict[str, Any] = eventually(check, what=f"{resource}/{name} {kind}=True")
    return found


def set_status(api: RunningApiServer, resource: str, name: str, status: dict[str, Any]) -> None:
    """Play the controller that would fill a workload's status."""
    kubectl(
        api,
        "-n",
        NS,
        "patch",
        resource,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def test_operator_reconciles_daemonsets_and_scheduler(api: RunningApiServer) -> None:
    with Operator(api):
        kubectl(api, "apply", "-f", "-", stdin=NRO.format(name="numaresourcesoperator", annotations="{}"))
        kubectl(api, "apply", "-f", "-", stdin=NRS)
        nro = eventually(lambda: get(api, "numaresop", "numaresourcesoperator"))
        cnf = eventually(lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-cnf"))
        gpu = eventually(lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-gpu"))
        [owner] = cnf["metadata"]["ownerReferences"]
        assert owner["kind"] == "NUMAResourcesOperator" and owner["uid"] == nro["metadata"]["uid"]
        assert owner["controller"] is True
        assert cnf["spec"]["template"]["spec"]["nodeSelector"] == {"node-role.kubernetes.io/worker-cnf": ""}
        args = gpu["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--sleep-interval=0s" in args and "--pods-fingerprint-method=all" in args
        assert any(a.startswith("--notify-file=") for a in args)
        assert get(api, "crd", "noderesourcetopologies.topology.node.k8s.io") is not None

        deployment = eventually(lambda: get(api, "-n", NS, "deploy", "topology-aware-scheduler"))
        assert deployment["metadata"]["ownerReferences"][0]["kind"] == "NUMAResourcesScheduler"
        assert deployment["spec"]["replicas"] == 2
        config = get(api, "-n", NS, "cm", "scheduler-config")
        assert config is not None
        text = config["data"]["scheduler-config.yaml"]
        assert "schedulerName: topo-aware-scheduler" in text and "cacheResyncPeriodSeconds: 3" in text

        # No controller runs the workloads here: Progressing until their status says they are ready.
        progressing = true_condition(api, "numaresop", "numaresourcesoperator", "Progressing")
        assert "not yet observed by the DaemonSet controller" in progressing["message"]
        true_condition(api, "numaressched", "numaresourcesscheduler", "Progressing")
        for name in ("numaresourcesoperator-worker-cnf", "numaresourcesoperator-worker-gpu"):
            ready = {
                "desiredNumberScheduled": 2,
                "numberReady": 2,
                "updatedNumberScheduled": 2,
                "observedGeneration": 1,
            }
            set_status(api, "ds", name, ready)
        set_status(
            api,
            "deploy",
            "topology-aware-scheduler",
            {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "readyReplicas": 2},
        )
        true_condition(api, "numaresop", "numaresourcesoperator", "Available")
        assert condition(get(api, "numaresop", "numaresourcesoperator"), "Upgradeable")["status"] == "True"  # type: ignore[index]
        nrs = get(api, "numaressched", "numaresourcesscheduler")
        true_condition(api, "numaressched", "numaresourcesscheduler", "Available")
        nrs = get(api, "numaressched", "numaresourcesscheduler")
        assert nrs is not None
        assert nrs["status"]["deployment"] == {"namespace": NS, "name": "topology-aware-scheduler"}
        assert nrs["status"]["schedulerName"] == "topo-aware-scheduler"
        assert nrs["status"]["cacheResyncPeriod"] == "3s"

        # Drift: a deleted DaemonSet comes back; an edited ConfigMap is restored.
        kubectl(api, "-n", NS, "delete", "ds", "numaresourcesoperator-worker-cnf")
        eventually(lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-cnf"), what="the DaemonSet back")
        kubectl(
            api,
            "-n",
            NS,
            "patch",
            "cm",
            "scheduler-config",
            "--type=merge",
            "-p",
            '{"data":{"scheduler-config.yaml":"x"}}',
        )
        eventually(
            lambda: (
                "topo-aware-scheduler"
                in (get(api, "-n", NS, "cm", "scheduler-config") or {})["data"]["scheduler-config.yaml"]
            ),
            what="the ConfigMap restored",
        )

        # A node group removed from the spec: its DaemonSet is deleted.
        kubectl(
            api,
            "patch",
            "numaresop",
            "numaresourcesoperator",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/spec/nodeGroups/1"}]',
        )
        eventually(
            lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-gpu") is None or None, what="gpu DS gone"
        )


def test_pause_wrong_name_and_invalid_spec(api: RunningApiServer) -> None:
    with Operator(api):
        paused = '{"config.numa-operator.openshift.io/pause-reconciliation": "enabled"}'
        kubectl(api, "apply", "-f", "-", stdin=NRO.format(name="numaresourcesoperator", annotations=paused))
        refused = subprocess.run(
            [KUBECTL, "--kubeconfig", str(api.kubeconfig), "apply", "-f", "-"],
            input=NRO.format(name="numa", annotations="{}"),
            capture_output=True,
            text=True,
            timeout=30,
        )
        # The CRD's CEL rule refuses another name, as kube-apiserver does (knuma apiserver evaluates CEL rules) ...
        assert refused.returncode == 1 and "the only accepted name is numaresourcesoperator" in refused.stderr
        # ... and where the CRD has no rule (an older CRD), the operator itself reports the wrong name.
        no_rule = '[{"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/x-kubernetes-validations"}]'
        kubectl(api, "patch", "crd", "numaresourcesoperators.nodetopology.openshift.io", "--type=json", "-p", no_rule)
        kubectl(api, "apply", "-f", "-", stdin=NRO.format(name="numa", annotations="{}"))
        degraded = true_condition(api, "numaresop", "numa", "Degraded")
        assert degraded["reason"] == "IncorrectNUMAResourcesOperatorResourceName"
        assert get(api, "-n", NS, "ds", "numa-worker-cnf") is None
        # The paused resource got no DaemonSet and no status while the wrong-named one was handled.
        assert get(api, "-n", NS, "ds", "numaresourcesoperator-worker-cnf") is None
        assert condition(get(api, "numaresop", "numaresourcesoperator"), "Available") is None

        kubectl(
            api,
            "annotate",
            "numaresop",
            "numaresourcesoperator",
            "config.numa-operator.openshift.io/pause-reconciliation-",
        )
        eventually(lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-cnf"), what="unpaused DaemonSet")

        group = {"poolName": "x", "machineConfigPoolSelector": {"matchLabels": {"a": "b"}}}
        bad = json.dumps([{"op": "add", "path": "/spec/nodeGroups/-", "value": group}])
        kubectl(api, "patch", "numaresop", "numaresourcesoperator", "--type=json", "-p", bad)
        degraded = true_condition(api, "numaresop", "numaresourcesoperator", "Degraded")
        assert degraded["reason"] == "ValidationErrorUnderNodeGroups"
        assert "node group 2 must have only a single specifier set" in degraded["message"]


def test_nrt_api_definition_cluster_skips_the_crd(api: RunningApiServer) -> None:
    with Operator(api):
        annotations = '{"config.numa-operator.openshift.io/nrt-api-definition": "cluster"}'
        kubectl(api, "apply", "-f", "-", stdin=NRO.format(name="numaresourcesoperator", annotations=annotations))
        eventually(lambda: get(api, "-n", NS, "ds", "numaresourcesoperator-worker-cnf"))
        assert get(api, "crd", "noderesourcetopologies.topology.node.k8s.io") is None
