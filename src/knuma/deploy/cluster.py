"""Putting the rendered stack on a cluster and taking it off: the imperative shell around `render`.

Deploy applies every object in order with server-side apply (field manager `knuma`), waits for the CRD to be
Established before anything else, and with `wait` for each component's workloads before the next component. It stops
at the first failure, saying which object failed and why; since apply is idempotent, running it again converges.
Remove deletes in reverse order, keeps going after a failure (to remove as much as possible) and reports every
failure at the end; objects that are not there are `absent`, not errors. It keeps the NodeResourceTopology CRD while
NRT objects exist (deleting the CRD deletes them all, under whatever publishes them: other exporters, `knuma up`'s
nodes) unless `delete_crd_in_use`; the upstream deployer deletes it unconditionally.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from lightkube import Client
from lightkube.resources.core_v1 import Node

from knuma.deploy.objects import Manifest
from knuma.deploy.options import Component, DeployOptions
from knuma.deploy.render import render_component
from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.apply import Change, Outcome, apply_object, delete_object, object_lines, stripped
from knuma.kube.client import http_client, load_config, sync_client
from knuma.kube.errors import KubeApiError, NotFound
from knuma.kube.resources import RestMapper, UnknownKindError, object_ref
from knuma.kube.wait import Readiness, WaitTimeout, wait_for

__all__ = [
    "FIELD_MANAGER",
    "ClusterError",
    "Session",
    "WaitSettings",
    "connect",
    "control_plane_replicas",
    "deploy",
    "remove",
]

FIELD_MANAGER = "knuma"
NRT_CRD = "noderesourcetopologies.topology.node.k8s.io"
NRT_LIST = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
_WORKLOADS = ("DaemonSet", "Deployment")

Report = Callable[[Outcome], None]
ProgressFn = Callable[[str, Readiness], None]


class ClusterError(OperationFailed):
    """Deploy or remove failed; the message names the objects and the API server's reasons."""


@dataclass
class Session:
    client: Client
    http: httpx2.Client
    mapper: RestMapper


@contextlib.contextmanager
def connect(kubeconfig: str | None = None, context: str | None = None, timeout: float = 30.0) -> Iterator[Session]:
    """Clients for one command; raises `knuma.kube.client.KubeConfigError` on a bad kubeconfig."""
    config = load_config(kubeconfig, context)
    client = sync_client(kubeconfig, context, field_manager=FIELD_MANAGER, timeout=timeout)
    http = http_client(config=config, timeout=timeout)
    try:
        yield Session(client, http, RestMapper(http))
    finally:
        http.close()
        client.close()


@dataclass(frozen=True, slots=True)
class WaitSettings:
    enabled: bool = False
    timeout: float = 120.0
    interval: float = 2.0
    progress: ProgressFn | None = field(default=None, compare=False)


def control_plane_replicas(client: Client) -> int:
    """`-R -1`: one replica per control-plane node, at least 1 and at most 3 (a leader and two standbys)."""
    nodes = list(client.list(Node, labels={"node-role.kubernetes.io/control-plane": ""}))
    return max(1, min(3, len(nodes)))


def _error(action: str, obj: Manifest, err: Exception) -> str:
    reason = str(err)
    if isinstance(err, KubeApiError):
        reason = err.summary
    return f"{action} {object_ref(obj)}: {reason}"


