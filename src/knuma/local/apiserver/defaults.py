"""Defaulting of built-in kinds: the fields a real API server fills in on create that clients rely on.

A Pod gets every default kube-apiserver's decoder gives it (`knuma.local.apiserver.poddefaults`); other kinds what
the stack and kubectl read back (namespace phase and finalizer, deployment replicas and strategy, ...).
"""

from __future__ import annotations

from typing import Any

from knuma.api.pod import Pod, PodError
from knuma.api.podresource_validation import is_supported_pod_level_resource
from knuma.api.resources import CPU, MEMORY, format_amount, is_hugepages
from knuma.api.types import JsonObj
from knuma.kube.events import timestamp
from knuma.local.apiserver.poddefaults import default_pod


def _write_pod_resources(spec: JsonObj, pod: Pod) -> None:
    """Pod-level defaulting (`knuma.api.pod.default_pod_resources`: `defaultHugePagePodLimits`, `defaultPodRequests`,
    applied when `pod` was read) written back: the amounts the pod states are kept as written, the defaulted ones
    formatted from the model's, so the stored object and what every component reads from it agree."""
    resources = spec.get("resources")
    if not isinstance(resources, dict):
        return
    for field, amounts in (("limits", pod.pod_limits), ("requests", pod.pod_requests)):
        raw = resources.get(field)
        stated: dict[str, Any] = raw if isinstance(raw, dict) else {}
        defaulted = {name: stated.get(name) or format_amount(name, amount) for name, amount in amounts.items()}
        if defaulted:
            resources[field] = {**stated, **defaulted}


def default_pod_spec_resources(obj: JsonObj) -> Pod | None:
    """`SetDefaults_Pod`'s resource part, in place: a container limit without a request requests the limit, then the
    pod-level defaults (`_write_pod_resources`). Applied to every Pod body, new or updated, as kube-apiserver's decoder
    applies it, so validation sees what will be stored and an update that omits a defaulted amount changes nothing.
    Returns the pod as read (for its QoS class), or None when it cannot be read (validation reports why)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for c in containers if isinstance(containers, list) else []:
            resources = c.get("resources") if isinstance(c, dict) else None
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                if resources.get("requests") is None:
                    resources["requests"] = {}
                requests = resources["requests"]
                if isinstance(requests, dict):
                    for name, amount in resources["limits"].items():
                        requests.setdefault(name, amount)
    try:
        pod = Pod.from_manifest(obj)
    except (PodError, ValueError):
        return None
    _write_pod_resources(spec, pod)
    return pod


def needs_resource_defaults(spec: JsonObj) -> bool:
    """Whether `default_pod_spec_resources` could change `spec`: a container limit without its request, or pod-level
    resources missing an amount `default_pod_resources` fills in (a hugepages limit the containers set, a CPU or
    memory request the containers state, a request for a limit). A pod already defaulted (every write after its
    creation, the kubelet's status writes among them) is not copied and parsed again."""
    named: set[str] = set()
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        for container in containers if isinstance(containers, list) else []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict):
                continue
            limits, requests = resources.get("limits"), resources.get("requests")
            if isinstance(limits, dict):
                if not isinstance(requests, dict) or any(name not in requests for name in limits):
                    return True
                named.update(limits)
            if isinstance(requests, dict):
                named.update(requests)
    pod_level = spec.get("resources")
    if pod_level is None:
        return False
    if not isinstance(pod_level, dict):
        return True  # validation says why
    requests, limits = pod_level.get("requests") or {}, pod_level.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return True
    if (requests or limits) and any(is_hugepages(n) and n not in requests and n not in limits for n in named):
        return True
    if limits and any(n in named and n not in requests for n in (CPU, MEMORY)):
        return True
    return any(n not in requests and is_supported_pod_level_resource(n) for n in limits)


SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def _scheduling_gated(spec: JsonObj, status: JsonObj) -> None:
    """`applySchedulingGatedCondition` (pod strategy's `PrepareForCreate`): a pod created with scheduling gates and no
    `PodScheduled` condition gets one, `False` with reason `SchedulingGated` (what `kubectl get pods` shows as its
    status until a scheduler writes another or binds it)."""
    if not spec.get("schedulingGates"):
        return
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conditions):
        return
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": None,
            "reason": "SchedulingGated",
            "message": SCHEDULING_GATED_MESSAGE,
        }
    )


