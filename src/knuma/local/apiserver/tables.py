"""Server-side printing: `meta.k8s.io/v1` Tables, which `kubectl get` asks for (`Accept: ...;as=Table`).

Columns follow kube-apiserver's printers for the built-in kinds the stack uses (pods show READY/STATUS/RESTARTS and,
with `-o wide`, IP and NODE; nodes show STATUS/ROLES/VERSION), and a CRD's `additionalPrinterColumns` for custom
resources. Objects are included as `PartialObjectMetadata` (the default `includeObject=Metadata`) or in full.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from knuma.api.types import JsonObj
from knuma.kube.events import parse_timestamp
from knuma.local.apiserver.resources import ResourceType

Column = tuple[str, str, int, str, Callable[[JsonObj], Any]]  # name, type, priority, description, getter


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def human_duration(seconds: float) -> str:
    """kubectl's short ages: 42s, 5m3s, 7m, 3h4m, 5d3h, 400d, 3y2d (k8s.io/apimachinery duration.HumanDuration)."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        days = h // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{h // 24 // 365}y"


def _since(ts: object) -> str:
    """`translateTimestampSince` / `translateMicroTimestampSince`: how long ago, "<unknown>" when unset."""
    then = parse_timestamp(ts)
    if then is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - then).total_seconds())


def _age(obj: JsonObj) -> str:
    return _since((obj.get("metadata") or {}).get("creationTimestamp"))


def _event_last_seen(obj: JsonObj) -> str:
    """`printEvent`'s LAST SEEN: the series' last observation, else `lastTimestamp`, else `firstTimestamp`, else
    `eventTime` (what a repeated event updates, not when it was first created)."""
    series = obj.get("series") or {}
    if series.get("lastObservedTime"):
        return _since(series["lastObservedTime"])
    return _since(obj.get("lastTimestamp") or obj.get("firstTimestamp") or obj.get("eventTime"))


def _get(obj: Any, *path: str | int) -> Any:
    cur = obj
    for p in path:
        if isinstance(p, int):
            cur = cur[p] if isinstance(cur, list) and len(cur) > p else None
        else:
            cur = cur.get(p) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def _name(obj: JsonObj) -> str:
    return str(_get(obj, "metadata", "name") or "")


def _or_none(value: Any) -> Any:
    return "<none>" if value in (None, "", []) else value


