"""The pods/eviction subresource with PodDisruptionBudgets, as kube-apiserver's `EvictionREST.Create`
(`pkg/registry/core/pod/storage/eviction.go`): what `kubectl drain` and other evicting clients rely on.

- A pod that is Pending, finished or already being deleted is deleted without looking at budgets (`canIgnorePDB`).
- A pod no budget covers is deleted; one that two budgets cover is refused (500, as upstream).
- A pod that is not Ready while its budget already has the healthy pods it wants is deleted without spending it.
- Otherwise `checkAndDecrement`: a budget its controller has not processed since its last change (status
  `observedGeneration` behind `generation`) or without disruptions left answers 429 `TooManyRequests` with a
  `DisruptionBudget` cause; else one disruption is spent and the pod recorded in `status.disruptedPods` (so the
  disruption controller stops counting it as healthy) before the pod is deleted.

The Eviction body is read as upstream reads it: its `metadata.name` must be the pod's (400 otherwise), and its
`deleteOptions` apply to the deletion: `preconditions` (409 when the pod's uid or resourceVersion differ),
`propagationPolicy`, `gracePeriodSeconds` (the deletion is graceful, `knuma.local.apiserver.graceful`) and `dryRun`
(`propagateDryRun`: the request's and the body's must agree; a dry run checks the budget and deletes nothing, spends
nothing). Not modelled: retries on conflicts (the server is one process: nothing races between the read and the
write).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from knuma.api.disruption import DisruptionBudget, with_disruption_allowed_condition
from knuma.api.pod import is_pod_ready
from knuma.api.types import JsonObj
from knuma.local.apiserver import errors
from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.resources import ResourceType
from knuma.local.apiserver.rest import ObjectService, WriteOptions, now

__all__ = ["evict"]

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
SUCCESS: JsonObj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _too_many_requests(cause: str, retry_after: int) -> ApiError:
    """`errors.NewTooManyRequests` with a `DisruptionBudget` cause."""
    details: JsonObj = {"causes": [{"reason": "DisruptionBudget", "message": cause}], "retryAfterSeconds": retry_after}
    return ApiError(429, "TooManyRequests", VIOLATION, details=details)


def evict(service: ObjectService, namespace: str, name: str, body: Any, opts: WriteOptions) -> tuple[JsonObj, int]:
    """Evict pod `namespace/name` as the Eviction `body` asks: (the answer, its HTTP status)."""
    pods = service.registry.get("", "v1", "pods")
    budgets_type = service.registry.get("policy", "v1", "poddisruptionbudgets")
    assert pods is not None and budgets_type is not None
    options, opts = _delete_options(body, name, opts)
    pod = service.get(pods, namespace, name)
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed", "Pending") or meta.get("deletionTimestamp"):
        service.delete(pods, namespace, name, options, opts)
        return SUCCESS, 201
    covering = [
        obj
        for obj in service.list_objects(budgets_type, namespace).items
        if DisruptionBudget.from_manifest(obj).selects(namespace, meta.get("labels") or {})
    ]
    if len(covering) > 1:
        failure = {**SUCCESS, "status": "Failure", "code": 500}
        failure["message"] = MORE_THAN_ONE
        return failure, 500
    if covering:
        budget = covering[0]
        budget_status = budget.get("status") or {}
        healthy, desired = budget_status.get("currentHealthy", 0), budget_status.get("desiredHealthy", 0)
        unready_and_enough_healthy = not is_pod_ready(pod) and desired > 0 and healthy >= desired
        if not unready_and_enough_healthy:  # an unready pod does not count towards healthy: nothing to spend
            _spend(service, budgets_type, budget, name, opts)
    service.delete(pods, namespace, name, options, opts)
    return SUCCESS, 201


def _delete_options(body: Any, name: str, opts: WriteOptions) -> tuple[JsonObj, WriteOptions]:
    """The Eviction's `deleteOptions` and the write options with its dry run (`EvictionREST.Create`'s checks and
    `propagateDryRun`)."""
    if not isinstance(body, Mapping) or body.get("kind", "Eviction") != "Eviction":
        kind = body.get("kind") if isinstance(body, Mapping) else type(body).__name__
        raise errors.bad_request(f"not a Eviction object: {kind}")
    metadata = body.get("metadata")
    if (metadata.get("name") if isinstance(metadata, Mapping) else None) != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions") or {}
    if not isinstance(options, Mapping):
        raise errors.bad_request("deleteOptions: expected an object")
    requested = ["All"] if opts.dry_run else []
    content = list(options.get("dryRun") or [])
    if content and requested and content != requested:
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: [{' '.join(requested)}] and [{' '.join(content)}]"
        )
    if content and content != ["All"]:
        raise errors.bad_request(f'deleteOptions.dryRun: Unsupported value: "{content[0]}": supported values: "All"')
    if content and not opts.dry_run:
        opts = dataclasses.replace(opts, dry_run=True)
    return dict(options), opts


def _spend(
    service: ObjectService, budgets_type: ResourceType, budget: JsonObj, pod_name: str, opts: WriteOptions
) -> None:
    """`checkAndDecrement`."""
    meta, status = budget.get("metadata") or {}, dict(budget.get("status") or {})
    budget_name = str(meta.get("name") or "")
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        raise _too_many_requests(f"The disruption budget {budget_name} is still being processed by the server.", 10)
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise errors.admission_forbidden(
            "policy", "poddisruptionbudget", budget_name, "pdb disruptions allowed is negative"
        )
    if allowed == 0:
        message = (
            f"The disruption budget {budget_name} needs {status.get('desiredHealthy', 0)} healthy pods and has "
            f"{status.get('currentHealthy', 0)} currently"
        )
        raise _too_many_requests(message, 0)
    if opts.dry_run:
        return  # checked, not spent (`checkAndDecrement` with dryRun)
    status["disruptionsAllowed"] = allowed - 1
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now()}
    if allowed - 1 == 0:  # the budget spent: DisruptionAllowed turns False until the controller says otherwise
        status["conditions"] = with_disruption_allowed_condition(
            status.get("conditions"), 0, int(status.get("observedGeneration", 0) or 0), now()
        )
    service.update(budgets_type, str(meta.get("namespace")), budget_name, {**budget, "status": status}, opts, "status")
