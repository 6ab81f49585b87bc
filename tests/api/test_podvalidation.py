"""Unique container names (kube-apiserver `validateContainers` / `validateInitContainers`), as a pure check and in
the pod model; resource requirements and pod-level resources (`validateResourceRequirements`,
`validatePodResources`, `ValidatePodUpdate`) with kube-apiserver's fields and messages."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.pod import InvalidPodError, Pod, PodError
from knuma.api.podresource_validation import (
    aggregate_container_requests,
    pod_resources_errors,
    pod_resources_update_errors,
    resource_requirement_errors,
)
from knuma.api.podvalidation import (
    FIELD_VALUE_DUPLICATE,
    FIELD_VALUE_FORBIDDEN,
    FIELD_VALUE_INVALID,
    FIELD_VALUE_NOT_SUPPORTED,
    FIELD_VALUE_REQUIRED,
    FieldError,
    container_name_errors,
    init_restart_policy_errors,
)
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


# -- pod-level resources (`validatePodResources`, 1.34) ------------------------------------------------------------


def pod_level(
    resources: dict[str, Any], *containers: dict[str, Any], init: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A spec with pod-level `resources` and containers given by their `resources` (named c0, c1, ...)."""
    out: dict[str, Any] = {
        "resources": resources,
        "containers": [{"name": f"c{n}", "image": "x", "resources": r} for n, r in enumerate(containers)],
    }
    if init is not None:
        out["initContainers"] = init
    return out


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


def test_pod_level_resources_accept_cpu_memory_and_hugepages_within_the_rules():
    spec = pod_level(
        {
            "requests": {"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "4Mi"},
            "limits": {"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "4Mi"},
        },
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}},
        {"requests": {"cpu": "500m", "ephemeral-storage": "1Gi", "example.com/gpu": "1"}},
    )
    assert pod_resources_errors(spec) == []
    assert pod_resources_errors({"containers": [{"name": "a"}]}) == []  # no spec.resources: nothing to check


def test_an_unsupported_pod_level_resource_is_not_supported_and_a_bare_unknown_name_is_not_standard():
    spec = pod_level({"limits": {"cpu": "1", "ephemeral-storage": "1Gi", "gpu": "1"}}, {})
    assert pod_resources_errors(spec) == [
        FieldError(
            FIELD_VALUE_NOT_SUPPORTED,
            "spec.resources.limits[ephemeral-storage]",
            'Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"',
        ),
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.resources.limits[gpu]",
            'Invalid value: "gpu": must be a standard resource type or fully qualified',
        ),
    ]


def test_an_extended_resource_at_pod_level_is_unsupported_and_still_needs_its_limit():
    spec = pod_level({"requests": {"cpu": "1", "example.com/gpu": "1"}}, {})
    assert messages(pod_resources_errors(spec)) == [
        'spec.resources.requests[example.com/gpu]: Unsupported value: "example.com/gpu": supported values: "cpu", '
        '"hugepages-", "memory"',
        "spec.resources.limits: Required value: Limit must be set for non overcommitable resources",
    ]


def test_a_pod_level_request_above_its_limit_is_invalid():
    assert pod_resources_errors(pod_level({"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}, {})) == []
    assert pod_resources_errors(pod_level({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}, {})) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.resources.requests",
            'Invalid value: "3": must be less than or equal to cpu limit of 2',
        )
    ]


def test_pod_level_hugepages_need_an_equal_limit():
    base = {"cpu": "1", "memory": "1Gi"}
    equal = {"requests": {**base, "hugepages-2Mi": "4Mi"}, "limits": {**base, "hugepages-2Mi": "4Mi"}}
    assert pod_resources_errors(pod_level(equal, {})) == []
    missing = {"requests": {**base, "hugepages-2Mi": "4Mi"}, "limits": base}
    assert pod_resources_errors(pod_level(missing, {})) == [
        FieldError(
            FIELD_VALUE_REQUIRED,
            "spec.resources.limits",
            "Required value: Limit must be set for non overcommitable resources",
        )
    ]
    unequal = {"requests": {**base, "hugepages-2Mi": "2Mi"}, "limits": {**base, "hugepages-2Mi": "4Mi"}}
    assert messages(pod_resources_errors(pod_level(unequal, {}))) == [
        'spec.resources.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'
    ]


def test_pod_level_hugepages_need_cpu_or_memory_and_whole_pages():
    alone = {"requests": {"hugepages-2Mi": "4Mi"}, "limits": {"hugepages-2Mi": "4Mi"}}
    assert pod_resources_errors(pod_level(alone, {})) == [
        FieldError(FIELD_VALUE_FORBIDDEN, "spec.resources", "Forbidden: HugePages require cpu or memory")
    ]
    partial = {"limits": {"memory": "1Gi", "hugepages-2Mi": "3Mi"}}
    assert messages(pod_resources_errors(pod_level(partial, {}))) == [
        'spec.resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of '
        "hugepages-2Mi"
    ]


def test_a_negative_pod_level_quantity_is_invalid():
    assert messages(pod_resources_errors(pod_level({"limits": {"memory": "-1"}}, {}))) == [
        'spec.resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_claims_cannot_be_set_at_pod_level():
    spec = pod_level({"limits": {"cpu": "1"}, "claims": [{"name": "gpu"}]}, {})
    assert pod_resources_errors(spec) == [
        FieldError(
            FIELD_VALUE_FORBIDDEN,
            "spec.resources.claims",
            "Forbidden: claims cannot be set for Resources at pod-level",
        )
    ]


def test_the_containers_aggregate_request_may_not_exceed_the_pod_level_request():
    fits = pod_level({"requests": {"cpu": "1"}}, {"requests": {"cpu": "500m"}}, {"requests": {"cpu": "500m"}})
    assert pod_resources_errors(fits) == []
    over = pod_level({"requests": {"cpu": "1"}}, {"requests": {"cpu": "600m"}}, {"requests": {"cpu": "600m"}})
    assert pod_resources_errors(over) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.resources.requests[cpu]",
            'Invalid value: "1": must be greater than or equal to aggregate container requests of 1200m',
        )
    ]


