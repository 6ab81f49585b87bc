"""`knuma deploy` / `knuma remove` against a real `knuma apiserver`: idempotent deploy, remove of what is absent,
partial failure then convergence, dry runs, waits (with the test playing the controllers) and their timeouts."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.resources.apps_v1 import DaemonSet, Deployment
from lightkube.resources.core_v1 import Namespace

from knuma.deploy.cluster import ClusterError, Session, WaitSettings, deploy, remove
from knuma.deploy.options import Component, DeployOptions, SchedulerVariant, UpdaterType
from knuma.deploy.render import render
from knuma.kube.apply import Change
from knuma.testing.apiserver import RunningApiServer

ALL = list(Component)


def typed(kind: Any, data: dict[str, Any]) -> Any:
    """A lightkube model from a dict (lightkube types `from_dict` loosely)."""
    return kind.from_dict(data)


def resource_versions(client: Client, objects: list[dict[str, Any]], session: Session) -> dict[str, str]:
    from knuma.kube.apply import get_object
    from knuma.kube.resources import object_ref

    out = {}
    for obj in objects:
        live = get_object(client, session.mapper, obj)
        assert live is not None, obj["metadata"]
        out[object_ref(obj)] = live["metadata"]["resourceVersion"]
    return out


def test_deploy_twice_then_remove_twice(session: Session) -> None:
    options = DeployOptions()
    objects = render(ALL, options)
    first = deploy(session, ALL, options)
    assert [o.change for o in first] == [Change.CREATED] * len(objects)
    versions = resource_versions(session.client, objects, session)
    second = deploy(session, ALL, options)
    assert {o.change for o in second} == {Change.UNCHANGED}
    assert resource_versions(session.client, objects, session) == versions, "a no-op deploy wrote something"
    removed = remove(session, ALL, options)
    assert [o.ref for o in removed] == [o.ref for o in reversed(first)]
    assert {o.change for o in removed} == {Change.DELETED}
    again = remove(session, ALL, options)
    assert {o.change for o in again} == {Change.ABSENT}
    names = {ns.metadata.name for ns in session.client.list(Namespace) if ns.metadata}
    assert not names & {"tas-scheduler", "tas-topology-updater"}


def test_changed_flags_reconfigure_only_what_changed(session: Session) -> None:
    deploy(session, ALL, DeployOptions())
    outcomes = deploy(session, ALL, DeployOptions(replicas=2))
    changed = {o.ref for o in outcomes if o.change is Change.CONFIGURED}
    assert changed == {"ConfigMap tas-scheduler/scheduler-config", "Deployment tas-scheduler/topology-aware-scheduler"}
    deployment = session.client.get(Deployment, "topology-aware-scheduler", namespace="tas-scheduler")
    assert deployment.spec is not None and deployment.spec.replicas == 2


def test_edits_by_others_are_reverted(session: Session) -> None:
    """Someone scaled the scheduler with kubectl: deploy owns that field and puts it back."""
    deploy(session, ALL, DeployOptions())
    session.client.patch(Deployment, "topology-aware-scheduler", {"spec": {"replicas": 5}}, namespace="tas-scheduler")
    outcomes = deploy(session, [Component.SCHEDULER], DeployOptions())
    assert [o.ref for o in outcomes if o.change is Change.CONFIGURED] == [
        "Deployment tas-scheduler/topology-aware-scheduler"
    ]
    deployment = session.client.get(Deployment, "topology-aware-scheduler", namespace="tas-scheduler")
    assert deployment.spec is not None and deployment.spec.replicas == 1


def test_dry_run_changes_nothing_and_shows_the_diff(session: Session) -> None:
    fresh = deploy(session, ALL, DeployOptions(), dry_run=True)
    assert {o.change for o in fresh} == {Change.CREATED}
    assert not [ns for ns in session.client.list(Namespace) if ns.metadata and ns.metadata.name == "tas-scheduler"]
    deploy(session, ALL, DeployOptions())
    planned = deploy(session, ALL, DeployOptions(resync_period=30), dry_run=True)
    configured = [o for o in planned if o.change is Change.CONFIGURED]
    assert [o.ref for o in configured] == [
        "ConfigMap tas-scheduler/scheduler-config",
        "Deployment tas-scheduler/topology-aware-scheduler",
    ]
    changed = [line.replace(" ", "") for line in configured[0].diff if line[:1] in "+-"]
    assert "+cacheResyncPeriodSeconds:30" in changed  # knuma's default renders no period (its own cache)
    assert {o.change for o in deploy(session, ALL, DeployOptions())} == {Change.UNCHANGED}
    dry_remove = remove(session, ALL, DeployOptions(), dry_run=True)
    assert {o.change for o in dry_remove} == {Change.DELETED}
    assert session.client.get(Deployment, "topology-aware-scheduler", namespace="tas-scheduler")


def test_partial_failure_then_rerun_converges(session: Session) -> None:
    """The scheduler's namespace is stuck terminating (a finalizer): deploy applies the CRD and the updater, fails on
    the scheduler naming the object and the reason; once the namespace is gone, the same command converges."""
    session.client.create(typed(Namespace, {"metadata": {"name": "tas-scheduler", "finalizers": ["example.com/hold"]}}))
    session.client.delete(Namespace, "tas-scheduler")
    with pytest.raises(ClusterError) as failure:
        deploy(session, ALL, DeployOptions())
    message = str(failure.value)
    assert "ServiceAccount tas-scheduler/topology-aware-scheduler" in message
    assert "being terminated" in message and "run the command again" in message
    assert session.client.get(DaemonSet, "knuma-exporter", namespace="tas-topology-updater")
    session.client.patch(Namespace, "tas-scheduler", {"metadata": {"finalizers": None}})
    deadline = time.monotonic() + 10
    while any(ns.metadata and ns.metadata.name == "tas-scheduler" for ns in session.client.list(Namespace)):
        assert time.monotonic() < deadline, "namespace never went away"
        time.sleep(0.05)
    outcomes = deploy(session, ALL, DeployOptions())
    created = {o.ref for o in outcomes if o.change is Change.CREATED}
    assert "Deployment tas-scheduler/topology-aware-scheduler" in created
    assert all(o.change is Change.UNCHANGED for o in outcomes if "tas-topology-updater" in o.ref)


def _play_controllers(api: RunningApiServer, stop: threading.Event, *, daemonset_nodes: int) -> None:
    """What the DaemonSet and Deployment controllers would write once pods are ready."""
    with Client(KubeConfig.from_file(api.kubeconfig), trust_env=False) as client:
        while not stop.is_set():
            for ds in client.list(DaemonSet, namespace="tas-topology-updater"):
                status = {
                    "observedGeneration": ds.metadata.generation if ds.metadata else 1,
                    "desiredNumberScheduled": daemonset_nodes,
                    "currentNumberScheduled": daemonset_nodes,
                    "numberReady": daemonset_nodes,
                    "updatedNumberScheduled": daemonset_nodes,
                    "numberMisscheduled": 0,
                }
                assert ds.metadata is not None and ds.metadata.name
                client.patch(DaemonSet.Status, ds.metadata.name, {"status": status}, namespace="tas-topology-updater")
            for dep in client.list(Deployment, namespace="tas-scheduler"):
                replicas = dep.spec.replicas if dep.spec and dep.spec.replicas is not None else 1
                status = {
                    "observedGeneration": dep.metadata.generation if dep.metadata else 1,
                    "replicas": replicas,
                    "updatedReplicas": replicas,
                    "readyReplicas": replicas,
                    "availableReplicas": replicas,
                }
                assert dep.metadata is not None and dep.metadata.name
                client.patch(Deployment.Status, dep.metadata.name, {"status": status}, namespace="tas-scheduler")
            stop.wait(0.1)


def test_wait_for_ready_workloads(api: RunningApiServer, session: Session) -> None:
    stop = threading.Event()
    controllers = threading.Thread(target=_play_controllers, args=(api, stop), kwargs={"daemonset_nodes": 2})
    controllers.start()
    seen: list[tuple[str, bool]] = []
    try:
        wait = WaitSettings(True, timeout=20, interval=0.1, progress=lambda ref, state: seen.append((ref, state.ready)))
        deploy(session, ALL, DeployOptions(), wait=wait)
    finally:
        stop.set()
        controllers.join(10)
    assert ("DaemonSet tas-topology-updater/knuma-exporter", True) in seen
    assert ("Deployment tas-scheduler/topology-aware-scheduler", True) in seen
    assert ("CustomResourceDefinition noderesourcetopologies.topology.node.k8s.io", True) in seen
    removed = remove(session, ALL, DeployOptions(), wait=WaitSettings(True, timeout=20, interval=0.1))
    assert {o.change for o in removed} == {Change.DELETED}


def test_wait_timeout_names_what_is_not_ready_and_why(session: Session) -> None:
    """Nothing runs the pods here: the timeout says which workload, its counts, and what its pods and events say."""
    deploy(session, [Component.API, Component.UPDATER], DeployOptions())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "knuma-exporter-x1",
            "namespace": "tas-topology-updater",
            "labels": {"app.kubernetes.io/name": "knuma-exporter", "app.kubernetes.io/part-of": "knuma"},
        },
        "spec": {"containers": [{"name": "knuma-exporter", "image": "ghcr.io/knuma/knuma:0.1.0"}]},
    }
    from lightkube.resources.core_v1 import Event, Pod

    session.client.create(typed(Pod, pod))
    session.client.create(
        typed(
            Event,
            {
                "metadata": {"name": "knuma-exporter-x1.1", "namespace": "tas-topology-updater"},
                "involvedObject": {"kind": "Pod", "name": "knuma-exporter-x1", "namespace": "tas-topology-updater"},
                "type": "Warning",
                "reason": "Failed",
                "message": 'Failed to pull image "ghcr.io/knuma/knuma:0.1.0": not found',
            },
        )
    )
    with pytest.raises(ClusterError) as failure:
        deploy(session, [Component.UPDATER], DeployOptions(), wait=WaitSettings(True, timeout=0.5, interval=0.1))
    message = str(failure.value)
    assert "DaemonSet tas-topology-updater/knuma-exporter not ready after 0.5s" in message
    assert "not yet observed by the DaemonSet controller" in message
    assert "pod knuma-exporter-x1: Pending" in message
    assert 'event Pod/knuma-exporter-x1: Failed: Failed to pull image "ghcr.io/knuma/knuma:0.1.0": not found' in message


@pytest.mark.parametrize(
    ("scheduler", "updater"),
    [(SchedulerVariant.UPSTREAM, UpdaterType.RTE), (SchedulerVariant.UPSTREAM, UpdaterType.NFD)],
)
def test_upstream_variants_deploy_and_remove(
    session: Session, scheduler: SchedulerVariant, updater: UpdaterType
) -> None:
    options = DeployOptions(scheduler=scheduler, updater=updater)
    assert {o.change for o in deploy(session, ALL, options)} == {Change.CREATED}
    assert {o.change for o in deploy(session, ALL, options)} == {Change.UNCHANGED}
    assert {o.change for o in remove(session, ALL, options)} == {Change.DELETED}


def test_openshift_kinds_on_a_kubernetes_cluster_are_a_clear_error_and_absent_on_remove(session: Session) -> None:
    from knuma.deploy.options import Platform, PlatformSpec

    options = DeployOptions(platform=PlatformSpec(Platform.OPENSHIFT, "4.16"))
    with pytest.raises(ClusterError, match=r"does not serve SecurityContextConstraints \(security\.openshift\.io/v1\)"):
        deploy(session, [Component.UPDATER], options)
    outcomes = remove(session, [Component.UPDATER], options)
    assert next(o for o in outcomes if o.ref.startswith("SecurityContextConstraints")).change is Change.ABSENT


def test_control_plane_replicas(session: Session) -> None:
    from lightkube.resources.core_v1 import Node

    from knuma.deploy.cluster import control_plane_replicas

    assert control_plane_replicas(session.client) == 1
    for i in range(4):
        node = {"metadata": {"name": f"cp-{i}", "labels": {"node-role.kubernetes.io/control-plane": ""}}}
        session.client.create(typed(Node, node))
    assert control_plane_replicas(session.client) == 3
