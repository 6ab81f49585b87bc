"""Device binding conditions (KEP-5007) on the wire and the scheduler's reading of them: validated as
`validateDeviceBindingParameters`; a claim is ready once every condition is True, failed on a failure condition,
timed out `bindingTimeout` after its allocation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from knuma.api.dra.fields import ValidationError
from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.scheduler.plugins.binding_conditions import Binding, binding_state

UP, DOWN = "example.com/attached", "example.com/failed"


def slice_with(**device: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "s"},
        "spec": {
            "driver": "fabric.example.com",
            "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [{"name": "d0", **device}],
        },
    }


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        ResourceSlice.from_dict(doc)
    return [str(e) for e in exc.value.errors]


def test_binding_conditions_parse_and_round_trip() -> None:
    device = ResourceSlice.from_dict(
        slice_with(bindingConditions=[UP], bindingFailureConditions=[DOWN], bindsToNode=True)
    ).devices[0]
    assert device.binding_conditions == (UP,) and device.binding_failure_conditions == (DOWN,) and device.binds_to_node
    assert device.to_dict()["bindingConditions"] == [UP] and device.to_dict()["bindsToNode"] is True


def test_binding_conditions_are_validated_as_kube_apiserver_does() -> None:
    where = "spec.devices[0]"
    assert problems(slice_with(bindingConditions=[UP])) == [
        f"{where}.bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use "
        "bindingConditions"
    ]
    assert problems(slice_with(bindingFailureConditions=[DOWN])) == [
        f"{where}.bindingConditions: Invalid value: []: bindingConditions are required to use bindingFailureConditions"
    ]
    found = problems(slice_with(bindingConditions=[UP, UP], bindingFailureConditions=[UP]))
    assert f'{where}.bindingConditions[1]: Duplicate value: "{UP}"' in found
    assert any("must not overlap with bindingConditions" in p for p in found)
    assert any(
        "Too many" in p for p in problems(slice_with(bindingConditions=list("abcde"), bindingFailureConditions=["x"]))
    )
    assert any(
        "a label name" in p
        for p in problems(slice_with(bindingConditions=["bad name"], bindingFailureConditions=["x"]))
    )


def claim(conditions: list[dict[str, str]] | None, stamp: str = "2026-11-29T12:00:00Z") -> ResourceClaim:
    result = {
        "request": "gpu",
        "driver": "fabric.example.com",
        "pool": "p",
        "device": "d0",
        "bindingConditions": [UP],
        "bindingFailureConditions": [DOWN],
    }
    status: dict[str, Any] = {"allocation": {"devices": {"results": [result]}, "allocationTimestamp": stamp}}
    if conditions is not None:
        status["devices"] = [{"driver": "fabric.example.com", "pool": "p", "device": "d0", "conditions": conditions}]
    return ResourceClaim.from_dict(
        {
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "f"}}]}},
            "status": status,
        }
    )


NOW = datetime(2026, 11, 29, 12, 0, 30, tzinfo=UTC)


def test_a_claim_is_ready_once_every_binding_condition_is_true() -> None:
    assert binding_state(claim(None), 600, NOW).state is Binding.WAITING  # nothing reported yet
    assert binding_state(claim([{"type": UP, "status": "False"}]), 600, NOW).state is Binding.WAITING
    assert binding_state(claim([{"type": UP, "status": "True"}]), 600, NOW).state is Binding.READY


def test_a_failure_condition_fails_the_claim_and_waiting_too_long_times_it_out() -> None:
    failed = binding_state(claim([{"type": DOWN, "status": "True", "reason": "NoPath", "message": "cut"}]), 600, NOW)
    assert failed.state is Binding.FAILED and failed.reason == 'claim c binding failed: reason=NoPath, message="cut"'
    assert binding_state(claim(None), 20, NOW).state is Binding.TIMED_OUT  # 30 s since the allocation
    assert binding_state(claim(None), 40, NOW).state is Binding.WAITING
    assert binding_state(claim(None, stamp=""), 1, NOW).state is Binding.WAITING  # no timestamp: no timeout