def apply_defaults(kind: str, obj: JsonObj) -> None:
    """Fill in defaults in place on a new object."""
    if kind == "Pod":
        spec = obj.setdefault("spec", {})
        default_pod(obj)
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        _scheduling_gated(spec, status)
        # Malformed containers or resources are reported by validation; the QoS class is only informative.
        pod = default_pod_spec_resources(obj)
        if pod is not None:
            status.setdefault("qosClass", str(pod.qos))
    elif kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", obj["metadata"]["name"])
    elif kind == "Deployment":
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        spec.setdefault(
            "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
        )
    elif kind == "ReplicaSet":
        obj.setdefault("spec", {}).setdefault("replicas", 1)
    elif kind == "StatefulSet":
        _statefulset_defaults(obj)
        # StatefulSetStatus' `replicas` and `availableReplicas` are not omitempty in Go
        status = obj.setdefault("status", {})
        status.setdefault("replicas", 0)
        status.setdefault("availableReplicas", 0)
    elif kind == "DaemonSet":
        spec = obj.setdefault("spec", {})
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault(
            "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        )
        # DaemonSetStatus' counters are not omitempty in Go: a new DaemonSet reads back with zeros (typed clients
        # such as lightkube require them).
        status = obj.setdefault("status", {})
        for counter in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
            status.setdefault(counter, 0)
    elif kind == "Service":
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")
    else:
        apply_update_defaults(kind, obj)


def apply_update_defaults(kind: str, obj: JsonObj) -> None:
    """The defaults an update body gets too (the API server defaults every decoded body), so that omitting a field
    its create defaulted is not a change: a PriorityClass's `preemptionPolicy`, which is immutable, a Pod's spec
    (most of which is immutable: `schedulerName`, its resources) and a StatefulSet's spec, most of which is."""
    if kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind == "Pod" and isinstance(obj.get("spec"), dict):
        default_pod(obj)
        if needs_resource_defaults(obj["spec"]):
            default_pod_spec_resources(obj)
    elif kind == "StatefulSet":
        _statefulset_defaults(obj)


def _statefulset_defaults(obj: JsonObj) -> None:
    """`SetDefaults_StatefulSet` (`pkg/apis/apps/v1/defaults.go`)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(retention, dict):
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")


def _default_exact_request(request: Any) -> None:
    if not isinstance(request, dict):
        return
    request.setdefault("allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or []:
        if isinstance(toleration, dict):
            toleration.setdefault("operator", "Equal")


def apply_dra_defaults(kind: str, obj: JsonObj) -> None:
    """`pkg/apis/resource/v1/defaults.go`: a device request is `ExactCount` of 1 unless it says otherwise; a device
    taint (a DeviceTaintRule's, a ResourceSlice device's) without `timeAdded` gets the current time
    (`SetDefaults_DeviceTaint`, whole seconds), which `tolerationSeconds` count from.

    Applied on every write (not only on create), like a decoder defaulting the body: a re-applied claim that omits
    the defaults then compares equal to the stored one, which matters because a claim's spec is immutable."""
    if kind in ("DeviceTaintRule", "ResourceSlice"):
        _default_taint_times(kind, obj)
        return
    if kind == "ResourceClaim":
        spec = obj.get("spec")
    elif kind == "ResourceClaimTemplate":
        spec = (obj.get("spec") or {}).get("spec") if isinstance(obj.get("spec"), dict) else None
    else:
        return
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for request in devices.get("requests") or []:
        if not isinstance(request, dict):
            continue
        _default_exact_request(request.get("exactly"))
        for sub in request.get("firstAvailable") or []:
            _default_exact_request(sub)


def _default_taint_times(kind: str, obj: JsonObj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "DeviceTaintRule":
        taints = [spec.get("taint")]
    else:
        taints = [t for d in spec.get("devices") or [] if isinstance(d, dict) for t in d.get("taints") or []]
    for taint in taints:
        if isinstance(taint, dict) and taint.get("timeAdded") is None:
            taint["timeAdded"] = timestamp()


def prepare_dra_update(kind: str, old: JsonObj, new: JsonObj) -> None:
    """`deviceTaintRuleStrategy.PrepareForUpdate`: a DeviceTaintRule whose effect changes while the client left
    `timeAdded` as it was gets the current time, so that `timeAdded` says when the *effect* was added (a rule switched
    from `None` to `NoExecute` counts its tolerations' seconds from the switch, not from its creation)."""
    if kind != "DeviceTaintRule":
        return
    before, after = (o.get("spec") if isinstance(o, dict) else None for o in (old, new))
    if not isinstance(before, dict) or not isinstance(after, dict):
        return
    was, taint = before.get("taint"), after.get("taint")
    if not isinstance(was, dict) or not isinstance(taint, dict):
        return
    if taint.get("effect") != was.get("effect") and taint.get("timeAdded") == was.get("timeAdded"):
        taint["timeAdded"] = timestamp()
