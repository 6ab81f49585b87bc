"""The operator's loop: informers wake a reconcile pass; a resync period catches whatever no watch reported.

Informers (`knuma.kube.informer`) watch the two custom resources and the workloads and ConfigMaps the operator owns
(label `nodetopology.openshift.io/owned-by`), so an edited CR or a deleted or edited DaemonSet is reconciled within
a fraction of a second; they also watch Nodes (changes that matter to the kubeletconfig controller only) and, where
served, OpenShift KubeletConfigs, so a group's kubelet ConfigMap follows them promptly. Events are coalesced: a
burst (our own applies included) gives one pass. Passes run in a worker thread, one at a time; a failing pass (API
server unreachable) is logged and retried with backoff. `stop` ends the loop between passes (SIGINT / SIGTERM in
the CLI).

With a Lease (`knuma.kube.leaderelection`, client-go's rules), a replica waits to lead before it writes anything
(CRDs included), checks it still leads before every pass, and stops with `OperatorLeaseLost` when it cannot renew in
time, so two replicas never reconcile at once; a graceful stop releases the Lease for the standby to take at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import httpx2

from knuma.api.numaresources import API_VERSION, OPERATOR_PLURAL, SCHEDULER_PLURAL
from knuma.api.numaresources_crd import ConversionWebhook, operator_crds
from knuma.deploy.cluster import Session
from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.apply import apply_object
from knuma.kube.client import transport_error
from knuma.kube.errors import Forbidden, NotFound, Unavailable
from knuma.kube.informer import Backoff, Informer
from knuma.kube.leaderelection import LeaderElector, LeaseConfig
from knuma.kube.tasks import cancel_and_wait
from knuma.kube.wait import wait_for
from knuma.operator.desired import OWNED_BY_LABEL
from knuma.operator.kubeletconfig import KUBELETCONFIGS_PATH, node_signature
from knuma.operator.metrics import OperatorMetrics
from knuma.operator.reconciler import FIELD_MANAGER, Reconciler, Settings

__all__ = ["LoopSettings", "OperatorLeaseLost", "OperatorStartError", "default_identity", "install_crds", "run"]

log = logging.getLogger("knuma.operator")

#: Debounce window: events within it make one pass.
COALESCE = 0.05


@dataclass(frozen=True, slots=True)
class LoopSettings:
    resync: float = 30.0
    """Reconcile at least this often, even without events."""
    install_crds: bool = True
    lease: LeaseConfig | None = None
    """Leader election on this Lease (replicas > 1); None runs without it."""
    identity: str = ""
    """This replica's holder identity (default: host name and a random suffix, as client-go's)."""
    conversion_webhook: ConversionWebhook | None = None
    """Installed CRDs convert through this webhook (`knuma operator --webhook-port`); None: strategy None."""


class OperatorStartError(OperationFailed):
    """The operator cannot start (its metrics port is taken, its CRDs cannot be installed)."""


class OperatorLeaseLost(OperationFailed):
    """This replica could not renew the leader Lease in time and stopped, so that only one replica reconciles."""


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def install_crds(session: Session, webhook: ConversionWebhook | None = None) -> None:
    """Apply the operator's own CRDs and wait until they are served (what OLM does for upstream's operator); with
    `webhook`, their v1alpha1 <-> v1 conversion goes to it."""
    crds = operator_crds(webhook)
    for crd in crds:
        apply_object(session.client, session.mapper, crd, field_manager=FIELD_MANAGER)
    wait_for(session.client, session.mapper, crds, timeout=30.0, interval=0.2)
    session.mapper.forget()


class _Wake:
    """An informer handler that only says "something changed"."""

    def __init__(self, event: asyncio.Event) -> None:
        self.event = event

    def on_add(self, obj: dict[str, Any]) -> None:
        self.event.set()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.event.set()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.event.set()


class _NodeWake(_Wake):
    """Wakes on Nodes added or deleted, and on updates that can change a group's kubelet settings
    (`kubeletconfig.node_signature`), not on heartbeats."""

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if node_signature(old) != node_signature(new):
            self.event.set()


def _paths(namespace: str) -> list[tuple[str, str | None]]:
    return [
        (f"/apis/{API_VERSION}/{OPERATOR_PLURAL}", None),
        (f"/apis/{API_VERSION}/{SCHEDULER_PLURAL}", None),
        (f"/apis/apps/v1/namespaces/{namespace}/daemonsets", OWNED_BY_LABEL),
        (f"/apis/apps/v1/namespaces/{namespace}/deployments", OWNED_BY_LABEL),
        (f"/api/v1/namespaces/{namespace}/configmaps", OWNED_BY_LABEL),
    ]


async def _served(http: httpx2.AsyncClient, path: str) -> bool:
    """Whether the cluster serves (and shows this user) a list: OpenShift's KubeletConfigs exist only there."""
    try:
        await rest.get(http, path, params={"limit": "1"})
    except (NotFound, Forbidden):
        return False
    return True


async def _informers(http: httpx2.AsyncClient, namespace: str, wake: asyncio.Event) -> list[Informer]:
    """The watches that wake a pass: the custom resources and owned objects, Nodes (the kubeletconfig controller's
    groups), and KubeletConfigs where the cluster serves them (checked once at start; the periodic resync reads them
    anyway if their CRD appears later)."""
    handler = _Wake(wake)
    informers = [
        Informer(http, path, handler, label_selector=selector, watch_timeout=60, on_error=log.warning)
        for path, selector in _paths(namespace)
    ]
    informers.append(Informer(http, "/api/v1/nodes", _NodeWake(wake), watch_timeout=60, on_error=log.warning))
    if await _served(http, KUBELETCONFIGS_PATH):
        log.info("watching OpenShift KubeletConfigs")
        informers.append(Informer(http, KUBELETCONFIGS_PATH, handler, watch_timeout=60, on_error=log.warning))
    return informers


