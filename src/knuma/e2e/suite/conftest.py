"""Fixtures of the end-to-end suite: the cluster (from `--kubeconfig` / `--context`), the stack (found, or deployed
with `--deploy missing` and removed afterwards), a namespace per test (deleted after it), and at the end a check that
the run left no pod behind."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from knuma.deploy.check import CheckSettings, run_check
from knuma.e2e.cluster import E2E_LABEL, E2ECluster, eventually
from knuma.kube.client import http_client


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("knuma e2e")
    group.addoption("--kubeconfig", default=None, help="kubeconfig of the cluster under test")
    group.addoption("--context", default=None, help="kubeconfig context")
    group.addoption("--scheduler-name", default="topology-aware-scheduler", help="the NUMA-aware profile")
    group.addoption(
        "--deploy", default="never", choices=("never", "missing"), help="deploy the stack when it is missing"
    )


@dataclass(frozen=True)
class Stack:
    scheduler_name: str
    scheduler_deployment: str
    """`namespace/name` of the scheduler Deployment."""
    nodes: list[str]
    """Nodes with an NRT object and an exporter pod: the ones the suite places pods on."""


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[E2ECluster]:
    kubeconfig, context = request.config.getoption("--kubeconfig"), request.config.getoption("--context")
    with http_client(kubeconfig, context, timeout=30) as http:
        client = E2ECluster(http)
        yield client
        # cleanup: nothing this run created may outlive it
        eventually(
            lambda: not client.all_pods(f"{E2E_LABEL}={client.run_id}"), "the run's pods to be deleted", timeout=180
        )


def _stack(cluster: E2ECluster, scheduler_name: str) -> Stack | str:
    """The deployed stack, or why it is not usable."""
    diagnosis = run_check(cluster.http, CheckSettings(scheduler_name=scheduler_name, stale_grace=5.0))
    status = diagnosis.scheduler
    if not status.deployment or not status.plugin:
        problems = [i for i in diagnosis.issues if i.area == "scheduler" and i.component.startswith(("profile", "Dep"))]
        return "; ".join(f"{i.detected}: {i.fix}" for i in problems) or "no NUMA-aware scheduler found"
    nodes = [r.node for r in diagnosis.nodes if r.nrt == "present" and r.exporter.count("/") == 1]
    if not nodes:
        return "no node has both an NRT object and a running exporter pod"
    return Stack(scheduler_name, status.deployment, nodes)


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest, cluster: E2ECluster) -> Iterator[Stack]:
    scheduler_name = str(request.config.getoption("--scheduler-name"))
    found = _stack(cluster, scheduler_name)
    deployed = False
    if isinstance(found, str) and request.config.getoption("--deploy") == "missing":
        from knuma.deploy.cluster import WaitSettings, connect, deploy
        from knuma.deploy.options import Component, DeployOptions

        kubeconfig, context = request.config.getoption("--kubeconfig"), request.config.getoption("--context")
        with connect(kubeconfig, context) as session:
            deploy(session, list(Component), DeployOptions(), wait=WaitSettings(True, 300.0, 2.0))
        deployed = True

        def usable() -> Stack | None:
            again = _stack(cluster, scheduler_name)
            return again if isinstance(again, Stack) else None

        found = eventually(usable, "the deployed stack to be usable")
    if isinstance(found, str):
        pytest.exit(f"the stack is not usable: {found} (or pass --deploy missing)", returncode=3)
    yield found
    if deployed:
        from knuma.deploy.cluster import WaitSettings, connect, remove
        from knuma.deploy.options import Component, DeployOptions

        with connect(request.config.getoption("--kubeconfig"), request.config.getoption("--context")) as session:
            remove(session, list(Component), DeployOptions(), wait=WaitSettings(True, 300.0, 2.0))


@pytest.fixture
def namespace(cluster: E2ECluster) -> Iterator[str]:
    name = cluster.create_namespace("knuma-e2e")
    try:
        yield name
    finally:
        for pod in cluster.pods(name):
            with contextlib.suppress(Exception):
                cluster.delete_pod(name, pod["metadata"]["name"])
        cluster.delete_namespace(name)
