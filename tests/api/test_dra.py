"""resource.k8s.io/v1 models: valid objects parse, invalid ones fail with kube-apiserver's field paths."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.fields import ValidationError
from knuma.api.dra.requests import ALL
from knuma.api.dra.resourceclaim import ResourceClaim, ResourceClaimTemplate
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.api.dra.semver import SemVer, SemVerError


def slice_doc(**spec: Any) -> dict[str, Any]:
    body = {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "driverVersion": {"version": "1.2.3"},
                    "resource.kubernetes.io/numaNode": {"int": 0},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
                },
                "capacity": {"memory": {"value": "40Gi"}},
            }
        ],
    }
    body.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s1"}, "spec": body}


def errors_of(exc: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [str(e) for e in exc.value.errors]


def test_slice_parses_devices_attributes_and_capacity() -> None:
    s = ResourceSlice.from_dict(slice_doc())
    assert s.driver == "gpu.example.com" and s.pool.name == "node-1" and s.node.node_name == "node-1"
    device = s.devices[0]
    assert device.attributes["driverVersion"].value == SemVer(1, 2, 3)
    assert device.attributes["resource.kubernetes.io/numaNode"].value == 0
    assert device.capacity["memory"].value() == 40 * 2**30


def test_slice_node_selection_is_exactly_one() -> None:
    with pytest.raises(ValidationError) as exc:
        ResourceSlice.from_dict(slice_doc(allNodes=True))
    assert "exactly one of `nodeName`, `nodeSelector`, `allNodes` or `perDeviceNodeSelection` is required" in str(
        exc.value
    )
    doc = slice_doc()
    del doc["spec"]["nodeName"]
    with pytest.raises(ValidationError, match="spec: Required value"):
        ResourceSlice.from_dict(doc)


def test_slice_errors_name_every_field() -> None:
    doc = slice_doc(
        driver="GPU_Example",
        pool={"name": "p", "resourceSliceCount": 0},
        devices=[
            {"name": "gpu-0", "attributes": {"model": {"string": "a", "int": 1}}},
            {"name": "gpu-0", "attributes": {"driverVersion": {"version": "v1.2"}}},
            {"name": "Bad_Name", "taints": [{"key": "k", "effect": "Sometimes"}]},
        ],
    )
    with pytest.raises(ValidationError) as exc:
        ResourceSlice.from_dict(doc)
    text = errors_of(exc)
    assert any(t.startswith('spec.driver: Invalid value: "GPU_Example"') for t in text)
    assert "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero" in text
    assert any(
        t.startswith("spec.devices[0].attributes[model]: Invalid value") and "exactly one value" in t for t in text
    )
    assert 'spec.devices[1].name: Duplicate value: "gpu-0"' in text
    assert any("spec.devices[1].attributes[driverVersion].version" in t and "semver" in t for t in text)
    assert any(t.startswith('spec.devices[2].name: Invalid value: "Bad_Name"') for t in text)
    assert any(t.startswith('spec.devices[2].taints[0].effect: Unsupported value: "Sometimes"') for t in text)
    assert str(exc.value).startswith('ResourceSlice.resource.k8s.io "s1" is invalid: [')


def test_slice_too_many_devices() -> None:
    devices = [{"name": f"d{i}"} for i in range(129)]
    with pytest.raises(ValidationError, match=r"spec.devices: Too many: 129: must have at most 128 items"):
        ResourceSlice.from_dict(slice_doc(devices=devices))


def test_per_device_node_selection() -> None:
    doc = slice_doc(devices=[{"name": "d0", "nodeName": "node-1"}, {"name": "d1", "allNodes": True}])
    del doc["spec"]["nodeName"]
    doc["spec"]["perDeviceNodeSelection"] = True
    s = ResourceSlice.from_dict(doc)
    assert s.devices[0].node is not None and s.devices[0].node.node_name == "node-1"
    assert s.devices[1].node is not None and s.devices[1].node.all_nodes
    doc["spec"]["devices"] = [{"name": "d0"}]
    with pytest.raises(ValidationError, match=r"spec.devices\[0\]: Required value"):
        ResourceSlice.from_dict(doc)


def claim_doc(requests: list[Any], constraints: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints is not None:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": devices},
    }


def test_claim_with_exact_first_available_and_constraint() -> None:
    claim = ResourceClaim.from_dict(
        claim_doc(
            [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}},
                {"name": "nic", "exactly": {"deviceClassName": "nic", "allocationMode": "All"}},
                {
                    "name": "alt",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "true"}}]},
                        {"name": "small", "deviceClassName": "gpu", "count": 2},
                    ],
                },
            ],
            [{"requests": ["gpu", "alt/big"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
        )
    )
    gpu, nic, alt = claim.spec.requests
    assert gpu.exactly is not None and gpu.exactly.count == 2
    assert nic.exactly is not None and nic.exactly.allocation_mode == ALL and nic.exactly.count == 0
    assert [a.name for a in alt.alternatives] == ["alt/big", "alt/small"]
    assert alt.first_available[0].selectors == ("true",)
    assert claim.spec.constraints[0].requests == ("gpu", "alt/big") and claim.key == "ns/c"


@pytest.mark.parametrize(
    ("request_doc", "expected"),
    [
        ({"name": "r"}, "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable`"),
        (
            {"name": "r", "exactly": {"deviceClassName": "g", "count": 0}},
            "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero",
        ),
        (
            {"name": "r", "exactly": {"deviceClassName": "g", "allocationMode": "All", "count": 2}},
            "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is "
            "'All'",
        ),
        (
            {"name": "r", "exactly": {"deviceClassName": "g", "allocationMode": "Some"}},
            'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some"',
        ),
        ({"name": "r", "exactly": {}}, "spec.devices.requests[0].exactly.deviceClassName: Required value"),
        (
            {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "g", "adminAccess": True}]},
            "spec.devices.requests[0].firstAvailable[0].adminAccess: Forbidden",
        ),
        (
            {"name": "r", "exactly": {"deviceClassName": "g", "tolerations": [{"key": "k", "operator": "Maybe"}]}},
            'spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value: "Maybe"',
        ),
    ],
)
def test_invalid_requests(request_doc: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as exc:
        ResourceClaim.from_dict(claim_doc([request_doc]))
    assert any(t.startswith(expected) for t in errors_of(exc)), errors_of(exc)


def test_constraint_rules() -> None:
    with pytest.raises(ValidationError) as exc:
        ResourceClaim.from_dict(
            claim_doc(
                [{"name": "r", "exactly": {"deviceClassName": "g"}}],
                [{"requests": ["nope"], "matchAttribute": "numa"}, {"requests": ["r"]}],
            )
        )
    text = errors_of(exc)
    assert any(
        t.startswith('spec.devices.constraints[0].requests[0]: Invalid value: "nope": must be the name') for t in text
    )
    assert any(
        t.startswith('spec.devices.constraints[0].matchAttribute: Invalid value: "numa": must include a domain')
        for t in text
    )
    assert "spec.devices.constraints[1].matchAttribute: Required value" in text


def test_duplicate_request_names_and_limit() -> None:
    with pytest.raises(ValidationError, match=r'requests\[1\].name: Duplicate value: "r"'):
        ResourceClaim.from_dict(claim_doc([{"name": "r", "exactly": {"deviceClassName": "g"}}] * 2))
    many = [{"name": f"r{i}", "exactly": {"deviceClassName": "g"}} for i in range(33)]
    with pytest.raises(ValidationError, match=r"spec.devices.requests: Too many: 33: must have at most 32 items"):
        ResourceClaim.from_dict(claim_doc(many))


def test_claim_status_allocation_round_trip() -> None:
    doc = claim_doc([{"name": "r", "exactly": {"deviceClassName": "g"}}])
    allocation = {
        "devices": {"results": [{"request": "r", "driver": "d.example.com", "pool": "p", "device": "x"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
        },
    }
    doc["status"] = {"allocation": allocation}
    claim = ResourceClaim.from_dict(doc)
    assert claim.allocation is not None and claim.allocation.to_dict() == allocation


def test_device_class_and_template() -> None:
    cls = DeviceClass.from_dict(
        {
            "metadata": {"name": "gpu.example.com"},
            "spec": {
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
            },
        }
    )
    assert cls.selectors == ('device.driver == "gpu.example.com"',) and cls.config[0].parameters == {"a": 1}
    with pytest.raises(ValidationError, match=r"spec.selectors\[0\].cel.expression: Too long"):
        DeviceClass.from_dict(
            {"metadata": {"name": "x"}, "spec": {"selectors": [{"cel": {"expression": "a" * 10241}}]}}
        )
    with pytest.raises(ValidationError, match=r"spec.config\[0\].opaque.parameters: Required value"):
        DeviceClass.from_dict({"metadata": {"name": "x"}, "spec": {"config": [{"opaque": {"driver": "d"}}]}})
    template = ResourceClaimTemplate.from_dict(
        {
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            },
        }
    )
    claim = template.claim_for("pod", "gpus")
    assert claim.name == "pod-gpus" and claim.labels == {"a": "b"}
    assert claim.annotations["resource.kubernetes.io/pod-claim-name"] == "gpus"


def test_semver_precedence() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.10.0",
    ]
    versions = [SemVer.parse(v) for v in ordered]
    shuffled = versions[4:] + versions[:4]
    assert sorted(shuffled) == versions
    assert SemVer.parse("1.0.0+build") == SemVer.parse("1.0.0")
    for bad in ("v1.0.0", "1.0", "01.0.0", "1.0.0-01"):
        with pytest.raises(SemVerError):
            SemVer.parse(bad)
