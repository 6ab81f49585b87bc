"""A simulated fabric DRA driver: GPUs in a chassis every node reaches over a fabric (PCIe/CXL switches), attached to
one node once allocated, as KEP-5007 (device binding conditions) describes them.

The driver publishes one cluster-level ResourceSlice (`allNodes: true`, pool `fabric`) whose devices carry
`bindsToNode: true` (an allocation is pinned to the node it was made for), `bindingConditions` (the scheduler binds
the pod only once the driver set them True in the claim's `status.devices`) and `bindingFailureConditions` (the
scheduler gives the allocation up when one is True). They have no NUMA attribute: until attached they are on no
node's PCIe tree, so nothing aligns with them.

What the driver reports once it acted (`attach_report`) is computed here from the claim alone; when to act is the
fabric manager's (`knuma.local.controllers.fabric_attach`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knuma.api.types import JsonObj

__all__ = [
    "ATTACHED",
    "ATTACH_ANNOTATION",
    "ATTACH_FAILED",
    "DRIVER",
    "MAX_DEVICES",
    "POOL",
    "SLICE_NAME",
    "Attach",
    "attach_report",
    "fabric_device_class",
    "fabric_slice",
    "pending_attach",
]

DRIVER = "fabric.sim.knuma.io"
POOL = "fabric"
SLICE_NAME = "fabric-sim"
ATTACHED = f"{DRIVER}/attached"
ATTACH_FAILED = f"{DRIVER}/attach-failed"
ATTACH_ANNOTATION = "sim.knuma.io/fabric-attach"
"""On a ResourceClaim, `fail`: attaching its fabric devices fails (the failure condition is set instead), to try
what the scheduler does then."""
MAX_DEVICES = 128
"""A ResourceSlice holds at most 128 devices (`ResourceSliceMaxDevices`)."""
MODEL = "h100-fabric"
MEMORY = "80Gi"


def fabric_slice(count: int) -> JsonObj:
    """The driver's one ResourceSlice: `count` GPUs `fgpu-0`..., reachable from every node."""
    devices = [
        {
            "name": f"fgpu-{index}",
            "attributes": {"model": {"string": MODEL}, "index": {"int": index}},
            "capacity": {"memory": {"value": MEMORY}},
            "bindsToNode": True,
            "bindingConditions": [ATTACHED],
            "bindingFailureConditions": [ATTACH_FAILED],
        }
        for index in range(count)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": SLICE_NAME},
        "spec": {
            "driver": DRIVER,
            "allNodes": True,
            "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def fabric_device_class() -> JsonObj:
    """The DeviceClass named like the driver, as the other simulated drivers' (`knuma.testbed.dra.device_classes`)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }


@dataclass(frozen=True)
class Attach:
    """An allocation of fabric devices the driver has not reported on yet."""

    node: str
    """The node the allocation is pinned to (its `nodeSelector`), where the devices are attached."""
    devices: tuple[str, ...]
    fail: bool
    identity: tuple[str, ...]
    """The claim's uid, the allocation's timestamp and devices: a new allocation of the same claim (after one was
    given up) is a new attach."""


def _pinned_node(allocation: Mapping[str, Any]) -> str:
    """The node of a `bindsToNode` allocation: its node selector's one `metadata.name` field term."""
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def _reported(status: Mapping[str, Any]) -> set[str]:
    return {str(d.get("device")) for d in status.get("devices") or [] if d.get("driver") == DRIVER}


def pending_attach(claim: Mapping[str, Any]) -> Attach | None:
    """What to attach for `claim`: its allocated fabric devices the driver has not reported on, on the node the
    allocation is pinned to; None when there is nothing (not allocated, no fabric device, all reported, being
    deleted, or no single node to attach to)."""
    meta = claim.get("metadata") or {}
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    if meta.get("deletionTimestamp") or not allocation:
        return None
    results = (allocation.get("devices") or {}).get("results") or []
    reported = _reported(status)
    devices = tuple(
        str(r.get("device"))
        for r in results
        if r.get("driver") == DRIVER and r.get("pool") == POOL and str(r.get("device")) not in reported
    )
    node = _pinned_node(allocation)
    if not devices or not node:
        return None
    fail = (meta.get("annotations") or {}).get(ATTACH_ANNOTATION) == "fail"
    identity = (str(meta.get("uid") or ""), str(allocation.get("allocationTimestamp") or ""), *devices)
    return Attach(node, devices, fail, identity)


def attach_report(claim: Mapping[str, Any], attach: Attach, now: str) -> list[JsonObj]:
    """The claim's `status.devices` once the driver acted on `attach` at `now` (RFC 3339): the entries of other
    drivers and devices kept, one per attached device with the binding condition True, or with the failure condition
    True when the attach fails."""
    kept: Sequence[JsonObj] = [
        d
        for d in (claim.get("status") or {}).get("devices") or []
        if not (d.get("driver") == DRIVER and d.get("device") in attach.devices)
    ]
    generation = (claim.get("metadata") or {}).get("generation")
    if attach.fail:
        kind, reason, message = (
            ATTACH_FAILED,
            "AttachFailed",
            f"attaching to {attach.node} failed ({ATTACH_ANNOTATION}=fail)",
        )
    else:
        kind, reason, message = ATTACHED, "Attached", f"attached to {attach.node}"
    condition: JsonObj = {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
    return [
        *kept,
        *({"driver": DRIVER, "pool": POOL, "device": d, "conditions": [condition]} for d in attach.devices),
    ]
