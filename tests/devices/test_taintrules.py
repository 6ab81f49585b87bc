"""DeviceTaintRules (KEP-5055): parsing and validation as kube-apiserver's `ValidateDeviceTaintRule`, which devices a
rule selects (the ResourceSlice tracker's `applyPatches`), and the allocator keeping tainted devices from claims that
do not tolerate them."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.fields import ValidationError
from knuma.devices.allocator import Inventory, NodeView, allocate
from knuma.devices.taintrules import with_taint_rules
from tests.devices.builders import DRIVER_A, DRIVER_B, LABELS, NODE1, claim, dev, device_class, req, slice_

VIEW = NodeView(NODE1, LABELS[NODE1])


def rule(name: str = "maintenance", selector: dict[str, Any] | None = None, **taint: str) -> DeviceTaintRule:
    spec: dict[str, Any] = {"taint": {"key": "example.com/maintenance", "effect": "NoSchedule", **taint}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return DeviceTaintRule.from_dict({"metadata": {"name": name}, "spec": spec})


def _gpus() -> Any:
    return slice_(
        "s",
        NODE1,
        NODE1,
        DRIVER_A,
        dev("gpu-0", attributes={"model": {"string": "a100"}}),
        dev("gpu-1", attributes={"model": {"string": "h100"}}),
    )


def _tainted(slice_obj: Any) -> dict[str, list[str]]:
    return {d.name: [t.key for t in d.taints] for d in slice_obj.devices}


def test_a_rule_selects_by_driver_pool_device_class_and_cel() -> None:
    gpus = _gpus()
    classes = {"h100": device_class("h100", DRIVER_A, 'device.attributes["driver-a"].model == "h100"')}
    key = "example.com/maintenance"
    assert _tainted(with_taint_rules(gpus, [rule(selector={"device": "gpu-0"})], classes)) == {
        "gpu-0": [key],
        "gpu-1": [],
    }
    assert _tainted(with_taint_rules(gpus, [rule(selector={"deviceClassName": "h100"})], classes))["gpu-1"] == [key]
    cel = {"selectors": [{"cel": {"expression": 'device.attributes["driver-a"].model == "a100"'}}]}
    assert _tainted(with_taint_rules(gpus, [rule(selector=cel)], classes))["gpu-0"] == [key]
    assert _tainted(with_taint_rules(gpus, [rule(selector={})], classes)) == {"gpu-0": [key], "gpu-1": [key]}
    # what a rule does not select stays as published (the very same object)
    for selector in ({"driver": DRIVER_B}, {"pool": "other"}, {"deviceClassName": "missing"}, None):
        assert with_taint_rules(gpus, [rule(selector=selector)], classes) is gpus


def test_a_tainted_device_is_kept_from_claims_that_do_not_tolerate_it() -> None:
    gpus = _gpus()
    classes = {"gpu": device_class("gpu", DRIVER_A)}
    tainted = with_taint_rules(gpus, [rule(selector={"device": "gpu-0"})], classes)
    plain = claim("c", req("r", "gpu", 2))
    outcome = allocate(VIEW, [plain], Inventory([tainted], classes))
    assert not outcome.allocatable and "taint" in outcome.reason
    assert allocate(VIEW, [claim("c", req("r", "gpu", 1))], Inventory([tainted], classes)).allocatable
    tolerant = claim("c", req("r", "gpu", 2, tolerations=[{"key": "example.com/maintenance", "operator": "Exists"}]))
    assert allocate(VIEW, [tolerant], Inventory([tainted], classes)).allocatable
    # effect None informs, it does not keep the device
    informing = with_taint_rules(gpus, [rule(selector={"device": "gpu-0"}, effect="None")], classes)
    assert allocate(VIEW, [plain], Inventory([informing], classes)).allocatable


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"taint": {"key": "k", "effect": "PreferNoSchedule"}},
            'spec.taint.effect: Unsupported value: "PreferNoSchedule"',
        ),
        ({"taint": {"effect": "NoSchedule"}}, "spec.taint.key: Required value"),
        ({}, "spec.taint: Required value"),
        (
            {"deviceSelector": {"pool": "a//b"}, "taint": {"key": "k", "effect": "NoSchedule"}},
            "spec.deviceSelector.pool",
        ),
        (
            {"deviceSelector": {"device": "GPU_0"}, "taint": {"key": "k", "effect": "NoSchedule"}},
            "spec.deviceSelector.device",
        ),
    ],
)
def test_invalid_rules_are_refused_with_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        DeviceTaintRule.from_dict({"metadata": {"name": "r"}, "spec": spec})
    assert message in str(err.value)
