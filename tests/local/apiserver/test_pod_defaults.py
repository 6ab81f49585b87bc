"""The API server's pod resource defaulting: which specs it changes, so that the kubelet's status writes and every
other write of a defaulted pod skip copying and parsing it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from knuma.local.apiserver.defaults import default_pod_spec_resources, needs_resource_defaults
from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.resources import Registry
from knuma.local.apiserver.validation import validate_object


def _spec(resources: dict[str, Any] | None, pod_level: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if resources is not None:
        container["resources"] = resources
    spec: dict[str, Any] = {"containers": [container]}
    if pod_level is not None:
        spec["resources"] = pod_level
    return spec


@pytest.mark.parametrize(
    ("spec", "changes"),
    [
        (_spec(None), False),
        (_spec({"requests": {"cpu": "1"}}), False),
        (_spec({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}), False),
        (_spec({"limits": {"cpu": "2"}}), True),
        (_spec({"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}), True),
        (_spec({"limits": {}}), True),  # the defaulting adds an empty requests
        (_spec({"requests": {"cpu": "1"}}, pod_level={"limits": {"cpu": "4"}}), True),
        # already defaulted (every write after the create, the kubelet's status writes among them)
        (_spec({"requests": {"cpu": "1"}}, pod_level={"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}), False),
        (_spec({"requests": {"cpu": "1"}}, pod_level={"requests": {"cpu": "2"}}), False),
        (_spec({"requests": {"cpu": "1", "memory": "1Gi"}}, pod_level={"limits": {"memory": "2Gi"}}), True),
        (
            _spec(
                {"requests": {"cpu": "1", "hugepages-1Gi": "2Gi"}, "limits": {"hugepages-1Gi": "2Gi"}},
                pod_level={"requests": {"cpu": "1"}},
            ),
            True,  # defaultHugePagePodLimits: the containers' hugepages limit becomes the pod's
        ),
        (
            _spec(
                {"requests": {"cpu": "1", "hugepages-1Gi": "2Gi"}, "limits": {"hugepages-1Gi": "2Gi"}},
                pod_level={"requests": {"cpu": "1", "hugepages-1Gi": "2Gi"}, "limits": {"hugepages-1Gi": "2Gi"}},
            ),
            False,
        ),
    ],
)
def test_a_spec_needs_defaults_exactly_when_the_defaulting_changes_it(spec: dict[str, Any], changes: bool) -> None:
    pod = {"metadata": {"name": "p", "namespace": "default"}, "spec": copy.deepcopy(spec)}
    default_pod_spec_resources(pod)
    assert (pod["spec"] != spec) is changes
    assert needs_resource_defaults(spec) is changes


def test_a_status_write_does_not_check_the_stored_pods_spec_again() -> None:
    """`ValidatePodStatusUpdate`: a pod stored before a rule existed (or by an older server) keeps getting its status
    written; a new pod or a spec update is checked."""
    rt = Registry.with_builtins().get("", "v1", "pods")
    assert rt is not None
    bad = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": _spec({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}),  # a request above its limit
        "status": {"phase": "Running"},
    }
    validate_object(rt, bad, spec=False)
    with pytest.raises(ApiError, match="must be less than or equal to cpu limit of 2"):
        validate_object(rt, bad)


def test_a_pod_refused_for_its_containers_gets_no_made_up_pod_level_cause() -> None:
    """A container refused (a negative limit) stops the pod-level defaulting, which reads the containers: the
    pod-level request is then not compared with them, where a missing default would read as a request of 0."""
    rt = Registry.with_builtins().get("", "v1", "pods")
    assert rt is not None
    container = {"requests": {"cpu": "1"}, "limits": {"memory": "-1"}}
    bad = {"metadata": {"name": "p", "namespace": "default"}, "spec": _spec(container, {"limits": {"cpu": "2"}})}
    with pytest.raises(ApiError) as caught:
        validate_object(rt, bad)
    causes = (caught.value.details or {})["causes"]
    fields = [c["field"] for c in causes]
    assert "spec.containers[0].resources.limits[memory]" in fields  # (and its defaulted request, as upstream)
    assert not [f for f in fields if f.startswith("spec.resources")], causes
