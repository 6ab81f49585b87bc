"""Unique container names (kube-apiserver `validateContainers` / `validateInitContainers`), as a pure check and in
the pod model."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.pod import InvalidPodError, Pod, PodError
from knuma.api.podvalidation import FIELD_VALUE_DUPLICATE, FieldError, container_name_errors
from knuma.errors import InvalidInput


def spec(apps: list[str], init: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"containers": [{"name": n, "image": "busybox"} for n in apps]}
    if init is not None:
        out["initContainers"] = [{"name": n, "image": "busybox"} for n in init]
    return out


def test_init_container_sharing_an_app_container_name_is_a_duplicate_at_the_init_index():
    assert container_name_errors(spec(["app", "side"], ["setup", "app"])) == [
        FieldError(FIELD_VALUE_DUPLICATE, "spec.initContainers[1].name", 'Duplicate value: "app"')
    ]
    assert (
        str(container_name_errors(spec(["app"], ["app"]))[0]) == 'spec.initContainers[0].name: Duplicate value: "app"'
    )


def test_regular_containers_are_checked_first_then_init_containers_against_both():
    errors = container_name_errors(spec(["a", "b", "a"], ["i", "i", "b"]))
    assert [e.field for e in errors] == [
        "spec.containers[2].name",
        "spec.initContainers[1].name",
        "spec.initContainers[2].name",
    ]


def test_unique_names_and_unnamed_containers_give_no_duplicate():
    assert container_name_errors(spec(["a", "b"], ["c"])) == []
    assert container_name_errors({"containers": [{"image": "x"}, {"image": "y"}]}) == []  # Required, not Duplicate
    assert container_name_errors({}) == []


def test_a_template_path_prefixes_the_field():
    errors = container_name_errors(spec(["a"], ["a"]), "spec.template.spec")
    assert errors[0].field == "spec.template.spec.initContainers[0].name"


def test_the_pod_model_refuses_duplicate_names_as_invalid_input():
    pod_spec = spec(["app"], ["app"])
    manifest = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": pod_spec}
    with pytest.raises(InvalidPodError) as caught:
        Pod.from_manifest(manifest)
    assert isinstance(caught.value, PodError) and isinstance(caught.value, InvalidInput)
    assert str(caught.value).startswith('pod ns/p is invalid: spec.initContainers[0].name: Duplicate value: "app"')
    assert caught.value.errors == container_name_errors(pod_spec)
