"""Which pods on this node are terminal (`Succeeded` or `Failed`), so that their resources are not counted.

Kubelets before 1.34 (or with `KubeletPodResourcesListUseActivePods` off) list *every* pod they know in
PodResources `List`, terminated ones included, with the exclusive CPUs, memory and devices they once had
(kubernetes#119423), although the kubelet's managers have given those back. A completed Job pod can keep "holding" its
CPUs that way until someone deletes it, and the scheduler, which skips terminal pods, computes a different pod-set
fingerprint than the one published.

The kubelet's API cannot tell: PodResources carries no phase, and `Get` exists (beta) only from 1.34, where `List`
is already fixed. The phase lives in the API server, so the exporter keeps a pod informer scoped to its node
(field selector `spec.nodeName=<node>`), as nfd-topology-updater does, and keeps only each pod's phase. RTE's
`--exclude-terminal-pods` selects `status.phase==Failed,status.phase==Succeeded` instead; comma-separated field
selectors are ANDed, so that informer matches no pod and filters nothing.

Pods the informer has not seen (just created, or the informer has not synced yet) are kept: counting a pod too many
makes the scheduler cautious for one update, dropping one would make it send a pod the kubelet rejects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx2

from knuma.api.types import JsonObj
from knuma.errors import OperationFailed
from knuma.kube.informer import Informer
from knuma.kube.tasks import cancel_and_wait
from knuma.podresources.model import Pod

__all__ = [
    "TERMINAL_PHASES",
    "PodListError",
    "PodPhases",
    "drop_terminal",
    "field_selector",
    "list_terminal",
    "terminal_names",
]

log = logging.getLogger("knuma.exporter.podphases")

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
PODS_PATH = "/api/v1/pods"
PAGE_SIZE = 50
"""Pods per list page: whole pod objects are decoded only a page at a time before being slimmed, which keeps the
node agent's peak memory low on a node with hundreds of pods (500 per page costs about 3 MiB more)."""


def field_selector(node_name: str) -> str:
    return f"spec.nodeName={node_name}"


def drop_terminal(pods: Sequence[Pod], terminal: frozenset[tuple[str, str]]) -> list[Pod]:
    """The pods of a `List` answer without the terminal ones (pure)."""
    if not terminal:
        return list(pods)
    return [pod for pod in pods if (pod.namespace, pod.name) not in terminal]


def _slim(obj: JsonObj) -> JsonObj:
    """Only what the exporter needs of a pod: its identity and phase (a pod in JSON is kilobytes)."""
    meta = obj.get("metadata") or {}
    return {
        "metadata": {
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "status": {"phase": (obj.get("status") or {}).get("phase", "")},
    }


def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class PodPhases:
    """A node-scoped pod informer that remembers each pod's phase and reports pods turning terminal.

    `on_terminal` is called (on the informer's task) whenever a pod becomes terminal or a terminal pod appears, so
    the daemon can publish at once rather than at its next tick.
    """

    def __init__(
        self,
        http: httpx2.AsyncClient,
        node_name: str,
        on_terminal: Callable[[], None] = lambda: None,
        *,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.node_name = node_name
        self.on_terminal = on_terminal
        self.informer = Informer(
            http,
            PODS_PATH,
            self,
            field_selector=field_selector(node_name),
            transform=_slim,
            on_error=on_error,
            page_size=PAGE_SIZE,
        )

    @property
    def synced(self) -> asyncio.Event:
        return self.informer.synced

    async def run(self) -> None:
        await self.informer.run()

    def terminal(self) -> frozenset[tuple[str, str]]:
        """`(namespace, name)` of the pods of this node whose phase is Succeeded or Failed."""
        return frozenset(_key(obj) for obj in self.informer.store.values() if _phase(obj) in TERMINAL_PHASES)

    # informer handler
    def on_add(self, obj: JsonObj) -> None:
        # the first list only fills the store: the update waiting for it reads the result, no new update is needed
        if _phase(obj) in TERMINAL_PHASES and self.informer.synced.is_set():
            self.on_terminal()

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        if _phase(new) in TERMINAL_PHASES and _phase(old) not in TERMINAL_PHASES:
            log.debug("pod %s/%s is %s", *_key(new), _phase(new))
            self.on_terminal()

    def on_delete(self, obj: JsonObj) -> None:
        pass  # the kubelet drops a deleted pod from List by itself; it was already excluded if terminal


class PodListError(OperationFailed):
    """The pods of the node could not be listed (API server unreachable, or RBAC)."""


async def list_terminal(http: httpx2.AsyncClient, node_name: str, timeout: float = 30.0) -> frozenset[tuple[str, str]]:
    """One list, for `--once`: the terminal pods of the node now. Raises `PodListError` on the first failure."""
    failed = asyncio.Event()
    errors: list[str] = []

    def on_error(message: str) -> None:
        errors.append(message)
        failed.set()

    phases = PodPhases(http, node_name, on_error=on_error)
    task = asyncio.create_task(phases.run())
    waiters = {asyncio.create_task(phases.synced.wait()), asyncio.create_task(failed.wait())}
    try:
        await asyncio.wait({task, *waiters}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if phases.synced.is_set():
            return phases.terminal()
        reason = errors[0] if errors else f"no answer within {timeout:g}s"
        raise PodListError(f"cannot list the pods of node {node_name} (needed by --exclude-terminal-pods): {reason}")
    finally:
        with contextlib.suppress(Exception):  # the answer (or PodListError) above is what the caller gets
            await cancel_and_wait([task, *waiters])


def terminal_names(pods: Iterable[tuple[str, str]]) -> str:
    """For logs: `ns/name, ...`."""
    return ", ".join(f"{ns}/{name}" for ns, name in sorted(pods))