def test_a_supported_resource_the_pod_level_requests_omit_counts_as_zero_and_unsupported_ones_are_skipped():
    """`podSpecRequests` of an absent resource is the zero quantity; 1.34.0 no longer compares resources pod-level
    resources cannot state (kubernetes#132551: an `ephemeral-storage` request used to read as above `0`)."""
    spec = pod_level({"requests": {"cpu": "1"}}, {"requests": {"memory": "1Gi", "ephemeral-storage": "1Gi"}})
    assert messages(pod_resources_errors(spec)) == [
        'spec.resources.requests[memory]: Invalid value: "0": must be greater than or equal to aggregate container '
        "requests of 1Gi"
    ]


def test_the_aggregate_counts_init_containers_and_sidecars_as_the_scheduler_does():
    """`AggregateContainerRequests`: a regular init container needs its request plus the sidecars before it; sidecars
    add to the app containers."""
    init = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
    ]
    spec = pod_level({"requests": {"cpu": "3"}}, {"requests": {"cpu": "1"}}, init=init)
    assert str(aggregate_container_requests(spec)["cpu"]) == "4"  # max(1 + 1, 3 + 1)
    assert messages(pod_resources_errors(spec)) == [
        'spec.resources.requests[cpu]: Invalid value: "3": must be greater than or equal to aggregate container '
        "requests of 4"
    ]


def test_an_app_container_limit_may_not_exceed_the_pod_level_limit():
    ok = pod_level(
        {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}, {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}
    )
    assert pod_resources_errors(ok) == []
    over = pod_level(
        {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}, {"limits": {"cpu": "3", "memory": "1Gi"}, "requests": {}}
    )
    assert pod_resources_errors(over) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.resources.containers[0][cpu].limits",
            'Invalid value: "3": must be less than or equal to pod limits of 2',
        )
    ]
    # init containers' limits are not compared (only their requests count, in the aggregate)
    init = [{"name": "i", "resources": {"limits": {"cpu": "5"}, "requests": {"cpu": "1"}}}]
    assert pod_resources_errors(pod_level({"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}, {}, init=init)) == []


def test_a_template_path_prefixes_the_pod_level_fields():
    errors = pod_resources_errors(
        pod_level({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}, {}), "spec.template.spec"
    )
    assert [e.field for e in errors] == ["spec.template.spec.resources.requests"]


def test_container_hugepages_need_whole_pages_and_cpu_or_memory():
    spec = {
        "containers": [
            {"name": "a", "resources": {"limits": {"hugepages-2Mi": "4Mi"}}},
            {"name": "b", "resources": {"limits": {"hugepages-1Gi": "1536Mi", "memory": "1Gi"}}},
        ]
    }
    assert messages(resource_requirement_errors(spec)) == [
        "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
        'spec.containers[1].resources.limits[hugepages-1Gi]: Invalid value: "1536Mi": 1536Mi is not positive '
        "integer multiple of hugepages-1Gi",
    ]


def test_pod_level_resources_are_immutable_on_update_by_value():
    old = {"resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}}
    assert pod_resources_update_errors(old, {"resources": {"limits": {"cpu": "2000m"}, "requests": {"cpu": "2"}}}) == []
    assert pod_resources_update_errors({}, {}) == []
    changed = pod_resources_update_errors(old, {"resources": {"limits": {"cpu": "4"}, "requests": {"cpu": "2"}}})
    assert [(e.reason, e.field) for e in changed] == [(FIELD_VALUE_FORBIDDEN, "spec")]
    assert changed[0].message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
    )
    assert pod_resources_update_errors(old, {})[0].field == "spec"  # removing them is a change too


def test_an_init_container_restart_policy_must_be_always_as_spelt() -> None:
    raw = {
        "initContainers": [
            {"name": "a", "restartPolicy": "Always"},
            {"name": "b"},
            {"name": "c", "restartPolicy": "always"},
            {"name": "d", "restartPolicy": 1},
        ]
    }
    assert init_restart_policy_errors(raw) == [
        FieldError(
            FIELD_VALUE_NOT_SUPPORTED,
            "spec.initContainers[2].restartPolicy",
            'Unsupported value: "always": supported values: "Always"',
        ),
        FieldError(
            FIELD_VALUE_NOT_SUPPORTED,
            "spec.initContainers[3].restartPolicy",
            'Unsupported value: 1: supported values: "Always"',
        ),
    ]
    manifest = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"initContainers": [raw["initContainers"][2]], "containers": [{"name": "app"}]},
    }
    with pytest.raises(InvalidPodError, match="restartPolicy is Always"):
        Pod.from_manifest(manifest)