async def run(
    session: Session,
    http: httpx2.AsyncClient,
    settings: Settings,
    stop: asyncio.Event,
    loop_settings: LoopSettings = LoopSettings(),
    *,
    metrics: OperatorMetrics | None = None,
    ready: asyncio.Event | None = None,
) -> None:
    """Until `stop` is set: (with a Lease) wait to lead, then reconcile on events and every `resync` seconds.
    `ready` is set while this replica leads and after its first pass; raises `OperatorLeaseLost` when the Lease is
    lost."""
    metrics = metrics or OperatorMetrics()
    ready = ready or asyncio.Event()
    lease = loop_settings.lease
    elector = LeaderElector(http, loop_settings.identity or default_identity(), lease) if lease else None
    lease_name = f"{lease.namespace}/{lease.name}" if lease else "none"
    tasks: list[asyncio.Task[Any]] = []
    try:
        if elector is not None:
            await _check_lease_access(http, elector)
            log.info("waiting to lead: lease %s as %s", lease_name, elector.identity)
            if not await _until(stop, elector.acquire()):
                return
            tasks.append(asyncio.create_task(elector.renew_forever(), name="lease renewal"))
        metrics.leader.labels(lease_name).set(1)
        if loop_settings.install_crds:
            await asyncio.to_thread(install_crds, session, loop_settings.conversion_webhook)
        wake = asyncio.Event()
        informers = await _informers(http, settings.namespace, wake)
        tasks += [asyncio.create_task(i.run(), name=f"informer {i.path}") for i in informers]
        reconciler = Reconciler(session, settings, metrics=metrics)
        backoff = Backoff(initial=1.0, maximum=30.0)
        lost = elector.lost if elector is not None else asyncio.Event()
        log.info("operator started: operands in namespace %s", settings.namespace)
        while not stop.is_set():
            if elector is not None and not elector.still_leading():
                break
            wake.clear()
            try:
                requeue = await asyncio.to_thread(reconciler.reconcile_all)
                backoff.reset()
            except (httpx2.TransportError, OSError, Unavailable) as err:
                requeue = backoff.next()
                metrics.passes_failed.inc()
                # Unavailable names the server and why (`cannot reach the API server at URL (...): reason`)
                problem = transport_error(err) if isinstance(err, httpx2.HTTPError) else err
                if isinstance(problem, Unavailable):
                    log.error("%s; retrying in %.0fs", problem, requeue)
                else:
                    log.error("cannot reach the API server (%s); retrying in %.0fs", problem, requeue)
            except Exception as err:  # a pass must never kill the operator; the next one retries
                requeue = backoff.next()
                metrics.passes_failed.inc()
                log.exception("reconcile failed: %s; retrying in %.0fs", err, requeue)
            ready.set()
            timeout = loop_settings.resync if requeue is None else min(requeue, loop_settings.resync)
            await _first((stop, wake, lost), timeout)
            if lost.is_set():
                break
            if wake.is_set() and not stop.is_set():
                await asyncio.sleep(COALESCE)
        if lost.is_set() and not stop.is_set():
            raise OperatorLeaseLost(f"lost the leader lease {lease_name}; stopping so that only one replica reconciles")
    finally:
        ready.clear()
        metrics.leader.labels(lease_name).set(0)
        with contextlib.suppress(asyncio.CancelledError, Exception):  # the lease is released whatever they did
            await cancel_and_wait(tasks)
        if elector is not None:
            await elector.release()
        log.info("operator stopped")


async def _check_lease_access(http: httpx2.AsyncClient, elector: LeaderElector) -> None:
    """Read the Lease once before waiting for it: the elector retries every error forever (right for a leader that
    loses the API server for a moment), so an unreachable API server (`Unavailable`, reported by the CLI) or a
    missing permission at start-up would look like waiting for another leader."""
    namespace = elector.config.namespace
    lease = f"{namespace}/{elector.config.name}"
    try:
        await rest.get(http, elector.path)
        return
    except NotFound:
        pass
    except Forbidden as err:
        raise OperatorStartError(
            f"cannot read the leader Lease {lease}: forbidden: {err.message}; grant get, create and update on "
            f"leases.coordination.k8s.io in namespace {namespace}, pick another --leader-elect-namespace, "
            "or run one replica with --no-leader-elect"
        ) from None
    try:  # the Lease is created on first acquire: its namespace must exist
        await rest.get(http, f"/api/v1/namespaces/{namespace}")
    except NotFound:
        raise OperatorStartError(
            f"cannot take the leader Lease {lease}: namespace {namespace} does not exist; create it or pick "
            "another --leader-elect-namespace"
        ) from None
    except Forbidden:
        pass  # may not read namespaces: the create will tell


async def _until(stop: asyncio.Event, work: Coroutine[Any, Any, None]) -> bool:
    """Run `work` until it returns (True) or `stop` is set first (False, `work` cancelled)."""
    task = asyncio.create_task(work)
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return task.done() and not task.cancelled() and task.exception() is None


async def _first(events: tuple[asyncio.Event, ...], timeout: float) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
