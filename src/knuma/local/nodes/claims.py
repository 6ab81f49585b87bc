"""Which DRA devices a pod got, as the kubelet learns it before starting the pod (`PrepareDynamicResources`): the
pod's ResourceClaims (from `spec.resourceClaims` and `status.resourceClaimStatuses`, plus the claim kube-scheduler
created for its DRA-backed extended resources, `status.extendedResourceClaimStatus`), their `status.allocation`,
and the NUMA node of every allocated device of this node.

A pod whose claims are not all allocated and reserved for it is not started yet (the kubelet retries
`PrepareDynamicResources`; `waiting_reason` says why). Each container gets the devices of the claims it lists in
`resources.claims` (the whole claim, or one request of it), and of the extended-resource claim's requests that
`requestMappings` name for it (`Manager.GetResources`), which is what `knuma.topology.admit` aligns.
`container_claims` is what PodResources reports per container (`GetDynamicResources`). `without_dra_backed` is the
pod the kubelet's resource fit check sees: DRA-backed extended resources are not the node's to count.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from knuma.api.resources import is_dra_extended_resource_name
from knuma.podresources.model import ClaimResource, DynamicResource
from knuma.quantity import QuantityError, parse_quantity
from knuma.topology.kubelet import DeviceNUMA

__all__ = [
    "EXTENDED_RESOURCES",
    "claim_names",
    "container_claims",
    "container_devices",
    "extended_claim_name",
    "uses_claims",
    "waiting_reason",
    "without_dra_backed",
]

EXTENDED_RESOURCES = "extended resources"
"""How `waiting_reason` names the extended-resource claim, which has no pod claim name."""


def claim_names(pod: Mapping[str, Any]) -> dict[str, str | None]:
    """Pod claim name -> ResourceClaim name (None while the resourceclaim controller has not created it)."""
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    names: dict[str, str | None] = {}
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = str(entry.get("name") or "")
        direct = entry.get("resourceClaimName")
        names[name] = str(direct) if direct else (str(generated[name]) if generated.get(name) else None)
    return names


def _extended_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    return status if isinstance(status, Mapping) else {}


def extended_claim_name(pod: Mapping[str, Any]) -> str | None:
    """The ResourceClaim kube-scheduler created for the pod's DRA-backed extended resources, if any."""
    name = _extended_status(pod).get("resourceClaimName")
    return str(name) if name else None


def uses_claims(pod: Mapping[str, Any]) -> bool:
    """Whether the kubelet has claims to prepare for the pod: `spec.resourceClaims`, or the extended-resource claim
    (`prepareResources` appends it to the pod's claims when `status.extendedResourceClaimStatus` is set)."""
    return bool((pod.get("spec") or {}).get("resourceClaims")) or extended_claim_name(pod) is not None


def _all_claims(pod: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(pod claim name, ResourceClaim name) of every claim the kubelet prepares, the extended-resource claim last."""
    pairs = list(claim_names(pod).items())
    extended = extended_claim_name(pod)
    if extended is not None:
        pairs.append((EXTENDED_RESOURCES, extended))
    return pairs


def waiting_reason(pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> str:
    """Why the pod cannot start yet ("" when every claim is allocated and reserved for it). `claims`: the pod
    namespace's ResourceClaims by name. The extended-resource claim is checked like a claim named in the spec
    (`Manager.prepareResources`: fetched by name, allocated, `IsReservedForPod`), without an owner check."""
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    for pod_claim, name in _all_claims(pod):
        if name is None:
            return f"resource claim for {pod_claim} is not created yet"
        claim = claims.get(name)
        if claim is None:
            return f"resource claim {name} not found"
        status = claim.get("status") or {}
        if not status.get("allocation"):
            return f"resource claim {name} is not allocated"
        if not any(str(r.get("uid")) == uid for r in status.get("reservedFor") or []):
            return f"resource claim {name} is not reserved for this pod"
    return ""


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return [c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])] if isinstance(c, Mapping)]


def _results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    return [r for r in results or [] if isinstance(r, Mapping)]


def _requested(container: Mapping[str, Any], resource: str) -> bool:
    """A non-zero request of a DRA-backed extended resource name (`GetResources`' `extendedResourceRequests`)."""
    if not is_dra_extended_resource_name(resource):
        return False
    amount = ((container.get("resources") or {}).get("requests") or {}).get(resource)
    if amount is None:
        return False
    try:
        return parse_quantity(amount).nanos != 0
    except QuantityError:
        return False


def _extended_requests(pod: Mapping[str, Any], container: Mapping[str, Any]) -> set[str]:
    """The extended-resource claim's requests `container` gets: those `requestMappings` name for it and a resource
    it requests (`Manager.GetResources`)."""
    name = container.get("name")
    return {
        str(m.get("requestName"))
        for m in _extended_status(pod).get("requestMappings") or []
        if isinstance(m, Mapping)
        and m.get("containerName") == name
        and _requested(container, str(m.get("resourceName")))
    }


def container_devices(
    pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]], node: str, numa_of: Mapping[str, int]
) -> DeviceNUMA:
    """Container name -> {`driver/pool/device`: NUMA node} of the devices it uses. `numa_of` maps this node's
    devices (`driver/device`) to their NUMA node; a device of another pool has no known NUMA node (None)."""
    names = claim_names(pod)
    extended = extended_claim_name(pod)
    out: dict[str, dict[str, int | None]] = {}
    for container in _containers(pod):
        wanted: list[tuple[Mapping[str, Any] | None, set[str] | None]] = []
        for ref in (container.get("resources") or {}).get("claims") or []:
            request = ref.get("request")
            wanted.append((claims.get(str(names.get(str(ref.get("name"))) or "")), {request} if request else None))
        requests = _extended_requests(pod, container) if extended is not None else set()
        if requests:
            wanted.append((claims.get(extended or ""), requests))
        devices: dict[str, int | None] = {}
        for claim, only in wanted:
            if claim is None:
                continue
            for result in _results(claim):
                if only is not None and str(result.get("request", "")).split("/", 1)[0] not in only:
                    continue
                driver, pool, device = result.get("driver"), result.get("pool"), result.get("device")
                numa = numa_of.get(f"{driver}/{device}") if pool == node else None
                devices[f"{driver}/{pool}/{device}"] = numa
        if devices:
            out[str(container.get("name"))] = devices
    return out


