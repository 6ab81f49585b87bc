"""The daemon's side of DynamicResources: informers that keep `DeviceState` current, and PreBind / Unreserve,
which write to ResourceClaims through the API server.

PreBind follows upstream's `bindClaim` (`dynamicresources.go`): for a claim this cycle allocated, add the
`resource.kubernetes.io/delete-protection` finalizer (so the claim cannot vanish while allocated), then write
`status.allocation` (with its `allocationTimestamp`, from which devices' binding conditions time out) and
`status.reservedFor` with the pod as consumer; for a claim already allocated (shared), add
the pod to `reservedFor`. Every write carries the resourceVersion it read, so a concurrent writer makes it fail
(409) instead of being overwritten; the pod is then retried. Unreserve after a failed bind takes the pod out of
`reservedFor` again and clears an allocation nobody else uses.

A pod's extended resources served by DRA (KEP-5004) get their claim here too: `create_extended_claim` creates it
(`createExtendedResourceClaimInAPI`, with the finalizer already set, which upstream adds by an update right after),
`pre_bind` then writes its allocation like any other claim's, and `record_extended_claim` writes the pod's
`status.extendedResourceClaimStatus` (`patchPodExtendedResourceClaimStatus`), which the kubelet reads to find it.
A failed bind deletes the created claim (`delete_claim`, as `unreserveExtendedResourceClaim`), as does a later
attempt that finds one left behind (upstream's PostFilter).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from knuma.api.dra.resourceclaim import AllocationResult
from knuma.api.pod import Pod
from knuma.kube import rest
from knuma.kube.discovered import DiscoveredInformer
from knuma.kube.errors import KubeApiError
from knuma.kube.events import timestamp
from knuma.kube.informer import Informer
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_extended import ExtendedClaim

__all__ = [
    "FINALIZER",
    "DeviceInformers",
    "create_extended_claim",
    "delete_claim",
    "pre_bind",
    "record_extended_claim",
    "unreserve_claims",
]

log = logging.getLogger("knuma.scheduler")

JsonObj = dict[str, Any]
FINALIZER = "resource.kubernetes.io/delete-protection"
API = "/apis/resource.k8s.io/v1"
TAINT_RULE_VERSIONS = ("v1", "v1beta2", "v1alpha3")
"""Where DeviceTaintRules are served, preferred first (v1alpha3 in 1.34-1.35 behind `DRADeviceTaints`, v1beta2 from
1.36, v1 once GA)."""


class _Handler:
    def __init__(
        self, upsert: Callable[[JsonObj], None], delete: Callable[[JsonObj], None], changed: Callable[[], None]
    ):
        self.upsert, self.delete, self.changed = upsert, delete, changed

    def on_add(self, obj: JsonObj) -> None:
        self.upsert(obj)
        self.changed()

    def on_update(self, old: JsonObj, new: JsonObj) -> None:
        self.upsert(new)
        self.changed()

    def on_delete(self, obj: JsonObj) -> None:
        self.delete(obj)
        self.changed()


class DeviceInformers:
    """ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules into `state`; `changed` after each event
    (the daemon moves unschedulable pods back to the active queue: a freed device or a new slice can make them fit).
    DeviceTaintRules are watched at the version the cluster serves, if any (`DiscoveredInformer`)."""

    def __init__(self, http: httpx2.AsyncClient, state: DeviceState, changed: Callable[[], None]) -> None:
        self.claims = Informer(http, f"{API}/resourceclaims", _Handler(state.set_claim, state.delete_claim, changed))
        self.slices = Informer(http, f"{API}/resourceslices", _Handler(state.set_slice, state.delete_slice, changed))
        self.classes = Informer(http, f"{API}/deviceclasses", _Handler(state.set_class, state.delete_class, changed))
        rules = _Handler(state.set_taint_rule, state.delete_taint_rule, changed)
        self.taint_rules = DiscoveredInformer(http, "resource.k8s.io", TAINT_RULE_VERSIONS, "devicetaintrules", rules)

    @property
    def all(self) -> tuple[Informer | DiscoveredInformer, ...]:
        return (self.claims, self.slices, self.classes, self.taint_rules)


def _claim_path(key: str) -> str:
    namespace, _, name = key.partition("/")
    return f"{API}/namespaces/{namespace}/resourceclaims/{name}"


async def pre_bind(http: httpx2.AsyncClient, pod: Pod, claims: Mapping[str, AllocationResult | None]) -> str:
    """Write every claim of `pod` before binding. `claims`: claim key -> the allocation this cycle chose (None for a
    claim already allocated). Returns "" on success, else what failed (for `FailedScheduling`)."""
    consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
    for key, allocation in claims.items():
        path = _claim_path(key)
        stage = ""
        try:
            claim = await rest.get(http, path)
            metadata = claim.setdefault("metadata", {})
            status = claim.setdefault("status", {})
            if allocation is not None and not status.get("allocation"):
                if FINALIZER not in (metadata.get("finalizers") or []):
                    metadata["finalizers"] = [*(metadata.get("finalizers") or []), FINALIZER]
                    stage = "adding finalizer: "
                    claim = await rest.put(http, path, claim)
                    status = claim.setdefault("status", {})
                status["allocation"] = {**allocation.to_dict(), "allocationTimestamp": timestamp()}
            elif not status.get("allocation"):
                return f"resourceclaim {key} is not allocated any more"
            reserved = list(status.get("reservedFor") or [])
            if not any(r.get("uid") == pod.uid for r in reserved):
                status["reservedFor"] = [*reserved, consumer]
            stage = "writing the allocation: "
            await rest.put(http, f"{path}/status", claim)
        except KubeApiError as err:
            return f"resourceclaim {key}: {stage}{err.message}"
    return ""


async def unreserve_claims(http: httpx2.AsyncClient, pod: Pod, keys: list[str]) -> None:
    """Take `pod` out of the claims' `reservedFor`; clear an allocation no other consumer holds (best effort: the
    resourceclaim controller does the same for pods that are gone)."""
    for key in keys:
        path = _claim_path(key)
        try:
            try:
                claim = await rest.get(http, path)
            except KubeApiError as err:
                if err.status is None:
                    raise
                continue  # gone or unreadable: nothing to take back
            status = claim.setdefault("status", {})
            reserved = [r for r in status.get("reservedFor") or [] if r.get("uid") != pod.uid]
            if reserved == list(status.get("reservedFor") or []):
                continue
            if reserved:
                status["reservedFor"] = reserved
            else:  # the allocation goes, and what drivers reported of its devices (it must name allocated ones)
                for name in ("reservedFor", "allocation", "devices"):
                    status.pop(name, None)
            await rest.put(http, f"{path}/status", claim)
        except KubeApiError as err:
            log.warning("unreserving %s for %s: %s", key, pod.key, err)


async def create_extended_claim(http: httpx2.AsyncClient, extended: ExtendedClaim) -> tuple[str, str]:
    """Create the claim for the pod's extended resources served by DRA; returns (its key, "") or ("", what
    failed)."""
    manifest = {**extended.manifest, "metadata": {**extended.manifest["metadata"], "finalizers": [FINALIZER]}}
    namespace = manifest["metadata"]["namespace"]
    try:
        created = await rest.post(http, f"{API}/namespaces/{namespace}/resourceclaims", manifest)
    except KubeApiError as err:
        return "", f"creating the claim for extended resources {', '.join(extended.resources)}: {err.message}"
    return f"{namespace}/{(created.get('metadata') or {}).get('name')}", ""


async def record_extended_claim(http: httpx2.AsyncClient, pod: Pod, key: str, extended: ExtendedClaim) -> str:
    """Write the pod's `status.extendedResourceClaimStatus`: the claim's name and which container gets which of
    its requests. Returns "" or what failed."""
    status = {"resourceClaimName": key.partition("/")[2], "requestMappings": [dict(m) for m in extended.mappings]}
    try:
        await rest.patch(
            http,
            f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
            {"status": {"extendedResourceClaimStatus": status}},
        )
    except KubeApiError as err:
        return f"update pod {pod.key} ExtendedResourceClaimStatus: {err.message}"
    return ""


async def delete_claim(http: httpx2.AsyncClient, key: str) -> None:
    """Delete a claim the scheduler created, its finalizer removed first (`deleteClaim`); best effort (the garbage
    collector deletes it with its pod otherwise)."""
    path = _claim_path(key)
    try:
        claim = await rest.get(http, path)
        metadata = claim.setdefault("metadata", {})
        if FINALIZER in (metadata.get("finalizers") or []):
            metadata["finalizers"] = [f for f in metadata["finalizers"] if f != FINALIZER]
            await rest.put(http, path, claim)
        await rest.delete(http, path)
    except KubeApiError as err:
        if err.status != 404:
            log.warning("deleting resourceclaim %s: %s", key, err)
