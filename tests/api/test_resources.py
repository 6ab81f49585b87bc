"""Resource lists in integer base units."""

from __future__ import annotations

import pytest

from knuma.api.resources import (
    DEVICE_CLASS_RESOURCE_PREFIX,
    add,
    amount_of,
    format_amount,
    format_resource_list,
    is_dra_extended_resource_name,
    is_extended_resource_name,
    is_host_level,
    is_hugepages,
    is_native,
    is_numa_affine,
    maximum,
    parse_resource_list,
    subtract,
)
from knuma.quantity import parse_quantity


@pytest.mark.parametrize(
    ("name", "text", "amount"),
    [
        ("cpu", "1", 1000),
        ("cpu", "250m", 250),
        ("cpu", "0.0001", 1),  # milli-CPU rounded up
        ("cpu", "1.5", 1500),
        ("memory", "1Gi", 1024**3),
        ("memory", "1.5Gi", 3 * 1024**3 // 2),
        ("memory", "1500m", 2),  # bytes rounded up
        ("memory", "1e3", 1000),
        ("hugepages-2Mi", "4Mi", 4 * 1024**2),
        ("example.com/gpu", "2", 2),
    ],
)
def test_amount_of(name, text, amount):
    assert amount_of(name, parse_quantity(text)) == amount


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 0, "0"),
        ("memory", 1024**3, "1Gi"),
        ("memory", 1000, "1k"),  # BinarySI below 1024 prints as DecimalSI, like Go
        ("memory", 3 * 1024**3 // 2, "1536Mi"),
        ("hugepages-1Gi", 2 * 1024**3, "2Gi"),
        ("ephemeral-storage", 10 * 1024**3, "10Gi"),
        ("example.com/gpu", 2, "2"),
        ("example.com/gpu", 2000, "2k"),
        ("pods", 110, "110"),
    ],
)
def test_format_amount(name, amount, text):
    assert format_amount(name, amount) == text
    assert amount_of(name, parse_quantity(text)) == amount


def test_parse_and_format_resource_list():
    parsed = parse_resource_list({"cpu": "2", "memory": "4Gi", "example.com/gpu": 1, "nvidia.com/gpu": "1"})
    assert parsed == {"cpu": 2000, "memory": 4 * 1024**3, "example.com/gpu": 1, "nvidia.com/gpu": 1}
    assert format_resource_list(parsed) == {"cpu": "2", "example.com/gpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}
    assert parse_resource_list(None) == {}
    assert parse_resource_list({"cpu": 0.5}) == {"cpu": 500}


def test_parse_errors_name_field_and_value():
    with pytest.raises(ValueError, match=r"pod x: requests\.memory: invalid quantity '4GB'"):
        parse_resource_list({"memory": "4GB"}, "pod x: requests")
    with pytest.raises(ValueError, match="expected a mapping"):
        parse_resource_list(["cpu"], "limits")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid resource name"):
        parse_resource_list({"": "1"})
    with pytest.raises(ValueError, match=r"cpu: invalid quantity \[1\]"):
        parse_resource_list({"cpu": [1]})


def test_arithmetic():
    assert add({"cpu": 1}, {"cpu": 2, "memory": 3}) == {"cpu": 3, "memory": 3}
    assert add() == {}
    assert subtract({"cpu": 5, "memory": 1}, {"cpu": 2, "memory": 4, "pods": 1}) == {"cpu": 3, "memory": 0}
    assert maximum([{"cpu": 1, "memory": 9}, {"cpu": 3}, {"pods": 0}]) == {"cpu": 3, "memory": 9, "pods": 0}


@pytest.mark.parametrize(
    ("name", "native", "hugepages", "affine", "host"),
    [
        ("cpu", True, False, True, False),
        ("memory", True, False, True, False),
        ("hugepages-2Mi", True, True, True, False),
        ("hugepages-1Gi", True, True, True, False),
        ("ephemeral-storage", True, False, False, True),
        ("storage", True, False, False, True),
        ("pods", True, False, False, False),
        ("kubernetes.io/batch", True, False, False, False),
        ("example.com/gpu", False, False, False, True),
        ("nvidia.com/gpu", False, False, False, True),
    ],
)
def test_classification(name, native, hugepages, affine, host):
    assert is_native(name) is native
    assert is_hugepages(name) is hugepages
    assert is_numa_affine(name) is affine
    assert is_host_level(name) is host


def test_extended_resource_names_follow_is_extended_resource_name() -> None:
    """`v1helper.IsExtendedResourceName` and `schedutil.IsDRAExtendedResourceName` (KEP-5004)."""
    for name in ("example.com/nic", "nvidia.com/gpu", "a.b/c_d.e-f"):
        assert is_extended_resource_name(name) and is_dra_extended_resource_name(name), name
    implicit = DEVICE_CLASS_RESOURCE_PREFIX + "gpu.example.com"
    assert not is_extended_resource_name(implicit) and is_dra_extended_resource_name(implicit)
    for name in (
        "cpu",
        "hugepages-2Mi",
        "kubernetes.io/gpu",
        "requests.example.com/nic",
        "example.com/",
        "a/b/c",
        "Example.com/nic",
        "example.com/" + "n" * 64,
        "",
    ):
        assert not is_extended_resource_name(name) and not is_dra_extended_resource_name(name), name
