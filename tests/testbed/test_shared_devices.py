"""Shared DRA devices of simulated drivers (consumable capacity, KEP-5075): a shape's `shared` group publishes
`allowMultipleAllocations` and its capacities' request policies; a custom shape's `dra` groups are checked with
errors that name the field, request policies as kube-apiserver checks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knuma.api.dra.resourceslice import ResourceSlice
from knuma.testbed.cluster import SpecError, cluster_from_dict, load_yaml
from knuma.testbed.dra import device_classes, resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES, ShapeError, shape_from_dict


def shape(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "16Gi", "dra": list(groups)}


def nic(**extra: Any) -> dict[str, Any]:
    return {"driver": "nic.example.com", "prefix": "eth", "perZone": 1, "model": "e810", **extra}


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dra"
POLICY = {"default": "10G", "validRange": {"min": "10G", "max": "100G", "step": "10G"}}


def test_the_shared_nic_shape_publishes_multi_allocatable_nics_the_api_server_accepts() -> None:
    (body,) = resource_slices("n-0", BUILTIN_SHAPES["shared-nic"])
    devices = body["spec"]["devices"]
    assert [d["name"] for d in devices] == ["nic-0", "nic-1"]
    assert [d["attributes"]["resource.kubernetes.io/numaNode"]["int"] for d in devices] == [0, 1]
    assert devices[0]["allowMultipleAllocations"] is True
    assert devices[0]["capacity"] == {"bandwidth": {"value": "100G", "requestPolicy": POLICY}}
    (parsed,) = ResourceSlice.from_dict(body).devices[:1]
    assert parsed.allow_multiple_allocations
    assert str(parsed.request_policies["bandwidth"].valid_range.step) == "10G"  # type: ignore[union-attr]
    assert [c["metadata"]["name"] for c in device_classes([BUILTIN_SHAPES["shared-nic"]])] == ["nic.sim.knuma.io"]


def test_existing_shapes_keep_exclusive_devices() -> None:
    for name in ("gpu", "dgx", "mig"):
        for body in resource_slices(f"{name}-0", BUILTIN_SHAPES[name]):
            for device in body["spec"].get("devices") or []:
                assert "allowMultipleAllocations" not in device
                assert all(set(c) == {"value"} for c in (device.get("capacity") or {}).values())


def test_a_custom_shape_gets_shared_and_exclusive_groups() -> None:
    spec = cluster_from_dict(
        {
            "shapes": {
                "box": shape(
                    nic(shared=True, capacity={"bandwidth": {"value": "100G", "requestPolicy": POLICY}}),
                    {
                        "driver": "gpu.example.com",
                        "prefix": "gpu",
                        "perZone": 2,
                        "model": "l4",
                        "capacity": {"memory": "24Gi"},
                    },
                )
            },
            "pools": [{"shape": "box"}],
        }
    )
    nics, gpus = resource_slices("box-000", spec.pools[0].shape)
    assert [d["name"] for d in nics["spec"]["devices"]] == ["eth-0", "eth-1"]
    assert nics["spec"]["devices"][1]["capacity"]["bandwidth"]["requestPolicy"] == POLICY
    assert [d["name"] for d in gpus["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert gpus["spec"]["devices"][0]["capacity"] == {"memory": {"value": "24Gi"}}
    assert "allowMultipleAllocations" not in gpus["spec"]["devices"][0]
    for body in (nics, gpus):
        ResourceSlice.from_dict(body)  # what the node publishes passes the API server's validation


@pytest.mark.parametrize(
    ("group", "error"),
    [
        (
            nic(capacity={"bandwidth": {"value": "100G", "requestPolicy": POLICY}}),
            r"dra\[0\]\.capacity\.bandwidth\.requestPolicy: needs `shared: true`",
        ),
        (nic(shared="yes"), r"dra\[0\]\.shared: expected true or false, got 'yes'"),
        (nic(perZone=0), r"dra\[0\]\.perZone: expected at least 1, got 0"),
        (nic(driver="NIC"), r"dra\[0\]\.driver: 'NIC': a lowercase RFC 1123 subdomain"),
        (nic(prefix="eth_"), r"dra\[0\]\.prefix: 'eth_': device names <prefix>-<index> must be DNS labels"),
        (nic(capcity={}), r"dra\[0\]: unknown field\(s\) capcity"),
        ({"driver": "nic.example.com", "prefix": "eth", "perZone": 1}, r"dra\[0\]: missing model"),
        (nic(capacity={"bandwidth": "fast"}), r"dra\[0\]\.capacity\.bandwidth\.value: invalid quantity 'fast'"),
        (nic(capacity={"bandwidth": {"requestPolicy": POLICY}}), r"dra\[0\]\.capacity\.bandwidth\.value: missing"),
        (
            nic(
                shared=True,
                capacity={
                    "bandwidth": {
                        "value": "100G",
                        "requestPolicy": {"default": "15G", "validRange": POLICY["validRange"]},
                    }
                },
            ),
            r"dra\[0\]\.capacity\.bandwidth\.requestPolicy\.validRange\.step: Invalid value: \"15G\": value is not a "
            r"multiple of a given step \(10G\) from \(10G\)",
        ),
        (
            nic(shared=True, capacity={"bandwidth": {"value": "100G", "requestPolicy": {"validValues": ["10G"]}}}),
            r"dra\[0\]\.capacity\.bandwidth\.requestPolicy\.default: Required value",
        ),
    ],
)
def test_dra_group_errors_name_the_field(group: dict[str, Any], error: str) -> None:
    with pytest.raises(SpecError, match=r"cluster\.shapes\.box\." + error):
        cluster_from_dict({"shapes": {"box": shape(group)}, "pools": [{"shape": "box"}]})


def test_two_groups_of_a_driver_need_distinct_prefixes() -> None:
    with pytest.raises(ShapeError, match=r"dra\[1\]\.prefix: 'eth' is already used by a group of nic\.example\.com"):
        shape_from_dict("box", shape(nic(), nic(perZone=2)))
    with pytest.raises(ShapeError, match=r"shapes\.box\.dra: expected a list"):
        shape_from_dict("box", {**shape(), "dra": {"driver": "x"}})


def test_the_shared_nic_cluster_example_publishes_slices_the_api_server_accepts() -> None:
    spec = cluster_from_dict(load_yaml(EXAMPLES / "shared-nic-cluster.yaml"))
    (pool,) = spec.pools
    nics, gpus = resource_slices("edge-000", pool.shape)
    for body in (nics, gpus):
        ResourceSlice.from_dict(body)
    policy = nics["spec"]["devices"][0]["capacity"]["bandwidth"]["requestPolicy"]
    assert policy == {"default": "25G", "validValues": ["25G", "50G", "100G"]}
    assert [d.get("allowMultipleAllocations") for d in (nics["spec"]["devices"][0], gpus["spec"]["devices"][0])] == [
        True,
        None,
    ]
