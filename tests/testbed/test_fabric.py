"""The simulated fabric driver's objects (KEP-5007): its slice is one kube-apiserver accepts (binding conditions need
`bindsToNode` or `allNodes`), and what it reports for a claim: the allocated fabric devices not reported yet, on
the node the allocation is pinned to; reported attached, or failed for a claim that asks for it, other drivers'
entries kept."""

from __future__ import annotations

import copy
from typing import Any

from knuma.api.dra.resourceslice import ResourceSlice
from knuma.testbed.fabric import (
    ATTACH_ANNOTATION,
    ATTACH_FAILED,
    ATTACHED,
    DRIVER,
    POOL,
    attach_report,
    fabric_device_class,
    fabric_slice,
    pending_attach,
)

PINNED = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}


def claim(*devices: str, other: bool = False, **meta: Any) -> dict[str, Any]:
    results = [{"request": "gpu", "driver": DRIVER, "pool": POOL, "device": d} for d in devices]
    if other:
        results.append({"request": "nic", "driver": "nic.sim.knuma.io", "pool": "n2", "device": "nic-0"})
    allocation = {
        "devices": {"results": results},
        "nodeSelector": PINNED,
        "allocationTimestamp": "2026-11-29T12:00:00Z",
    }
    return {
        "metadata": {"name": "c", "namespace": "default", "uid": "u1", "generation": 1, **meta},
        "status": {"allocation": allocation},
    }


def test_the_slice_offers_devices_every_node_reaches_with_binding_conditions() -> None:
    body = fabric_slice(3)
    parsed = ResourceSlice.from_dict(body)
    assert parsed.driver == DRIVER and parsed.pool.name == POOL
    assert [d["name"] for d in body["spec"]["devices"]] == ["fgpu-0", "fgpu-1", "fgpu-2"]
    assert body["spec"]["allNodes"] is True and "nodeName" not in body["spec"]
    for device in body["spec"]["devices"]:
        assert device["bindsToNode"] is True
        assert (device["bindingConditions"], device["bindingFailureConditions"]) == ([ATTACHED], [ATTACH_FAILED])
        assert not any("numaNode" in name for name in device["attributes"])  # on no node's PCIe tree
    assert fabric_device_class()["metadata"]["name"] == DRIVER


def test_an_allocation_of_fabric_devices_is_attached_on_its_pinned_node() -> None:
    attach = pending_attach(claim("fgpu-0", "fgpu-1", other=True))
    assert attach is not None
    assert (attach.node, attach.devices, attach.fail) == ("n2", ("fgpu-0", "fgpu-1"), False)
    assert attach.identity == ("u1", "2026-11-29T12:00:00Z", "fgpu-0", "fgpu-1")
    failing = pending_attach(claim("fgpu-0", annotations={ATTACH_ANNOTATION: "fail"}))
    assert failing is not None and failing.fail


def test_nothing_to_attach_without_a_pending_fabric_allocation() -> None:
    assert pending_attach(claim(other=True)) is None  # no fabric device
    unallocated = claim("fgpu-0")
    del unallocated["status"]
    assert pending_attach(unallocated) is None
    assert pending_attach(claim("fgpu-0", deletionTimestamp="2026-11-29T12:00:01Z")) is None
    unpinned = claim("fgpu-0")
    del unpinned["status"]["allocation"]["nodeSelector"]
    assert pending_attach(unpinned) is None  # no node to attach to
    reported = claim("fgpu-0")
    attach = pending_attach(reported)
    assert attach is not None
    reported["status"]["devices"] = attach_report(reported, attach, "2026-11-29T12:00:03Z")
    assert pending_attach(reported) is None


def test_a_new_allocation_of_the_same_claim_is_a_new_attach() -> None:
    first, again = claim("fgpu-0"), claim("fgpu-0")
    again["status"]["allocation"]["allocationTimestamp"] = "2026-11-29T12:00:09Z"
    one, two = pending_attach(first), pending_attach(again)
    assert one is not None and two is not None and one.identity != two.identity


def test_the_report_sets_the_binding_condition_and_keeps_other_entries() -> None:
    body = claim("fgpu-0", other=True)
    nic = {"driver": "nic.sim.knuma.io", "pool": "n2", "device": "nic-0", "conditions": []}
    body["status"]["devices"] = [nic]
    before = copy.deepcopy(body)
    attach = pending_attach(body)
    assert attach is not None
    report = attach_report(body, attach, "2026-11-29T12:00:03Z")
    assert body == before  # pure
    assert report[0] == nic
    assert report[1] == {
        "driver": DRIVER,
        "pool": POOL,
        "device": "fgpu-0",
        "conditions": [
            {
                "type": ATTACHED,
                "status": "True",
                "reason": "Attached",
                "message": "attached to n2",
                "lastTransitionTime": "2026-11-29T12:00:03Z",
                "observedGeneration": 1,
            }
        ],
    }


def test_a_claim_asking_for_a_failed_attach_gets_the_failure_condition() -> None:
    body = claim("fgpu-0", annotations={ATTACH_ANNOTATION: "fail"})
    attach = pending_attach(body)
    assert attach is not None
    (entry,) = attach_report(body, attach, "2026-11-29T12:00:03Z")
    (condition,) = entry["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (ATTACH_FAILED, "True", "AttachFailed")
    assert "n2" in condition["message"]
