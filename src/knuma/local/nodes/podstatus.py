"""Pod status as the kubelet writes it: Running after admission, Failed on rejection, Succeeded on completion.

Pure functions from the pod manifest (and what the kubelet decided) to the `status` to write, so every field can be
checked against what a real kubelet reports:

- **Running**: phase, `PodReadyToStartContainers`/`Initialized`/`Ready`/`ContainersReady` conditions (plus the
  scheduler's `PodScheduled`), `hostIP(s)`, `podIP(s)`, `startTime`, `qosClass`, a running `containerStatuses` entry
  per container, init containers `Completed` and sidecars running in `initContainerStatuses`.
- **Rejected at admission** (`rejectPod`): phase `Failed`, `reason` (e.g. `TopologyAffinityError`), and the message
  with the prefix of the kubelet's version (`rejection_message`); no container ever started.
- **Succeeded**: containers terminated with exit code 0 (`Completed`), `Ready`/`ContainersReady` false with reason
  `PodCompleted`.

A pod's lifetime is the annotation `sim.knuma.io/lifetime` (a duration such as `30s` or `2m`, or seconds): the
simulated kubelet completes the pod that long after it started, as KWOK's `pod-complete` stage does. How long its
containers take to stop once the pod is deleted is `sim.knuma.io/shutdown` (default 0: they stop at once), bounded by
the grace period, after which the kubelet kills them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from knuma.api.pod import Pod
from knuma.api.types import JsonObj
from knuma.duration import DurationError, parse_interval

__all__ = [
    "LIFETIME_ANNOTATION",
    "REJECTED_PREFIX",
    "SHUTDOWN_ANNOTATION",
    "lifetime_of",
    "rejected_status",
    "rejection_message",
    "running_status",
    "shutdown_of",
    "succeeded_status",
    "timestamp",
]

LIFETIME_ANNOTATION = "sim.knuma.io/lifetime"
SHUTDOWN_ANNOTATION = "sim.knuma.io/shutdown"
REJECTED_PREFIX = "Pod was rejected: "
"""`rejectPod`'s status message prefix since kubelet 1.26 (kubernetes#112644); before, `"Pod " + message`."""
LEGACY_REJECTED_PREFIX = "Pod "
RUNTIME = "containerd"


