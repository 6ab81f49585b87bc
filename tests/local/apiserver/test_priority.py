"""Pod priority on `knuma apiserver` as kube-apiserver resolves it: the Priority admission plugin (the class's value
and preemption policy copied into the pod, 403 for a missing class or a contradicting spec), the system classes that
exist from the start, and PriorityClass validation (422) and uniqueness of the global default (403)."""

from __future__ import annotations

from typing import Any

from tests.local.apiserver.conftest import Http, Kubectl, pod

PODS = "/api/v1/namespaces/default/pods"
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
            **extra}  # fmt: skip


def causes(reply: Any) -> dict[str, str]:
    assert reply.status == 422, reply.json
    return {c["field"]: c["message"] for c in reply.json["details"]["causes"]}


def test_pods_get_the_priority_and_preemption_policy_of_their_class(http_client: Http, kubectl: Kubectl) -> None:
    made = http_client.post(CLASSES, priority_class("latency-critical", 100000, preemptionPolicy="Never"))
    assert made.status == 201, made.json
    created = http_client.post(PODS, pod("dpdk", priorityClassName="latency-critical"))
    assert created.status == 201, created.json
    assert (created.json["spec"]["priority"], created.json["spec"]["preemptionPolicy"]) == (100000, "Never")

    plain = http_client.post(PODS, pod("plain")).json["spec"]  # no class, no default class: 0
    assert (plain["priority"], plain["preemptionPolicy"], plain.get("priorityClassName")) == (
        0,
        "PreemptLowerPriority",
        None,
    )
    shown = kubectl("get", "pod", "dpdk", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}").stdout
    assert shown == "100000 Never"

    # a client that writes the pod back without them keeps them (the admission plugin's update rule)
    current = http_client.get(f"{PODS}/dpdk").json
    del current["spec"]["priority"], current["spec"]["preemptionPolicy"]
    replaced = http_client.put(f"{PODS}/dpdk", current)
    assert replaced.status == 200, replaced.json
    assert replaced.json["spec"]["priority"] == 100000


def test_the_system_classes_exist_and_the_global_default_applies(http_client: Http, kubectl: Kubectl) -> None:
    listed = kubectl("get", "priorityclasses", "-o", "jsonpath={range .items[*]}{.metadata.name}={.value} {end}")
    assert set(listed.stdout.split()) == {"system-cluster-critical=2000000000", "system-node-critical=2000001000"}
    critical = http_client.post(PODS, pod("dns", priorityClassName="system-cluster-critical"))
    assert created_priority(critical) == 2000000000

    assert http_client.post(CLASSES, priority_class("batch", 10, globalDefault=True)).status == 201
    defaulted = http_client.post(PODS, pod("job")).json["spec"]
    assert (defaulted["priority"], defaulted["priorityClassName"]) == (10, "batch")

    second = http_client.post(CLASSES, priority_class("other-default", 20, globalDefault=True))
    assert second.status == 403, second.json
    assert second.json["message"] == (
        'priorityclasses.scheduling.k8s.io "other-default" is forbidden: PriorityClass batch is already marked as '
        "default. Only one default can exist"
    )


def created_priority(reply: Any) -> int:
    assert reply.status == 201, reply.json
    return int(reply.json["spec"]["priority"])


def test_pods_that_name_a_missing_class_or_contradict_theirs_are_forbidden(http_client: Http) -> None:
    missing = http_client.post(PODS, pod("lost", priorityClassName="gold"))
    assert (missing.status, missing.json["reason"]) == (403, "Forbidden")
    assert missing.json["message"] == 'pods "lost" is forbidden: no PriorityClass with name gold was found'

    forged = http_client.post(PODS, pod("forged", priority=1000000))
    assert forged.status == 403
    assert forged.json["message"] == (
        'pods "forged" is forbidden: the integer value of priority (1000000) must not be provided in pod spec; '
        "priority admission controller computed 0 from the given PriorityClass name"
    )
    assert http_client.post(PODS, pod("agrees", priority=0)).status == 201  # the same value is accepted

    assert http_client.post(CLASSES, priority_class("best-effort", 1, preemptionPolicy="Never")).status == 201
    policy = http_client.post(
        PODS, pod("pushy", priorityClassName="best-effort", preemptionPolicy="PreemptLowerPriority")
    )
    assert policy.status == 403
    assert "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided" in policy.json["message"]
    assert http_client.get(f"{PODS}/lost").status == 404


def test_priority_classes_are_validated_like_kube_apiserver(http_client: Http) -> None:
    assert causes(http_client.post(CLASSES, priority_class("system-mine", 5))) == {
        "metadata.name": "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class"
    }
    assert causes(http_client.post(CLASSES, priority_class("too-high", 1000000001))) == {
        "value": "Forbidden: maximum allowed value of a user defined priority is 1000000000"
    }
    assert causes(http_client.post(CLASSES, priority_class("odd", 5, preemptionPolicy="Sometimes"))) == {
        "preemptionPolicy": 'Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'
    }
    made = http_client.post(CLASSES, priority_class("gold", 1000)).json
    changed = {**made, "value": 2000}
    assert causes(http_client.put(f"{CLASSES}/gold", changed)) == {
        "value": "Forbidden: may not be changed in an update."
    }
    described = {**made, "description": "for the latency-critical pods"}
    del described["preemptionPolicy"]  # omitted in the body: defaulted, so not a change
    updated = http_client.put(f"{CLASSES}/gold", described)
    assert updated.status == 200, updated.json
    assert updated.json["preemptionPolicy"] == "PreemptLowerPriority"
    never = {**updated.json, "preemptionPolicy": "Never"}
    assert causes(http_client.put(f"{CLASSES}/gold", never)) == {
        "preemptionPolicy": 'Invalid value: "Never": field is immutable'
    }


def test_kubectl_create_priorityclass_and_a_pod_that_uses_it(kubectl: Kubectl, http_client: Http) -> None:
    """`kubectl create priorityclass` sends protobuf (negative values as 64-bit two's complement)."""
    made = kubectl("create", "priorityclass", "scavenger", "--value=-10", "--preemption-policy=Never",
                   "--description=runs when nothing else needs the CPUs")  # fmt: skip
    assert made.stdout.strip() == "priorityclass.scheduling.k8s.io/scavenger created"
    stored = http_client.get(f"{CLASSES}/scavenger").json
    assert (stored["value"], stored["preemptionPolicy"], stored["description"]) == (
        -10,
        "Never",
        "runs when nothing else needs the CPUs",
    )
    kubectl("run", "idle", "--image=busybox", "--overrides", '{"spec": {"priorityClassName": "scavenger"}}')
    shown = kubectl("get", "pod", "idle", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}").stdout
    assert shown == "-10 Never"
    refused = kubectl("run", "lost", "--image=busybox", "--overrides", '{"spec": {"priorityClassName": "gold"}}',
                      check=False)  # fmt: skip
    assert refused.returncode == 1
    assert 'pods "lost" is forbidden: no PriorityClass with name gold was found' in refused.stderr
