"""Which DRA devices a pod got, as the kubelet learns it before starting the pod (`PrepareDynamicResources`): the
pod's ResourceClaims (from `spec.resourceClaims` and `status.resourceClaimStatuses`), their `status.allocation`,
and the NUMA node of every allocated device of this node.

A pod whose claims are not all allocated and reserved for it is not started yet (the kubelet retries
`PrepareDynamicResources`; `waiting_reason` says why). Each container gets the devices of the claims it lists in
`resources.claims` (the whole claim, or one request of it), which is what `knuma.topology.admit` aligns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knuma.topology.kubelet import DeviceNUMA

__all__ = ["claim_names", "container_devices", "waiting_reason"]


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


def waiting_reason(pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> str:
    """Why the pod cannot start yet ("" when every claim is allocated and reserved for it). `claims`: the pod
    namespace's ResourceClaims by name."""
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    for pod_claim, name in claim_names(pod).items():
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


def container_devices(
    pod: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]], node: str, numa_of: Mapping[str, int]
) -> DeviceNUMA:
    """Container name -> {`driver/pool/device`: NUMA node} of the devices it uses. `numa_of` maps this node's
    devices (`driver/device`) to their NUMA node; a device of another pool has no known NUMA node (None)."""
    names = claim_names(pod)
    out: dict[str, dict[str, int | None]] = {}
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        devices: dict[str, int | None] = {}
        for ref in (container.get("resources") or {}).get("claims") or []:
            claim = claims.get(str(names.get(str(ref.get("name"))) or ""))
            if claim is None:
                continue
            request = ref.get("request")
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            for result in results or []:
                if request and str(result.get("request", "")).split("/", 1)[0] != request:
                    continue
                driver, pool, device = result.get("driver"), result.get("pool"), result.get("device")
                numa = numa_of.get(f"{driver}/{device}") if pool == node else None
                devices[f"{driver}/{pool}/{device}"] = numa
        if devices:
            out[str(container.get("name"))] = devices
    return out
