"""apimachinery's name checks with upstream's messages word for word (`IsDNS1123Label`, `IsDNS1123Subdomain`,
`IsQualifiedName`, `IsConfigMapKey`), and where kube-apiserver applies them to a pod: container names, `nodeName`,
container resource names."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.names import (
    config_map_key_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
)
from knuma.api.pod import InvalidPodError, Pod
from knuma.api.podresource_validation import resource_requirement_errors
from knuma.api.podvalidation import FIELD_VALUE_INVALID, FieldError, container_name_errors, node_name_errors

LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("app", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("App_1", [LABEL]),
        ("web.v2", ["must not contain dots"]),
        ("-web", [LABEL]),
        ("", [LABEL]),
    ],
)
def test_dns_labels(value: str, expected: list[str]) -> None:
    assert dns1123_label_errors(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("node-1.example.com", []),
        ("Bad Node!", [SUBDOMAIN]),
        ("a" * 254, ["must be no more than 253 characters"]),
    ],
)
def test_dns_subdomains(value: str, expected: list[str]) -> None:
    assert dns1123_subdomain_errors(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cpu", []),
        ("example.com/gpu", []),
        ("memory ", [NAME_PART]),
        ("bogus key!", [NAME_PART]),
        ("/gpu", ["prefix part must be non-empty"]),
        ("example.com/", ["name part must be non-empty", NAME_PART]),
        ("Example.com/gpu", [f"prefix part {SUBDOMAIN}"]),
        (
            "a/b/c",
            [
                f"a qualified name {NAME_PART.removeprefix('name part ')} with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')"
            ],
        ),
        ("x" * 64, ["name part must be no more than 63 characters"]),
    ],
)
def test_qualified_names(value: str, expected: list[str]) -> None:
    assert qualified_name_errors(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("config.yaml", []),
        ("KEY_NAME", []),
        ("..data", ["must not start with '..'"]),
        ("..", ["must not be '..'"]),
        (
            "bogus key!",
            [
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ],
        ),
    ],
)
def test_config_map_keys(value: str, expected: list[str]) -> None:
    assert config_map_key_errors(value) == expected


def _spec(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "x", **container}]}


def test_container_names_must_be_dns_labels_everywhere_a_pod_enters() -> None:
    spec = {"containers": [{"name": "App_1", "image": "x"}], "initContainers": [{"name": "init.v2", "image": "x"}]}
    assert container_name_errors(spec) == [
        FieldError(FIELD_VALUE_INVALID, "spec.containers[0].name", f'Invalid value: "App_1": {LABEL}'),
        FieldError(
            FIELD_VALUE_INVALID, "spec.initContainers[0].name", 'Invalid value: "init.v2": must not contain dots'
        ),
    ]
    with pytest.raises(InvalidPodError, match="App_1"):
        Pod.from_manifest({"metadata": {"name": "p"}, "spec": spec})


def test_a_node_name_must_be_a_dns_subdomain() -> None:
    assert node_name_errors({"nodeName": "node-1"}) == []
    assert node_name_errors({"nodeName": "Bad Node!"}, "spec.template.spec") == [
        FieldError(FIELD_VALUE_INVALID, "spec.template.spec.nodeName", f'Invalid value: "Bad Node!": {SUBDOMAIN}')
    ]


@pytest.mark.parametrize(
    ("name", "messages"),
    [
        ("cpu", []),
        ("hugepages-2Mi", []),
        ("example.com/gpu", []),
        ("kubernetes.io/batteries", []),
        ("cpuu", ["must be a standard resource type or fully qualified", "must be a standard resource for containers"]),
        ("requests.cpu", ["must be a standard resource for containers"]),
        ("memory ", [NAME_PART, "must be a standard resource for containers"]),
        ("requests.example.com/gpu", ["doesn't follow extended resource name standard"]),
    ],
)
def test_container_resource_names_are_checked_as_validate_container_resource_name_does(
    name: str, messages: list[str]
) -> None:
    """A misspelt `cpuu` would be an extended resource no node offers: the pod would be Pending for ever."""
    limits = {name: "2Mi"}
    errors = resource_requirement_errors(_spec(resources={"limits": limits, "requests": limits}))
    named = [e for e in errors if e.field.endswith(f"[{name}]")]
    path = f"spec.containers[0].resources.limits[{name}]"
    assert [e for e in named if e.field == path] == [
        FieldError(FIELD_VALUE_INVALID, path, f'Invalid value: "{name}": {m}') for m in messages
    ]
