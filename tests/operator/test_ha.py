"""Operator HA and observability against a real `knuma apiserver`: two replicas on one Lease, one leads (ready, and
the only one writing), the standby is healthy but not ready; `/metrics` counts reconciles per controller and result
under controller-runtime's names; the leader's graceful stop hands the Lease over and the standby reconciles."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

import pytest

from knuma.deploy.cluster import connect
from knuma.kube.client import async_http, http_client
from knuma.kube.leaderelection import LeaseConfig
from knuma.operator.health import HealthServer
from knuma.operator.manager import LoopSettings, run
from knuma.operator.metrics import OperatorMetrics
from knuma.operator.reconciler import Settings
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually

pytestmark = pytest.mark.slow

NS = "numaresources-operator"
LEASE = LeaseConfig(
    namespace="default", name="knuma-operator-leader", lease_duration=4, renew_deadline=3, retry_period=0.5
)
NRO = {
    "apiVersion": "nodetopology.openshift.io/v1",
    "kind": "NUMAResourcesOperator",
    "metadata": {"name": "numaresourcesoperator"},
    "spec": {"nodeGroups": [{"poolName": "worker"}]},
}


class Replica:
    """One `knuma operator --leader-elect` replica on its own event loop, with its /metrics server."""

    def __init__(self, api: RunningApiServer, identity: str) -> None:
        self.api, self.identity = api, identity
        self.loop = asyncio.new_event_loop()
        self.stop: asyncio.Event | None = None
        self.ready: asyncio.Event | None = None
        self.port = 0
        self.error: BaseException | None = None
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()
        assert self.started.wait(10), "the replica did not start"

    def _main(self) -> None:
        async def main() -> None:
            self.stop, self.ready = asyncio.Event(), asyncio.Event()
            metrics = OperatorMetrics()
            health = HealthServer(metrics, self.ready)
            self.port = await health.start("127.0.0.1", 0)
            self.started.set()
            http = async_http(self.api.kubeconfig)
            try:
                with connect(str(self.api.kubeconfig)) as session:
                    settings = LoopSettings(resync=1.0, lease=LEASE, identity=self.identity)
                    await run(session, http, Settings(NS), self.stop, settings, metrics=metrics, ready=self.ready)
            finally:
                await http.aclose()
                await health.stop()

        try:
            self.loop.run_until_complete(main())
        except BaseException as err:
            self.error = err

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def shutdown(self) -> None:
        if self.stop is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(15)
        assert not self.thread.is_alive(), f"{self.identity} did not stop"
        assert self.error is None, self.error


def reconciles_counted(replica: Replica) -> str | None:
    """The replica's /metrics text once it counts at least one finished reconcile of the operator CR."""
    status, text = replica.get("/metrics")
    counted = [
        line
        for line in text.splitlines()
        if line.startswith('controller_runtime_reconcile_total{controller="numaresourcesoperator"')
    ]
    if status == 200 and any(float(line.rsplit(" ", 1)[1]) >= 1 for line in counted):
        return text
    return None


def holder(api: RunningApiServer) -> str:
    with http_client(api.kubeconfig) as http:
        reply = http.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{LEASE.name}")
        return str((reply.json().get("spec") or {}).get("holderIdentity") or "") if reply.status_code == 200 else ""


def daemonset_exists(api: RunningApiServer) -> bool:
    with http_client(api.kubeconfig) as http:
        return http.get(f"/apis/apps/v1/namespaces/{NS}/daemonsets/numaresourcesoperator-worker").status_code == 200


def test_one_replica_leads_reports_metrics_and_hands_over(api: RunningApiServer) -> None:
    first = Replica(api, "replica-a")
    replicas = {"replica-a": first}
    try:
        eventually(lambda: first.get("/readyz")[0] == 200)
        assert holder(api) == "replica-a"
        second = Replica(api, "replica-b")
        replicas["replica-b"] = second
        time.sleep(1.5)  # several retry periods: the standby must not take the Lease
        assert second.get("/healthz") == (200, "ok\n")
        assert second.get("/readyz")[0] == 503
        assert holder(api) == "replica-a"

        with http_client(api.kubeconfig) as http:
            reply = http.post("/apis/nodetopology.openshift.io/v1/numaresourcesoperators", json=NRO)
            assert reply.status_code == 201, reply.text
        eventually(lambda: daemonset_exists(api))
        # the pass that applied the DaemonSet is counted when it ends, a moment after the DaemonSet appears
        text = eventually(lambda: reconciles_counted(first), timeout=30)
        assert 'controller_runtime_reconcile_time_seconds_count{controller="numaresourcesoperator"}' in text
        assert 'leader_election_master_status{name="default/knuma-operator-leader"} 1.0' in text
        assert 'controller="numaresourcesoperator"' not in second.get("/metrics")[1], "the standby reconciled"

        # the leader stops gracefully: it releases the Lease, the standby takes it at once and reconciles
        first.shutdown()
        replicas.pop("replica-a")
        eventually(lambda: holder(api) == "replica-b", timeout=30)
        eventually(lambda: second.get("/readyz")[0] == 200)
        with http_client(api.kubeconfig) as http:
            http.delete(f"/apis/apps/v1/namespaces/{NS}/daemonsets/numaresourcesoperator-worker")
        eventually(lambda: daemonset_exists(api))
        eventually(lambda: reconciles_counted(second), timeout=30)
    finally:
        for replica in replicas.values():
            replica.shutdown()
