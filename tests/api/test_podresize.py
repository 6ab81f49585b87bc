"""`knuma.api.podresize`, the `pods/resize` subresource's rules, on generated pods and resize bodies: a resize
changes nothing but the containers' resources and resize policies, its verdict never raises, and the QoS rule and
the resource-removal rule hold whatever the body."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from knuma.api.pod import Pod
from knuma.api.podresize import container_resources_update_errors, pod_resize_errors, resize_update

amounts = st.sampled_from(["1", "2", "500m", "1500m", "1Gi", "2Gi", "512Mi", "0", "bad"])
names = st.sampled_from(["cpu", "memory", "ephemeral-storage", "example.com/gpu"])
resource_lists = st.dictionaries(names, amounts, max_size=3)
requirements = st.fixed_dictionaries({}, optional={"requests": resource_lists, "limits": resource_lists})
policies = st.lists(
    st.fixed_dictionaries(
        {
            "resourceName": st.sampled_from(["cpu", "memory"]),
            "restartPolicy": st.sampled_from(["NotRequired", "RestartContainer"]),
        }
    ),
    max_size=2,
)


def _container(name: str, resources: dict[str, Any], policy: list[Any], **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "app", "resources": resources, **extra}
    if policy:
        container["resizePolicy"] = policy
    return container


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container("app", draw(requirements), draw(policies))]}
    if draw(st.booleans()):
        spec["initContainers"] = [
            _container("init", draw(requirements), []),
            _container("proxy", draw(requirements), draw(policies), restartPolicy="Always"),
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}, "resourceVersion": "7"},
        "spec": spec,
        "status": {"phase": "Running"},
    }


@st.composite
def resize_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"labels": {"sneaked": "in"}, "resourceVersion": "7"},
        "spec": {
            "containers": [_container("app", draw(requirements), draw(policies), image="other")],
            "nodeName": "elsewhere",
        },
    }
    if draw(st.booleans()):
        body["spec"]["initContainers"] = [
            _container("init", draw(requirements), []),
            _container("proxy", draw(requirements), draw(policies), restartPolicy="Always"),
        ]
    return body


@given(pods(), resize_bodies())
def test_a_resize_changes_only_resources_and_resize_policies(pod: dict[str, Any], body: dict[str, Any]) -> None:
    before = copy.deepcopy(pod)
    resized = resize_update(pod, body)
    assert pod == before  # pure
    assert resized["metadata"] == pod["metadata"] and resized["status"] == pod["status"]
    assert resized["spec"].get("nodeName") == pod["spec"].get("nodeName")

    def without_resizable(spec: dict[str, Any]) -> list[Any]:
        return [
            {k: v for k, v in c.items() if k not in ("resources", "resizePolicy")}
            for key in ("containers", "initContainers")
            for c in spec.get(key) or []
        ]

    assert without_resizable(resized["spec"]) == without_resizable(pod["spec"])
    errors = pod_resize_errors(pod, resized)  # never raises, whatever the quantities
    assert all(e.message and e.reason.startswith("FieldValue") for e in errors)
    assert container_resources_update_errors(pod["spec"], pod["spec"]) == []


@given(pods(), resize_bodies())
def test_removed_requests_and_a_changed_qos_class_are_always_refused(pod: dict[str, Any], body: dict[str, Any]) -> None:
    resized = resize_update(pod, body)
    messages = [e.message for e in pod_resize_errors(pod, resized)]
    old_requests = pod["spec"]["containers"][0]["resources"].get("requests") or {}
    new_requests = resized["spec"]["containers"][0]["resources"].get("requests") or {}
    limits = resized["spec"]["containers"][0]["resources"].get("limits") or {}
    if any(name not in new_requests and name not in limits for name in old_requests):
        assert "Forbidden: resource requests cannot be removed" in messages
    try:
        old_qos, new_qos = Pod.from_manifest(pod).qos, Pod.from_manifest(resized).qos
    except ValueError:
        return  # a quantity that does not parse: the pod's own validation refuses it
    changed = any("Pod QOS Class may not change" in m for m in messages)
    assert changed == (old_qos != new_qos)
