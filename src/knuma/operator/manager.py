"""The operator's loop: informers wake a reconcile pass; a resync period catches whatever no watch reported.

Informers (`knuma.kube.informer`) watch the two custom resources and the workloads and ConfigMaps the operator owns
(label `nodetopology.openshift.io/owned-by`), so an edited CR or a deleted or edited DaemonSet is reconciled within
a fraction of a second. Events are coalesced: a burst (our own applies included) gives one pass. Passes run in a
worker thread, one at a time; a failing pass (API server unreachable) is logged and retried with backoff. `stop`
ends the loop between passes (SIGINT / SIGTERM in the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import httpx2

from knuma.api.numaresources import API_VERSION, OPERATOR_PLURAL, SCHEDULER_PLURAL
from knuma.api.numaresources_crd import operator_crds
from knuma.deploy.cluster import Session
from knuma.kube.apply import apply_object
from knuma.kube.informer import Backoff, Informer
from knuma.kube.wait import wait_for
from knuma.operator.desired import OWNED_BY_LABEL
from knuma.operator.reconciler import FIELD_MANAGER, Reconciler, Settings

__all__ = ["LoopSettings", "install_crds", "run"]

log = logging.getLogger("knuma.operator")

#: Debounce window: events within it make one pass.
COALESCE = 0.05


@dataclass(frozen=True, slots=True)
class LoopSettings:
    resync: float = 30.0
    """Reconcile at least this often, even without events."""
    install_crds: bool = True


def install_crds(session: Session) -> None:
    """Apply the operator's own CRDs and wait until they are served (what OLM does for upstream's operator)."""
    crds = operator_crds()
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


def _paths(namespace: str) -> list[tuple[str, str | None]]:
    return [
        (f"/apis/{API_VERSION}/{OPERATOR_PLURAL}", None),
        (f"/apis/{API_VERSION}/{SCHEDULER_PLURAL}", None),
        (f"/apis/apps/v1/namespaces/{namespace}/daemonsets", OWNED_BY_LABEL),
        (f"/apis/apps/v1/namespaces/{namespace}/deployments", OWNED_BY_LABEL),
        (f"/api/v1/namespaces/{namespace}/configmaps", OWNED_BY_LABEL),
    ]


async def run(
    session: Session,
    http: httpx2.AsyncClient,
    settings: Settings,
    stop: asyncio.Event,
    loop_settings: LoopSettings = LoopSettings(),
) -> None:
    """Until `stop` is set: reconcile on events and every `resync` seconds."""
    if loop_settings.install_crds:
        await asyncio.to_thread(install_crds, session)
    wake = asyncio.Event()
    handler = _Wake(wake)
    informers = [
        Informer(http, path, handler, label_selector=selector, watch_timeout=60, on_error=log.warning)
        for path, selector in _paths(settings.namespace)
    ]
    tasks = [asyncio.create_task(i.run(), name=f"informer {i.path}") for i in informers]
    reconciler = Reconciler(session, settings)
    backoff = Backoff(initial=1.0, maximum=30.0)
    log.info("operator started: operands in namespace %s", settings.namespace)
    try:
        while not stop.is_set():
            wake.clear()
            try:
                requeue = await asyncio.to_thread(reconciler.reconcile_all)
                backoff.reset()
            except (httpx2.TransportError, OSError) as err:
                requeue = backoff.next()
                log.error("cannot reach the API server (%s); retrying in %.0fs", err, requeue)
            except Exception as err:  # a pass must never kill the operator; the next one retries
                requeue = backoff.next()
                log.exception("reconcile failed: %s; retrying in %.0fs", err, requeue)
            timeout = loop_settings.resync if requeue is None else min(requeue, loop_settings.resync)
            await _first(stop, wake, timeout)
            if wake.is_set() and not stop.is_set():
                await asyncio.sleep(COALESCE)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        log.info("operator stopped")


async def _first(stop: asyncio.Event, wake: asyncio.Event, timeout: float) -> None:
    waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