def deploy(
    session: Session,
    components: list[Component],
    options: DeployOptions,
    *,
    dry_run: bool = False,
    wait: WaitSettings = WaitSettings(),
    report: Report = lambda outcome: None,
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    new_namespaces: set[str] = set()  # dry run: namespaces that would be created, so their content cannot be asked
    for component in Component:
        if component not in components:
            continue
        objects = render_component(component, options)
        for obj in objects:
            ns = obj["metadata"].get("namespace")
            try:
                if dry_run and ns in new_namespaces:
                    outcome = Outcome(object_ref(obj), Change.CREATED, _new_object_diff(obj))
                else:
                    outcome = apply_object(
                        session.client, session.mapper, obj, field_manager=FIELD_MANAGER, dry_run=dry_run
                    )
            except (KubeApiError, UnknownKindError) as err:
                raise ClusterError(_error("cannot apply", obj, err) + _after(outcomes)) from err
            if dry_run and obj["kind"] == "Namespace" and outcome.change is Change.CREATED:
                new_namespaces.add(obj["metadata"]["name"])
            outcomes.append(outcome)
            report(outcome)
            if obj["kind"] == "CustomResourceDefinition" and not dry_run:
                _wait(session, [obj], WaitSettings(True, wait.timeout, min(wait.interval, 0.5), wait.progress))
                group = obj["spec"]["group"]
                for version in obj["spec"]["versions"]:
                    session.mapper.forget(f"{group}/{version['name']}")
        if wait.enabled and not dry_run:
            _wait(session, [o for o in objects if o["kind"] in _WORKLOADS], wait)
    return outcomes


def _after(outcomes: list[Outcome]) -> str:
    done = sum(1 for o in outcomes)
    return f" ({done} objects applied before it; run the command again once the cause is fixed)" if done else ""


def _new_object_diff(obj: Manifest) -> list[str]:
    ref = object_ref(obj)
    lines = object_lines(stripped(obj))
    return [f"--- live/{ref}", f"+++ applied/{ref}", *(f"+{line}" for line in lines)]


def _wait(session: Session, objects: list[dict[str, Any]], wait: WaitSettings, *, gone: bool = False) -> None:
    if not objects:
        return
    try:
        wait_for(
            session.client,
            session.mapper,
            objects,
            gone=gone,
            timeout=wait.timeout,
            interval=wait.interval,
            on_progress=wait.progress,
        )
    except WaitTimeout as err:
        raise ClusterError(str(err)) from err


def nrt_objects(session: Session) -> int:
    """How many NodeResourceTopology objects the cluster holds (0 when the CRD is not served)."""
    try:
        body = rest.request_sync(session.http, "GET", NRT_LIST, params={"limit": "500"})
    except NotFound:
        return 0
    remaining = (body.get("metadata") or {}).get("remainingItemCount") or 0
    return len(body.get("items") or []) + int(remaining)


def crd_in_use_warning(count: int) -> str:
    return (
        f"kept CustomResourceDefinition {NRT_CRD}: {count} NodeResourceTopology object(s) exist, published by "
        "exporters that still run (another deployment, the operator, or `knuma up`'s nodes), and deleting the CRD "
        "deletes them all. Stop those first, or pass --all to delete it anyway"
    )


def remove(
    session: Session,
    components: list[Component],
    options: DeployOptions,
    *,
    dry_run: bool = False,
    wait: WaitSettings = WaitSettings(),
    report: Report = lambda outcome: None,
    delete_crd_in_use: bool = False,
    warn: Callable[[str], None] = lambda message: None,
) -> list[Outcome]:
    """Delete `components` in reverse order. The NRT CRD is kept (`Change.KEPT`, with a `warn`ing) while NRT objects
    exist, unless `delete_crd_in_use`; when the API component alone was asked for, keeping it is a `ClusterError`."""
    outcomes: list[Outcome] = []
    failures: list[str] = []
    for component in reversed(Component):
        if component not in components:
            continue
        objects = render_component(component, options)
        deleted: list[Manifest] = []
        for obj in reversed(objects):
            is_nrt_crd = obj["kind"] == "CustomResourceDefinition" and obj["metadata"]["name"] == NRT_CRD
            if is_nrt_crd and not delete_crd_in_use:
                in_use = nrt_objects(session)
                if in_use:
                    message = crd_in_use_warning(in_use)
                    if components == [component]:
                        failures.append(message)
                        continue
                    warn(message)
                    outcome = Outcome(object_ref(obj), Change.KEPT)
                    outcomes.append(outcome)
                    report(outcome)
                    continue
            try:
                outcome = delete_object(session.client, session.mapper, obj, dry_run=dry_run)
            except UnknownKindError:
                outcome = Outcome(object_ref(obj), Change.ABSENT)  # a kind the cluster does not serve has no objects
            except KubeApiError as err:
                failures.append(_error("cannot delete", obj, err))
                continue
            outcomes.append(outcome)
            report(outcome)
            if outcome.change is Change.DELETED:
                deleted.append(obj)
        waited = [o for o in deleted if o["kind"] in ("Namespace", "CustomResourceDefinition", *_WORKLOADS)]
        if wait.enabled and not dry_run and waited:
            try:
                _wait(session, waited, wait, gone=True)
            except ClusterError as err:
                failures.append(str(err))
    if failures:
        raise ClusterError("\n".join(failures))
    return outcomes