def timestamp(when: datetime | None = None) -> str:
    """RFC 3339 at second precision, as `metav1.Time` serialises."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def lifetime_of(manifest: Mapping[str, Any]) -> float | None:
    """Seconds the pod runs before it completes; None when it runs until deleted. Raises ValueError on a bad value."""
    return _duration_annotation(manifest, LIFETIME_ANNOTATION)


def shutdown_of(manifest: Mapping[str, Any]) -> float:
    """Seconds the pod's containers take to stop once it is deleted (0: at once); the kubelet stops them anyway when
    the grace period ends. Raises ValueError on a bad value."""
    return _duration_annotation(manifest, SHUTDOWN_ANNOTATION) or 0.0


def _duration_annotation(manifest: Mapping[str, Any], name: str) -> float | None:
    raw = ((manifest.get("metadata") or {}).get("annotations") or {}).get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return parse_interval(str(raw))
    except DurationError as err:
        raise ValueError(f"annotation {name}: {err}") from None


def _condition(kind: str, status: bool, now: str, reason: str = "") -> JsonObj:
    condition: JsonObj = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason:
        condition["reason"] = reason
    return condition


def _scheduled(manifest: Mapping[str, Any], now: str) -> JsonObj:
    for condition in (manifest.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return dict(condition)
    return _condition("PodScheduled", True, now)


def _container_id(pod_uid: str, name: str) -> str:
    digest = hashlib.sha256(f"{pod_uid}/{name}".encode()).hexdigest()
    return f"{RUNTIME}://{digest}"


def _image_id(image: str) -> str:
    repository = image.split("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _status_entry(raw: Mapping[str, Any], pod_uid: str, state: JsonObj, *, ready: bool, started: bool) -> JsonObj:
    image = str(raw.get("image") or "")
    entry: JsonObj = {
        "name": raw.get("name"),
        "image": image,
        "imageID": _image_id(image),
        "containerID": _container_id(pod_uid, str(raw.get("name"))),
        "ready": ready,
        "started": started,
        "restartCount": 0,
        "state": state,
        "lastState": {},
    }
    if "running" in state:
        entry.update(container_resources(raw))
    return entry


def container_resources(raw: Mapping[str, Any]) -> JsonObj:
    """What a 1.34 kubelet reports of a running container's resources (InPlacePodVerticalScaling): the requests it
    allocated (`allocatedResources`) and what the runtime applies (`resources`, requests and limits; present even
    when empty, which tells the API server this node supports resize: `isPodResizeRequestSupported`). The
    simulated runtime applies an allocation at once."""
    resources = raw.get("resources") if isinstance(raw.get("resources"), Mapping) else {}
    requests = dict((resources or {}).get("requests") or {})
    limits = dict((resources or {}).get("limits") or {})
    out: JsonObj = {"resources": {key: value for key, value in (("limits", limits), ("requests", requests)) if value}}
    if requests:
        out["allocatedResources"] = requests
    return out


RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


def resize_status(manifest: Mapping[str, Any], reason: str, message: str, now: datetime) -> JsonObj:
    """The status patch of a resize the kubelet decided on: accepted (`reason` empty: the running containers report
    the spec's resources as allocated and applied, no resize condition left) or pending (`PodResizePending` with
    `Infeasible` or `Deferred` and why, its transition time kept while the reason stays)."""
    status = manifest.get("status") or {}
    spec = manifest.get("spec") or {}
    conditions = [c for c in status.get("conditions") or [] if c.get("type") not in RESIZE_CONDITIONS]
    out: JsonObj = {}
    if reason:
        previous: JsonObj = next((c for c in status.get("conditions") or [] if c.get("type") == "PodResizePending"), {})
        since = previous.get("lastTransitionTime") if previous.get("reason") == reason else None
        conditions.append(
            {
                "type": "PodResizePending",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": since or timestamp(now),
                "observedGeneration": (manifest.get("metadata") or {}).get("generation", 1),
            }
        )
    else:
        for key, containers in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
            by_name = {c.get("name"): c for c in spec.get(containers) or []}
            entries = []
            for entry in status.get(key) or []:
                entry = dict(entry)
                if "running" in (entry.get("state") or {}) and entry.get("name") in by_name:
                    entry.pop("allocatedResources", None)
                    entry.update(container_resources(by_name[entry["name"]]))
                entries.append(entry)
            if entries:
                out[key] = entries
    out["conditions"] = conditions
    return out


def running_status(manifest: Mapping[str, Any], pod: Pod, host_ip: str, pod_ip: str, now: datetime) -> JsonObj:
    """The status of an admitted pod whose containers all started."""
    at = timestamp(now)
    spec = manifest.get("spec") or {}
    running = {"running": {"startedAt": at}}
    init_statuses = []
    for raw in spec.get("initContainers") or []:
        if raw.get("restartPolicy") == "Always":
            init_statuses.append(_status_entry(raw, pod.uid, running, ready=True, started=True))
        else:
            done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at}}
            init_statuses.append(_status_entry(raw, pod.uid, done, ready=True, started=False))
    status: JsonObj = {
        "phase": "Running",
        "conditions": [
            _condition("PodReadyToStartContainers", True, at),
            _condition("Initialized", True, at),
            _condition("Ready", True, at),
            _condition("ContainersReady", True, at),
            _scheduled(manifest, at),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}] if pod_ip else [],
        "startTime": at,
        "qosClass": pod.qos.value,
        "containerStatuses": [
            _status_entry(raw, pod.uid, running, ready=True, started=True) for raw in spec.get("containers") or []
        ],
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    return status


def _minor(kubelet_version: str) -> int:
    """The minor version of `v1.32.0` (`1.25.3-gke.1` too); an unreadable version counts as current."""
    parts = kubelet_version.lstrip("v").split(".")
    if len(parts) >= 2 and parts[0] == "1" and parts[1].isdigit():
        return int(parts[1])
    return 10**6


def rejection_message(message: str, kubelet_version: str = "v1.34.0") -> str:
    """The status message `kubelet.rejectPod` writes for an admission failure: `Pod was rejected: <message>` since
    1.26 (kubernetes#112644, merged for 1.26), `Pod <message>` before (e.g. `Pod Resources cannot be allocated with
    Topology locality` on 1.25)."""
    prefix = REJECTED_PREFIX if _minor(kubelet_version) >= 26 else LEGACY_REJECTED_PREFIX
    return prefix + message


def rejected_status(
    manifest: Mapping[str, Any], pod: Pod, reason: str, message: str, now: datetime, kubelet_version: str = "v1.34.0"
) -> JsonObj:
    """The status `rejectPod` writes: Failed with the admission error; the scheduler's condition is kept. The QoS
    class stays set since 1.32 (kubernetes#128083); older kubelets wrote the status without it."""
    status: JsonObj = {
        "phase": "Failed",
        "reason": reason,
        "message": rejection_message(message, kubelet_version),
        "conditions": [_scheduled(manifest, timestamp(now))],
    }
    if _minor(kubelet_version) >= 32:
        status["qosClass"] = pod.qos.value
    return status


def succeeded_status(manifest: Mapping[str, Any], pod: Pod, now: datetime) -> JsonObj:
    """Every container exited 0: Succeeded, not ready any more."""
    at = timestamp(now)
    current = manifest.get("status") or {}
    started = str(current.get("startTime") or at)
    conditions = [c for c in current.get("conditions") or [] if c.get("type") not in ("Ready", "ContainersReady")] or [
        _scheduled(manifest, at)
    ]
    conditions += [
        _condition("Ready", False, at, "PodCompleted"),
        _condition("ContainersReady", False, at, "PodCompleted"),
    ]
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": at}}
    status: JsonObj = {
        "phase": "Succeeded",
        "conditions": conditions,
        "containerStatuses": [
            _status_entry(raw, pod.uid, done, ready=False, started=False)
            for raw in (manifest.get("spec") or {}).get("containers") or []
        ],
    }
    return status
