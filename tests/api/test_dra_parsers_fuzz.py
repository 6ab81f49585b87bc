"""Fuzzing the `resource.k8s.io` parsers the API server and the scheduler run on user input: a ResourceSlice or
ResourceClaim (with consumable capacity, binding conditions, device status) with any field replaced by any value
either parses, round-trips and allocates, or raises `ValidationError` naming the object; never another exception
(which `knuma apiserver` would answer with a 500, and the scheduler would log as a crash)."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.allocator import Inventory, NodeView, allocate, consumed_capacity
from knuma.devices.demand import DeviceAllocationError
from knuma.errors import InvalidInput
from tests.strategies import mutations

VALID_SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "n1-nics"},
    "spec": {
        "driver": "nic.example.com",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "n1",
        "devices": [
            {
                "name": "nic-0",
                "allowMultipleAllocations": True,
                "attributes": {"index": {"int": 0}, "resource.kubernetes.io/numaNode": {"int": 0}},
                "capacity": {
                    "bandwidth": {
                        "value": "100G",
                        "requestPolicy": {"default": "10G", "validRange": {"min": "10G", "max": "100G", "step": "10G"}},
                    },
                    "queues": {"value": "8", "requestPolicy": {"default": "1", "validValues": ["1", "2", "4"]}},
                },
                "bindingConditions": ["example.com/attached"],
                "bindingFailureConditions": ["example.com/failed"],
                "bindsToNode": True,
            }
        ],
    },
}

VALID_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "a",
                    "exactly": {
                        "deviceClassName": "nic",
                        "capacity": {"requests": {"bandwidth": "25G", "queues": "2"}},
                    },
                },
                {"name": "b", "exactly": {"deviceClassName": "nic", "count": 1}},
            ],
            "constraints": [{"requests": ["a", "b"], "distinctAttribute": "nic.example.com/index"}],
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "a",
                        "driver": "nic.example.com",
                        "pool": "n1",
                        "device": "nic-0",
                        "consumedCapacity": {"bandwidth": "30G", "queues": "2"},
                        "shareID": "0b7c5a52-4c1e-4d8e-9a43-5f0f4e1d2c3b",
                        "bindingConditions": ["example.com/attached"],
                        "bindingFailureConditions": ["example.com/failed"],
                    }
                ]
            },
            "allocationTimestamp": "2026-11-29T12:00:00Z",
        },
        "devices": [
            {
                "driver": "nic.example.com",
                "pool": "n1",
                "device": "nic-0",
                "conditions": [{"type": "example.com/attached", "status": "True", "reason": "Ok", "message": ""}],
            }
        ],
    },
}

CLASSES = {
    "nic": DeviceClass.from_dict(
        {
            "metadata": {"name": "nic"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'nic.example.com'"}}]},
        }
    )
}


def test_the_valid_documents_parse_and_allocate() -> None:
    nics = ResourceSlice.from_dict(VALID_SLICE)
    pending = ResourceClaim.from_dict({**VALID_CLAIM, "status": {}})
    outcome = allocate(NodeView("n1"), [pending], Inventory([nics], CLASSES))
    assert not outcome.allocatable  # one NIC, and distinctAttribute asks for two different ones
    held = ResourceClaim.from_dict(VALID_CLAIM)
    assert consumed_capacity([held]) == {
        ("nic.example.com", "n1", "nic-0"): {"bandwidth": 30 * 10**18, "queues": 2 * 10**9}
    }


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations(VALID_SLICE), mutations(VALID_CLAIM))
def test_mutated_slices_and_claims_parse_and_allocate_or_raise_validation_errors(
    slice_doc: Any, claim_doc: Any
) -> None:
    try:
        nics = ResourceSlice.from_dict(slice_doc)
    except ValidationError as err:
        assert "ResourceSlice" in str(err)
        nics = ResourceSlice.from_dict(VALID_SLICE)
    else:
        ResourceSlice.from_dict(
            {**VALID_SLICE, "spec": {**VALID_SLICE["spec"], "devices": [d.to_dict() for d in nics.devices]}}
        )
    try:
        claim = ResourceClaim.from_dict(claim_doc)
    except ValidationError as err:
        assert "ResourceClaim" in str(err)
        return
    held = [claim] if claim.allocation is not None else []
    pending = ResourceClaim.from_dict({**VALID_CLAIM, "status": {}}) if held else claim
    # DeviceAllocationError: the claims cannot be allocated anywhere as written (upstream's Allocate error)
    with contextlib.suppress(DeviceAllocationError, InvalidInput):
        allocate(NodeView("n1"), [pending], Inventory([nics], CLASSES, consumed=consumed_capacity(held)))


VALID_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "nic", "creationTimestamp": "2026-11-29T12:00:00Z"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'nic.example.com'"}}],
        "config": [{"opaque": {"driver": "nic.example.com", "parameters": {"mtu": 9000}}}],
        "extendedResourceName": "example.com/nic",
    },
}

VALID_RULE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1alpha3",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "nic-down"},
    "spec": {
        "deviceSelector": {"driver": "nic.example.com", "pool": "n1", "device": "nic-0"},
        "taint": {"key": "example.com/down", "value": "yes", "effect": "NoExecute"},
    },
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations(VALID_CLASS), mutations(VALID_RULE))
def test_mutated_classes_and_taint_rules_parse_or_raise_validation_errors(class_doc: Any, rule_doc: Any) -> None:
    for parse, doc, kind in (
        (DeviceClass.from_dict, class_doc, "DeviceClass"),
        (DeviceTaintRule.from_dict, rule_doc, "DeviceTaintRule"),
    ):
        try:
            parse(doc)
        except ValidationError as err:
            assert kind in str(err)