def _pod_ready(obj: JsonObj) -> str:
    total = len(_get(obj, "spec", "containers") or [])
    ready = sum(1 for c in _get(obj, "status", "containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{total}"


def _pod_status(obj: JsonObj) -> str:
    """`printPod`'s STATUS: the phase or the status's reason, `SchedulingGated` while the pod carries that
    `PodScheduled` condition, a container's waiting or terminated reason over both, `Terminating` over all."""
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    reason = str(_get(obj, "status", "reason") or _get(obj, "status", "phase") or "Unknown")
    for condition in _get(obj, "status", "conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    for cs in _get(obj, "status", "containerStatuses") or []:
        waiting = _get(cs, "state", "waiting", "reason") or _get(cs, "state", "terminated", "reason")
        if waiting:
            return str(waiting)
    return reason


def _restarts(obj: JsonObj) -> int:
    return sum(int(c.get("restartCount", 0)) for c in _get(obj, "status", "containerStatuses") or [])


def _node_status(obj: JsonObj) -> str:
    ready = next((c for c in _get(obj, "status", "conditions") or [] if c.get("type") == "Ready"), None)
    status = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    if _get(obj, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(obj: JsonObj) -> str:
    labels = _get(obj, "metadata", "labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    return ",".join(r for r in roles if r) or "<none>"


def _address(kind: str) -> Callable[[JsonObj], Any]:
    def get(obj: JsonObj) -> Any:
        for a in _get(obj, "status", "addresses") or []:
            if a.get("type") == kind:
                return a.get("address")
        return "<none>"

    return get


def _controller_column(obj: JsonObj) -> str:
    """`printControllerRevision`: `<kind>.<group>/<name>` of the controlling owner, `<none>` without one."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "").lower()
            return f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
    return "<none>"


def _ports(obj: JsonObj) -> str:
    ports = _get(obj, "spec", "ports") or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _claim_state(obj: JsonObj) -> str:
    """`resourceClaimState` of kube-apiserver's printers: deleted, pending, allocated, reserved."""
    states = []
    deleting = bool(_get(obj, "metadata", "deletionTimestamp"))
    if deleting:
        states.append("deleted")
    if not _get(obj, "status", "allocation"):
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if _get(obj, "status", "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _intstr_or_na(value: Any) -> str:
    """`printPodDisruptionBudget`: an unset minAvailable / maxUnavailable prints `N/A`."""
    return "N/A" if value is None else str(value)


def _involved(obj: JsonObj) -> str:
    ref = obj.get("involvedObject") or obj.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


NAME: Column = ("Name", "string", 0, "Name must be unique within a namespace.", _name)
AGE: Column = ("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time.", _age)

COLUMNS: dict[str, list[Column]] = {
    "Pod": [
        NAME,
        ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic.", _pod_ready),
        ("Status", "string", 0, "The aggregate status of the containers in this pod.", _pod_status),
        ("Restarts", "string", 0, "The number of times the containers in this pod have been restarted.", _restarts),
        AGE,
        ("IP", "string", 1, "IP address allocated to the pod.", lambda o: _or_none(_get(o, "status", "podIP"))),
        (
            "Node",
            "string",
            1,
            "Name of the Node this pod is assigned to.",
            lambda o: _or_none(_get(o, "spec", "nodeName")),
        ),
        (
            "Nominated Node",
            "string",
            1,
            "Name of the node where the pod may be placed by preemption.",
            lambda o: _or_none(_get(o, "status", "nominatedNodeName")),
        ),
        ("Readiness Gates", "string", 1, "Pod readiness gates.", lambda o: _or_none(_get(o, "spec", "readinessGates"))),
    ],
    "Node": [
        NAME,
        ("Status", "string", 0, "The status of the node", _node_status),
        ("Roles", "string", 0, "The roles of the node", _node_roles),
        AGE,
        ("Version", "string", 0, "Kubelet Version", lambda o: _get(o, "status", "nodeInfo", "kubeletVersion") or ""),
        ("Internal-IP", "string", 1, "List of internal IPs in the node.", _address("InternalIP")),
        ("External-IP", "string", 1, "List of external IPs in the node.", _address("ExternalIP")),
        ("OS-Image", "string", 1, "OS image", lambda o: _get(o, "status", "nodeInfo", "osImage") or "<unknown>"),
        (
            "Kernel-Version",
            "string",
            1,
            "Kernel version",
            lambda o: _get(o, "status", "nodeInfo", "kernelVersion") or "<unknown>",
        ),
        (
            "Container-Runtime",
            "string",
            1,
            "Container runtime",
            lambda o: _get(o, "status", "nodeInfo", "containerRuntimeVersion") or "<unknown>",
        ),
    ],
    "Namespace": [
        NAME,
        ("Status", "string", 0, "The status of the namespace", lambda o: _get(o, "status", "phase")),
        AGE,
    ],
    "ConfigMap": [
        NAME,
        ("Data", "integer", 0, "Number of data", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
        AGE,
    ],
    "Secret": [
        NAME,
        ("Type", "string", 0, "The type of the secret", lambda o: o.get("type", "Opaque")),
        ("Data", "integer", 0, "Number of data", lambda o: len(o.get("data") or {})),
        AGE,
    ],
    "Service": [
        NAME,
        ("Type", "string", 0, "The type of the service", lambda o: _get(o, "spec", "type") or "ClusterIP"),
        ("Cluster-IP", "string", 0, "The cluster IP", lambda o: _or_none(_get(o, "spec", "clusterIP"))),
        ("External-IP", "string", 0, "The external IP", lambda o: _or_none(_get(o, "spec", "externalIPs"))),
        ("Port(s)", "string", 0, "The ports", _ports),
        AGE,
    ],
    "Deployment": [
        NAME,
        (
            "Ready",
            "string",
            0,
            "Number of the pod with ready state",
            lambda o: f"{_get(o, 'status', 'readyReplicas') or 0}/{_get(o, 'spec', 'replicas') or 0}",
        ),
        ("Up-to-date", "integer", 0, "Updated replicas", lambda o: _get(o, "status", "updatedReplicas") or 0),
        ("Available", "integer", 0, "Available replicas", lambda o: _get(o, "status", "availableReplicas") or 0),
        AGE,
    ],
    "ReplicaSet": [
        NAME,
        ("Desired", "integer", 0, "Number of desired pods", lambda o: _get(o, "spec", "replicas") or 0),
        ("Current", "integer", 0, "Number of actually running pods", lambda o: _get(o, "status", "replicas") or 0),
        ("Ready", "integer", 0, "Number of ready pods", lambda o: _get(o, "status", "readyReplicas") or 0),
        AGE,
    ],
    "DaemonSet": [
        NAME,
        ("Desired", "integer", 0, "Desired", lambda o: _get(o, "status", "desiredNumberScheduled") or 0),
        ("Current", "integer", 0, "Current", lambda o: _get(o, "status", "currentNumberScheduled") or 0),
        ("Ready", "integer", 0, "Ready", lambda o: _get(o, "status", "numberReady") or 0),
        ("Up-to-date", "integer", 0, "Updated", lambda o: _get(o, "status", "updatedNumberScheduled") or 0),
        ("Available", "integer", 0, "Available", lambda o: _get(o, "status", "numberAvailable") or 0),
        (
            "Node Selector",
            "string",
            0,
            "Node selector",
            lambda o: (
                ",".join(f"{k}={v}" for k, v in (_get(o, "spec", "template", "spec", "nodeSelector") or {}).items())
                or "<none>"
            ),
        ),
        AGE,
    ],
    # pkg/printers/internalversion/printers.go: statefulSetColumnDefinitions (without the wide columns)
    "StatefulSet": [
        NAME,
        (
            "Ready",
            "string",
            0,
            "Number of the pod with ready state",
            lambda o: f"{_get(o, 'status', 'readyReplicas') or 0}/{_get(o, 'spec', 'replicas') or 0}",
        ),
        AGE,
    ],
    # printers.go: controllerRevisionColumnDefinitions
    "ControllerRevision": [
        NAME,
        ("Controller", "string", 0, "Controller of the object", _controller_column),
        ("Revision", "integer", 0, "Revision of the ControllerRevision", lambda o: o.get("revision") or 0),
        AGE,
    ],
    "Lease": [NAME, ("Holder", "string", 0, "Holder", lambda o: _get(o, "spec", "holderIdentity") or ""), AGE],
    "PriorityClass": [
        NAME,
        ("Value", "integer", 0, "Value", lambda o: o.get("value", 0)),
        ("Global-Default", "boolean", 0, "Global default", lambda o: bool(o.get("globalDefault"))),
        AGE,
    ],
    # pkg/printers/internalversion/printers.go: podDisruptionBudgetColumnDefinitions
    "PodDisruptionBudget": [
        NAME,
        ("Min Available", "string", 0, "Min available", lambda o: _intstr_or_na(_get(o, "spec", "minAvailable"))),
        ("Max Unavailable", "string", 0, "Max unavailable", lambda o: _intstr_or_na(_get(o, "spec", "maxUnavailable"))),
        (
            "Allowed Disruptions",
            "integer",
            0,
            "Allowed disruptions",
            lambda o: _get(o, "status", "disruptionsAllowed") or 0,
        ),
        AGE,
    ],
    "Event": [
        ("Last Seen", "string", 0, "Last seen", _event_last_seen),
        ("Type", "string", 0, "Type", lambda o: o.get("type", "")),
        ("Reason", "string", 0, "Reason", lambda o: o.get("reason", "")),
        ("Object", "string", 0, "Object", _involved),
        ("Message", "string", 0, "Message", lambda o: o.get("message") or o.get("note") or ""),
    ],
    # pkg/printers/internalversion/printers.go: deviceClass-, resourceClaim-, resourceClaimTemplate- and
    # nodeResourceSliceColumnDefinitions.
    "DeviceClass": [NAME, AGE],
    "ResourceClaim": [
        NAME,
        (
            "State",
            "string",
            0,
            "A summary of the current state (allocated, pending, reserved, etc.).",
            _claim_state,
        ),
        AGE,
    ],
    "ResourceClaimTemplate": [NAME, AGE],
    "ResourceSlice": [
        NAME,
        (
            "Node",
            "string",
            0,
            "NodeName identifies the node which provides the resources in this pool.",
            lambda o: _get(o, "spec", "nodeName") or "",
        ),
        (
            "Driver",
            "string",
            0,
            "Driver identifies the DRA driver providing the capacity information.",
            lambda o: _get(o, "spec", "driver") or "",
        ),
        ("Pool", "string", 0, "Name is used to identify the pool.", lambda o: _get(o, "spec", "pool", "name") or ""),
        AGE,
    ],
    "CustomResourceDefinition": [
        NAME,
        ("Created At", "date", 0, "Creation time", lambda o: _get(o, "metadata", "creationTimestamp") or ""),
    ],
}


def _json_path(path: str) -> Callable[[JsonObj], Any]:
    """The subset of JSONPath that printer columns use: `.a.b`, `.a[0].b`, `.a[*].b`."""
    tokens = [t for t in re.split(r"\.|(\[[^\]]*\])", path.strip().lstrip("{").rstrip("}")) if t]

    def walk(cur: Any, rest: list[str]) -> Any:
        if not rest or cur is None:
            return cur
        head, tail = rest[0], rest[1:]
        if head.startswith("["):
            inner = head[1:-1]
            if not isinstance(cur, list):
                return None
            if inner == "*":
                return [walk(item, tail) for item in cur]
            if inner.lstrip("-").isdigit():
                idx = int(inner)
                return walk(cur[idx], tail) if -len(cur) <= idx < len(cur) else None
            return None
        return walk(cur.get(head) if isinstance(cur, dict) else None, tail)

    def get(obj: JsonObj) -> Any:
        value = walk(obj, tokens)
        if isinstance(value, list):
            return ",".join(str(v) for v in value if v is not None)
        return value

    return get


def columns_for(rt: ResourceType, printer_columns: list[JsonObj] | None = None) -> list[Column]:
    if rt.kind in COLUMNS and not rt.custom:
        return COLUMNS[rt.kind]
    if printer_columns:
        cols: list[Column] = [NAME]
        for pc in printer_columns:
            getter = _age if pc.get("jsonPath") == ".metadata.creationTimestamp" else _json_path(pc.get("jsonPath", ""))
            cols.append(
                (pc["name"], pc.get("type", "string"), pc.get("priority", 0), pc.get("description", ""), getter)
            )
        if not any(pc.get("jsonPath") == ".metadata.creationTimestamp" for pc in printer_columns):
            cols.append(AGE)
        return cols
    return [NAME, AGE]


def _row_object(obj: JsonObj, include: str) -> JsonObj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table(
    columns: list[Column], objects: list[JsonObj], metadata: JsonObj, *, include: str = "Metadata", headers: bool = True
) -> JsonObj:
    rows = []
    for obj in objects:
        cells = []
        for _, type_, _, _, getter in columns:
            try:
                value = getter(obj)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                value = None
            if value is None:
                value = "<none>" if type_ == "string" else None
            cells.append(value)
        row: JsonObj = {"cells": cells}
        obj_md = _row_object(obj, include)
        if obj_md is not None:
            row["object"] = obj_md
        rows.append(row)
    out: JsonObj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}
    if headers:
        out["columnDefinitions"] = [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": d, "priority": p}
            for n, t, p, d, _ in columns
        ]
    out["rows"] = rows
    return out