def _dynamic(namespace: str, name: str, claim: Mapping[str, Any], node: str) -> DynamicResource:
    """A claim with the devices this node's drivers prepared: its results in this node's pool, by driver."""
    results = sorted(
        (r for r in _results(claim) if r.get("pool") == node),
        key=lambda r: (str(r.get("driver")), str(r.get("device"))),
    )
    resources = tuple(ClaimResource(str(r.get("driver")), node, str(r.get("device"))) for r in results)
    return DynamicResource(name, namespace, resources)


def container_claims(
    pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]], node: str
) -> dict[str, tuple[DynamicResource, ...]]:
    """Container name -> the claims PodResources reports for it (`containerManagerImpl.GetDynamicResources`): every
    pod claim the container lists in `resources.claims` (in `spec.resourceClaims` order), whole, and the
    extended-resource claim, whole, when a request mapping names the container (`Manager.GetContainerClaimInfos`).
    Every container is answered; PodResources lists app containers and sidecars only (`SimulatedKubelet`)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    names = claim_names(pod)
    extended = extended_claim_name(pod)
    mapped = {
        m.get("containerName") for m in _extended_status(pod).get("requestMappings") or [] if isinstance(m, Mapping)
    }
    out: dict[str, tuple[DynamicResource, ...]] = {}
    for container in _containers(pod):
        name = str(container.get("name"))
        referenced = {str(ref.get("name")) for ref in (container.get("resources") or {}).get("claims") or []}
        used = [claim_name for pod_claim, claim_name in names.items() if pod_claim in referenced and claim_name]
        if extended is not None and name in mapped:
            used.append(extended)
        reported = tuple(_dynamic(namespace, n, claims[n], node) for n in used if n in claims)
        if reported:
            out[name] = reported
    return out


def without_dra_backed(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod without the extended resources its extended-resource claim provides, per container: what the kubelet's
    admission counts (`removeMissingExtendedResources`, `pkg/kubelet/lifecycle/predicate.go`: a request that
    `requestMappings` maps for that container is dropped even if the node lists the resource; an implicit
    `deviceclass.resource.kubernetes.io/<class>` name, which looks native, would otherwise be checked against an
    allocatable that never lists it). Limits go too, so that the pod still parses (an extended resource's request
    must equal its limit). The pod itself when nothing is mapped."""
    mapped = {
        (str(m.get("containerName")), str(m.get("resourceName")))
        for m in _extended_status(pod).get("requestMappings") or []
        if isinstance(m, Mapping) and is_dra_extended_resource_name(str(m.get("resourceName")))
    }
    if not mapped:
        return pod
    out = copy.deepcopy(dict(pod))
    for container in _containers(out):
        resources = container.get("resources")
        if not isinstance(resources, dict):
            continue
        for key in ("requests", "limits"):
            amounts = resources.get(key)
            if isinstance(amounts, dict):
                for name in [n for n in amounts if (str(container.get("name")), n) in mapped]:
                    del amounts[name]
    return out
