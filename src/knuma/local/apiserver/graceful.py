"""Graceful pod deletion, as kube-apiserver decides it (`rest.BeforeDelete` in
`staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go` with the pod strategy's `CheckGracefulDelete` in
`pkg/registry/core/pod/strategy.go`).

Deleting a pod that runs on a node does not remove it: the server records when the grace period ends
(`deletionTimestamp`, `deletionGracePeriodSeconds`) and keeps the pod, so its kubelet can stop the containers and
then delete it with a grace period of 0. Until then the pod still holds its node's resources, which is what
kube-scheduler's DefaultPreemption waits for when its victims are terminating. The grace period is the request's
`gracePeriodSeconds`, else the pod's `spec.terminationGracePeriodSeconds`; a pod that is not bound to a node or has
finished goes at once; a negative period counts as 1 second. A pod already terminating keeps its deadline unless a
shorter grace period is asked for (the deadline moves by the difference); a period of 0 then deletes it.

Pure: the store and the garbage collector do the writes (`knuma.local.apiserver.gc.GarbageCollector.delete`).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Literal

from knuma.api.types import JsonObj
from knuma.local.apiserver import errors

__all__ = ["GracefulDeletion", "before_delete"]

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclasses.dataclass(frozen=True)
class GracefulDeletion:
    """What a DELETE does to a pod: `delete` now (finalizers may still hold it), keep it as it is (`pending`: a
    graceful deletion with an earlier or equal deadline is under way) or `mark` it with `metadata` (the new
    `deletionTimestamp`, `deletionGracePeriodSeconds` and `generation`) and keep it for its kubelet."""

    action: Literal["delete", "pending", "mark"]
    metadata: JsonObj = dataclasses.field(default_factory=dict)


def grace_period_option(options: JsonObj) -> int | None:
    """The request's `gracePeriodSeconds`, checked (`ValidateDeleteOptions` decodes it as an int64)."""
    value = options.get("gracePeriodSeconds")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.bad_request(
            f"DeleteOptions.gracePeriodSeconds: expected an integer number of seconds, got {value!r}"
        )
    return 1 if value < 0 else value  # "Negative values will be treated as the value `1s` on the delete path."


def before_delete(pod: JsonObj, options: JsonObj, now: datetime | None = None) -> GracefulDeletion:
    """`rest.BeforeDelete` for a pod: how a DELETE with `options` (DeleteOptions) treats `pod`."""
    md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    asked = grace_period_option(options)
    now = now or datetime.now(UTC)
    if md.get("deletionTimestamp"):
        current = md.get("deletionGracePeriodSeconds")
        if not current:
            return GracefulDeletion("delete")  # a deletion with no grace left (or finalizers hold it): go on
        if asked is None or asked >= current:
            return GracefulDeletion("pending")  # "only a shorter grace period may be provided by a user"
        deadline = _parse(md["deletionTimestamp"]) - timedelta(seconds=current) + timedelta(seconds=asked)
        return GracefulDeletion("mark", {"deletionTimestamp": _format(deadline), "deletionGracePeriodSeconds": asked})
    period = asked if asked is not None else spec.get("terminationGracePeriodSeconds") or 0
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        period = 0  # never ran, or its containers already stopped: nothing to wait for
    period = 1 if period < 0 else int(period)
    if period == 0:
        return GracefulDeletion("delete")
    marked: JsonObj = {
        "deletionTimestamp": _format(now + timedelta(seconds=period)),
        "deletionGracePeriodSeconds": period,
    }
    if md.get("generation", 0) > 0:
        marked["generation"] = md["generation"] + 1
    return GracefulDeletion("mark", marked)


def _parse(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def _format(when: datetime) -> str:
    return when.astimezone(UTC).strftime(TIME_FORMAT)
