"""The k8srm prototype's kinds: read as Go's decoder reads them (quirks tolerated, warned), CRDs from the models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.api.devmgmt.crd import prototype_crds
from knuma.api.devmgmt.types import (
    DeviceClaim,
    DeviceClass,
    DeviceDriver,
    DevicePool,
    PrototypeError,
    parse_prototype,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "devices"


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def test_drivers_yaml() -> None:
    drivers = [parse_prototype(d)[0] for d in load("drivers.yaml")]
    assert all(isinstance(d, DeviceDriver) for d in drivers)
    assert {d.name: d.device_types for d in drivers}["example.com-barzer"] == ("gpu", "sriov-nic")  # type: ignore[union-attr]


def test_classes_yaml_typos_are_warnings_not_errors() -> None:
    parsed = {}
    warnings = []
    for doc in load("classes.yaml"):
        if doc["kind"] != "DeviceClass":
            continue
        obj, found = parse_prototype(doc)
        assert isinstance(obj, DeviceClass)
        parsed[obj.name] = obj
        warnings += found
    assert len(parsed) == 12
    assert parsed["example.com-foozer-single"].max_device_count == 1
    assert parsed["example.com-barzer-gpu-single"].max_device_count is None  # `deviceMaxCount` is a typo
    assert parsed["example.com-gpu-set"].constraints is None  # `contstraints` too
    assert parsed["vlan-2000"].configs[0].namespace == "default"
    assert "DeviceClass 'example.com-barzer-gpu-single': unknown field spec.deviceMaxCount" in warnings
    assert "DeviceClass 'example.com-consistent-gpu-set': unknown field spec.attributeMatches" in warnings
    assert "DeviceClass 'sriov-nic': unknown field spec.deviceTypes" in warnings


def test_go_field_names_decode_case_insensitively() -> None:
    obj, warnings = parse_prototype(
        {"kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {"DeviceType": "gpu", "Driver": "d"}}
    )
    assert isinstance(obj, DeviceClass) and obj.device_type == "gpu" and obj.driver == "d" and not warnings


def test_claim_and_pool() -> None:
    claim, _ = parse_prototype(
        {
            "kind": "DeviceClaim",
            "metadata": {"name": "c"},
            "spec": {
                "deviceClass": "x",
                "driver": "example.com-foozer",
                "minDeviceCount": 2,
                "matchAttributes": ["numa"],
            },
        }
    )
    assert isinstance(claim, DeviceClaim) and claim.device_count == 2 and claim.namespace == "default"
    pool, _ = parse_prototype(
        {
            "kind": "DevicePool",
            "metadata": {"name": "p"},
            "spec": {
                "nodeName": "n",
                "driver": "d",
                "count": 4,
                "attributes": [{"name": "numa", "stringValue": "0"}, {"name": "mem", "quantityValue": "1Gi"}],
            },
        }
    )
    assert isinstance(pool, DevicePool) and pool.count == 4
    numa, mem = pool.attributes
    assert numa.value == "0" and mem.quantity_value is not None and mem.quantity_value.value() == 2**30
    other = numa.__class__("numa", int_value=0)
    assert not numa.equal(other)  # different types never match (Attribute.EqualValue)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"kind": "DevicePool", "metadata": {"name": "p"}, "spec": {"count": 1}}, "spec.driver: Required value"),
        (
            {"kind": "DevicePool", "metadata": {"name": "p"}, "spec": {"driver": "d", "count": "two"}},
            "spec.count: must be an integer",
        ),
        ({"kind": "DeviceDriver", "metadata": {"name": "d"}}, "deviceTypes: Required value"),
        ({"kind": "Gadget", "metadata": {"name": "g"}}, "unsupported kind 'Gadget'"),
    ],
)
def test_errors(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(PrototypeError, match=message):
        parse_prototype(doc)


def test_crds_follow_the_models() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in prototype_crds()}
    assert set(crds) == {"DeviceDriver", "DeviceClass", "DeviceClaim", "DevicePrivilegedClaim", "DevicePool"}
    assert crds["DeviceClaim"]["spec"]["scope"] == "Namespaced" and crds["DevicePool"]["spec"]["scope"] == "Cluster"
    pool = crds["DevicePool"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert set(pool["spec"]["properties"]) == {"nodeName", "driver", "attributes", "count"}
    attribute = pool["spec"]["properties"]["attributes"]["items"]["properties"]
    assert set(attribute) == {"name", "stringValue", "intValue", "quantityValue", "semVerValue"}
    driver = crds["DeviceDriver"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert driver["required"] == ["deviceTypes"] and driver["properties"]["deviceTypes"]["type"] == "array"
    claim_status = crds["DeviceClaim"]["spec"]["versions"][0]
    assert claim_status["subresources"] == {"status": {}}
    assert crds["DeviceClaim"]["metadata"]["name"] == "deviceclaims.devmgmtproto.k8s.io"
