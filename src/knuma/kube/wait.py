"""Waiting for objects to become ready or to disappear, and saying why they are not.

Readiness follows what kubectl and the upstream deployer check, with two fixes: a DaemonSet that no node should run
(`desiredNumberScheduled == 0`) is ready rather than waited on forever, and a rollout counts only once the controller
has seen the latest generation (`observedGeneration`), so a just-applied change is not mistaken for done. A timeout
names the object and why it is not ready: replica counts, the pods' phases and waiting reasons, and recent Warning
events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lightkube import Client
from lightkube.resources.core_v1 import Event, Pod

from knuma.errors import OperationFailed
from knuma.kube.apply import get_object
from knuma.kube.client import lightkube_errors
from knuma.kube.errors import KubeApiError
from knuma.kube.resources import RestMapper, object_ref

__all__ = ["Readiness", "WaitTimeout", "readiness", "wait_for"]


@dataclass(frozen=True, slots=True)
class Readiness:
    ready: bool
    detail: str = ""


class WaitTimeout(OperationFailed, TimeoutError):
    """An object did not become ready (or go away) in time; the message says which and why."""


def _cond(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def crd_readiness(obj: dict[str, Any]) -> Readiness:
    cond = _cond(obj.get("status") or {}, "Established")
    if cond and cond.get("status") == "True":
        return Readiness(True, "established")
    return Readiness(False, f"not Established ({(cond or {}).get('message') or 'no condition yet'})")


def daemonset_readiness(obj: dict[str, Any]) -> Readiness:
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation", 0)
    if status.get("observedGeneration", 0) < generation or "desiredNumberScheduled" not in status:
        return Readiness(False, "not yet observed by the DaemonSet controller")
    desired = status.get("desiredNumberScheduled", 0)
    ready = status.get("numberReady", 0)
    updated = status.get("updatedNumberScheduled", 0)
    detail = f"{ready}/{desired} pods ready, {updated}/{desired} updated"
    if desired == 0:
        return Readiness(True, "no node selected to run it (0 desired)")
    return Readiness(ready == desired and updated == desired, detail)


def deployment_readiness(obj: dict[str, Any]) -> Readiness:
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation", 0)
    want = (obj.get("spec") or {}).get("replicas", 1)
    if status.get("observedGeneration", 0) < generation:
        return Readiness(False, "not yet observed by the Deployment controller")
    updated = status.get("updatedReplicas", 0)
    available = status.get("availableReplicas", 0)
    total = status.get("replicas", 0)
    detail = f"{available}/{want} available, {updated}/{want} updated"
    return Readiness(updated == want and available == want and total == want, detail)


def readiness(obj: dict[str, Any] | None) -> Readiness:
    """Whether a live object is ready, for the kinds that have a notion of it (others are ready once they exist)."""
    if obj is None:
        return Readiness(False, "does not exist")
    check = {
        "CustomResourceDefinition": crd_readiness,
        "DaemonSet": daemonset_readiness,
        "Deployment": deployment_readiness,
    }.get(obj.get("kind", ""))
    return check(obj) if check else Readiness(True, "exists")


def why_not_ready(client: Client, obj: dict[str, Any]) -> list[str]:
    """The pods of a workload and recent Warning events about it and its pods, one line each."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    lines: list[str] = []
    if obj.get("kind") not in ("DaemonSet", "Deployment") or not ns:
        return lines
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    pod_names: set[str] = set()
    try:
        with lightkube_errors():
            pods = list(client.list(Pod, namespace=ns, labels=selector))
    except KubeApiError as err:
        return [f"cannot list its pods: {err.message}"]
    if not pods:
        lines.append("no pods created")
    for pod in pods[:10]:
        name = pod.metadata.name if pod.metadata else "?"
        pod_names.add(str(name))
        status = pod.status
        phase = status.phase if status and status.phase else "Unknown"
        reasons = []
        for cond in (status.conditions if status else None) or []:
            if cond.status == "False" and cond.reason:
                reasons.append(f"{cond.type}={cond.reason}: {cond.message or ''}".rstrip(": "))
        for cs in (status.containerStatuses if status else None) or []:
            waiting = cs.state.waiting if cs.state else None
            if waiting and waiting.reason:
                reasons.append(f"{cs.name} {waiting.reason}: {waiting.message or ''}".rstrip(": "))
        lines.append(f"pod {name}: {phase}" + (f" ({'; '.join(reasons)})" if reasons else ""))
    try:
        with lightkube_errors():
            events = [
                e
                for e in client.list(Event, namespace=ns)
                if e.type == "Warning"
                and e.involvedObject is not None
                and (e.involvedObject.name == md.get("name") or e.involvedObject.name in pod_names)
            ]
    except KubeApiError:
        events = []
    for event in events[-5:]:
        lines.append(f"event {event.involvedObject.kind}/{event.involvedObject.name}: {event.reason}: {event.message}")
    return lines


def wait_for(
    client: Client,
    mapper: RestMapper,
    objects: list[dict[str, Any]],
    *,
    gone: bool = False,
    timeout: float = 120.0,
    interval: float = 2.0,
    on_progress: Callable[[str, Readiness], None] | None = None,
) -> None:
    """Poll until every object is ready (or, with `gone`, deleted); raise `WaitTimeout` naming the laggards."""
    deadline = time.monotonic() + timeout
    pending = list(objects)
    while True:
        still: list[tuple[dict[str, Any], Readiness, dict[str, Any] | None]] = []
        for obj in pending:
            live = get_object(client, mapper, obj)
            state = Readiness(live is None, "deleting") if gone else readiness(live)
            if on_progress:
                on_progress(object_ref(obj), state)
            if not state.ready:
                still.append((obj, state, live))
        pending = [obj for obj, _, _ in still]
        if not pending:
            return
        if time.monotonic() >= deadline:
            lines = []
            verb = "still exists" if gone else "not ready"
            for obj, state, live in still:
                lines.append(f"{object_ref(obj)} {verb} after {timeout:g}s: {state.detail}")
                if not gone and live is not None:
                    lines += [f"  {line}" for line in why_not_ready(client, live)]
            raise WaitTimeout("\n".join(lines))
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
