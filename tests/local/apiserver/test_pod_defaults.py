"""The API server's pod resource defaulting: which specs it changes, so that the kubelet's status writes and every
other write of a defaulted pod skip copying and parsing it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from knuma.local.apiserver.defaults import default_pod_spec_resources, needs_resource_defaults


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
