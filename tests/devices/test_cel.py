"""CEL selectors: the resource.k8s.io environment, Kubernetes' quantity and semver functions, errors and limits."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.dra.device import parse_device
from knuma.api.dra.fields import FieldErrors
from knuma.devices.cel import CELError, compile_selector, device_environment

WHERE = "class gpu: selector #0"


def env() -> dict[str, Any]:
    errors = FieldErrors()
    device = parse_device(
        {
            "name": "gpu-0",
            "attributes": {
                "model": {"string": "a100"},
                "cores": {"int": 108},
                "mig": {"bool": True},
                "driverVersion": {"version": "535.10.2"},
                "resource.kubernetes.io/numaNode": {"ints": [0, 1]},
            },
            "capacity": {"memory": {"value": "40Gi"}},
        },
        "d",
        errors,
        per_device_selection=False,
    )
    assert device is not None and not errors.errors
    return device_environment("gpu.example.com", device)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].model.startsWith("h")', False),
        ('device.attributes["gpu.example.com"].cores >= 100', True),
        ('device.attributes["gpu.example.com"].mig', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 535', True),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("535.9.0"))', False),
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("v535", true))', True),
        ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("535.10.2")) == 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("32Gi"))', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40960Mi")) == 0', True),
        ('device.capacity["gpu.example.com"].memory == quantity("40Gi")', True),
        ('device.capacity["gpu.example.com"].memory.add(quantity("8Gi")).isLessThan(quantity("48Gi"))', False),
        ('quantity("1500m").isInteger()', False),
        ('isQuantity("1Gi") && !isQuantity("one gig")', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
        ('1 in device.attributes["resource.kubernetes.io"].numaNode', True),
        ('device.attributes["resource.kubernetes.io"].numaNode.exists(n, n == 3)', False),
        ('has(device.attributes["other.example.com"].model)', False),
        ('has(device.attributes["gpu.example.com"].model)', True),
        ("device.allowMultipleAllocations", False),
    ],
)
def test_selector_environment(expression: str, expected: bool) -> None:
    assert compile_selector(expression, WHERE).matches(env(), WHERE) is expected


def test_missing_attribute_is_a_runtime_error_naming_the_class_and_expression() -> None:
    expression = 'device.attributes["gpu.example.com"].nope == "x"'
    with pytest.raises(CELError) as exc:
        compile_selector(expression, WHERE).matches(env(), WHERE)
    assert str(exc.value) == f"{WHERE}: CEL runtime error: no such key: nope (expression: {expression})"
    with pytest.raises(CELError, match="no such key: nope"):
        compile_selector('device.attributes["unknown.example.com"].nope', WHERE).matches(env(), WHERE)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("device.bandwidth = '1G'", "compilation failed"),
        ("frobnicate(device)", r"undeclared reference to \['frobnicate'\]"),
        ("gpu.model == 'a'", r"undeclared reference to \['gpu'\]"),
    ],
)
def test_compile_errors_name_where(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message) as exc:
        compile_selector(expression, "claim ns/c, request gpu: selector #1")
    assert str(exc.value).startswith("claim ns/c, request gpu: selector #1: ")


def test_non_bool_result_and_bad_function_arguments() -> None:
    with pytest.raises(CELError, match="CEL result must be a bool, got int 108"):
        compile_selector('device.attributes["gpu.example.com"].cores', WHERE).matches(env(), WHERE)
    with pytest.raises(CELError, match=r"CEL runtime error: .*invalid quantity"):
        compile_selector('quantity("lots").isInteger()', WHERE).matches(env(), WHERE)


def test_cost_limit() -> None:
    cheap = 'device.attributes["resource.kubernetes.io"].numaNode.all(a, a >= 0)'
    assert compile_selector(cheap, WHERE).cost < 1_000_000
    nested = (
        'device.attributes["d"].l.all(a, device.attributes["d"].l.all(b, device.attributes["d"].l.all(c, '
        'device.attributes["d"].l.all(e, a + b + c + e > 0))))'
    )
    with pytest.raises(CELError, match="exceeds the limit of 1000000"):
        compile_selector(nested, WHERE)
