"""The DaemonSet controller's decisions: which nodes need a daemon pod, which pods go, and the status to report.

Follows kube-controller-manager's `pkg/controller/daemon/daemon_controller.go`:

- `NodeShouldRunDaemonPod` / `predicates`: a node runs the daemon pod when the template's `nodeName` (if any) is the
  node, the pod's required node affinity and `nodeSelector` match it (`GetRequiredNodeAffinity`), and every
  `NoSchedule`/`NoExecute` taint is tolerated, counting the tolerations every daemon pod gets
  (`AddOrUpdateDaemonPodTolerations`). A pod already there keeps running under a `NoSchedule` taint it does not
  tolerate (`shouldContinueRunning`), not under a `NoExecute` one.
- `podsShouldBeOnNode` (no surge): create a pod on a node that should run one and has none; delete failed and
  succeeded pods (failed ones paced by a per-node backoff, 1 s doubling to 15 min as `failedPodsBackoff`), all but
  the oldest when there are several, and every pod on a node that should not run one. Unscheduled pods aimed at a
  node that no longer exists are deleted (`getUnscheduledPodsWithoutNode`).
- `util.CreatePodTemplate`: new pods carry the template plus the labels `controller-revision-hash` and
  `pod-template-generation`, the daemon tolerations, and a required node affinity `matchFields metadata.name In
  [node]` in place of the template's required terms (`ReplaceDaemonSetPodNodeNameNodeAffinity`); the scheduler binds
  them, as in Kubernetes since 1.12.
- `rollingUpdate` (no surge): with `RollingUpdate` (the default), pods of an older template are deleted, the
  unavailable ones at once and the available ones while fewer than `maxUnavailable` (default 1; an int or a
  percentage of the desired number, rounded up) desired nodes lack an available pod; the `manage` step then creates
  the new template's pods. `OnDelete` replaces a pod only when the user deletes it.
- `updateDaemonSetStatus`: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`, `numberReady`,
  `numberAvailable` (ready for `minReadySeconds`), `numberUnavailable`, `updatedNumberScheduled` (the oldest pod of
  each node carries the current hash or template generation: `util.IsPodUpdated`), and `observedGeneration`.

Each template is a ControllerRevision `<ds>-<hash>` (`knuma.local.controllers.history`, written by the manager), so
`kubectl rollout history ds` and `kubectl rollout undo ds` work; the hash is computed from the template as the
Deployment controller's `pod-template-hash`. Not modelled: surge (`maxSurge`), `collisionCount`, and events.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from knuma.api.nodeaffinity import OBJECT_NAME_FIELD, RequiredNodeAffinity, node_labels
from knuma.api.pod import is_pod_ready
from knuma.api.taints import NO_EXECUTE, NO_SCHEDULE, find_untolerated_taint, taints_of, tolerations_of
from knuma.api.types import JsonObj, meta_of, spec_of
from knuma.local.controllers.deployment import template_hash
from knuma.local.controllers.replicaset import controller_ref

__all__ = [
    "HASH_LABEL",
    "TEMPLATE_GENERATION_LABEL",
    "DaemonSetPlan",
    "FailedPodBackoff",
    "daemon_pod",
    "daemonset_hash",
    "plan_daemonset",
    "should_run",
    "target_node",
]

HASH_LABEL = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
BURST = 250
"""kube-controller-manager's DaemonSet `BurstReplicas`: at most this many creations or deletions per sync."""
FAILED_BACKOFF_INITIAL = 1.0
FAILED_BACKOFF_MAX = 15 * 60.0

DAEMON_TOLERATIONS: tuple[JsonObj, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
"""`AddOrUpdateDaemonPodTolerations`; host-network pods also tolerate `network-unavailable`."""
NETWORK_UNAVAILABLE = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


def _template(ds: Mapping[str, Any]) -> Mapping[str, Any]:
    template = spec_of(ds).get("template")
    return template if isinstance(template, Mapping) else {}


def daemonset_hash(ds: Mapping[str, Any]) -> str:
    """The current template's hash (the `controller-revision-hash` label of its pods)."""
    return template_hash(_template(ds))


def template_generation(ds: Mapping[str, Any]) -> str:
    """`util.GetTemplateGeneration`: the deprecated annotation when set, else the object's generation."""
    annotations = meta_of(ds).get("annotations") or {}
    return str(annotations.get(TEMPLATE_GENERATION_ANNOTATION) or meta_of(ds).get("generation", 1))


def _with_daemon_tolerations(spec: Mapping[str, Any]) -> list[JsonObj]:
    tolerations = [dict(t) for t in spec.get("tolerations") or [] if isinstance(t, Mapping)]
    extra = [*DAEMON_TOLERATIONS, *([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])]
    for wanted in extra:
        # AddOrUpdateTolerationInPodSpec: a toleration with the same key and effect is replaced
        tolerations = [t for t in tolerations if (t.get("key"), t.get("effect")) != (wanted["key"], wanted["effect"])]
        tolerations.append(dict(wanted))
    return tolerations


def should_run(node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
    """`NodeShouldRunDaemonPod`: (should run, should continue running) for `ds` on `node`."""
    spec = spec_of(_template(ds))
    name = str(meta_of(node).get("name") or "")
    if spec.get("nodeName") not in (None, "", name):
        return False, False
    if not RequiredNodeAffinity.from_pod_spec(spec).matches(node_labels(node), name):
        return False, False
    taints = taints_of(node)
    tolerations = tolerations_of({"tolerations": _with_daemon_tolerations(spec)})
    if find_untolerated_taint(taints, tolerations, frozenset({NO_SCHEDULE, NO_EXECUTE})) is None:
        return True, True
    return False, find_untolerated_taint(taints, tolerations, frozenset({NO_EXECUTE})) is None


def target_node(pod: Mapping[str, Any]) -> str | None:
    """`util.GetTargetNodeName`: `spec.nodeName`, or the node of the `matchFields metadata.name In` term a daemon pod
    is created with."""
    spec = spec_of(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for req in term.get("matchFields") or []:
            values = req.get("values") or []
            if req.get("key") == OBJECT_NAME_FIELD and req.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None


def daemon_pod(ds: Mapping[str, Any], node: str, digest: str) -> JsonObj:
    """A new pod of `ds` for `node` (`CreatePodTemplate` plus `ReplaceDaemonSetPodNodeNameNodeAffinity`)."""
    meta = meta_of(ds)
    template = copy.deepcopy(dict(_template(ds)))
    template_meta = dict(template.get("metadata") or {})
    spec = dict(template.get("spec") or {})
    labels = dict(template_meta.get("labels") or {})
    labels[HASH_LABEL] = digest
    labels[TEMPLATE_GENERATION_LABEL] = template_generation(ds)
    spec["tolerations"] = _with_daemon_tolerations(spec)
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [{"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In", "values": [node]}]}]
    }
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
    pod_meta: JsonObj = {
        "generateName": f"{meta.get('name')}-",
        "namespace": meta.get("namespace"),
        "labels": labels,
        "ownerReferences": [controller_ref(ds, "DaemonSet")],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


@dataclass
class FailedPodBackoff:
    """`failedPodsBackoff`: deleting a failed daemon pod on a node waits 1 s, then 2 s, 4 s ... up to 15 min, so a
    DaemonSet does not hot-loop against a kubelet that rejects its pod."""

    delay: dict[str, float] = field(default_factory=dict)
    not_before: dict[str, float] = field(default_factory=dict)

    def allow(self, key: str, now: float) -> float | None:
        """None when a failed pod on `key` may be deleted now (and the next delay doubles); else seconds to wait."""
        wait = self.not_before.get(key, 0.0) - now
        if wait > 0:
            return wait
        delay = min(FAILED_BACKOFF_MAX, self.delay.get(key, FAILED_BACKOFF_INITIAL / 2) * 2)
        self.delay[key] = delay
        self.not_before[key] = now + delay
        return None


@dataclass(frozen=True)
class DaemonSetPlan:
    create: tuple[str, ...] = ()
    """Nodes that get a new daemon pod."""
    delete: tuple[str, ...] = ()
    """Pods to delete."""
    status: JsonObj = field(default_factory=dict)
    retry_after: float | None = None


def _created(pod: Mapping[str, Any]) -> str:
    return str(meta_of(pod).get("creationTimestamp") or "")


def _oldest_first(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`podByCreationTimestampAndPhase`: scheduled pods first, then by creation time, then by name."""
    return sorted(pods, key=lambda p: (not spec_of(p).get("nodeName"), _created(p), str(meta_of(p).get("name"))))


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """`podutil.IsPodAvailable`: ready, and for at least `minReadySeconds`."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            since = _parse_time(str(condition.get("lastTransitionTime") or ""))
            return since is not None and (now - since).total_seconds() >= min_ready_seconds
    return False


def _updated(pod: Mapping[str, Any], digest: str, generation: str) -> bool:
    """`util.IsPodUpdated`."""
    labels = meta_of(pod).get("labels") or {}
    return labels.get(HASH_LABEL) == digest or labels.get(TEMPLATE_GENERATION_LABEL) == generation


def _max_unavailable(ds: Mapping[str, Any], desired: int) -> int:
    strategy = spec_of(ds).get("updateStrategy") or {}
    raw = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    if isinstance(raw, str) and raw.endswith("%"):
        try:
            value = math.ceil(float(raw[:-1]) * desired / 100)
        except ValueError:
            value = 1
    else:
        try:
            value = int(raw)
        except (TypeError, ValueError):
            value = 1
    return max(1, value) if desired else 0


def plan_daemonset(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    backoff: FailedPodBackoff,
    now: float,
    wall: datetime,
) -> DaemonSetPlan:
    """What to do for `ds` given all nodes and the pods it owns (`now` monotonic, for the backoff; `wall` for
    `minReadySeconds`)."""
    digest = daemonset_hash(ds)
    generation = template_generation(ds)
    min_ready = int(spec_of(ds).get("minReadySeconds", 0) or 0)
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        target = target_node(pod)
        if target is not None:
            by_node.setdefault(target, []).append(pod)
    uid = str(meta_of(ds).get("uid"))
    observed = (ds.get("status") or {}).get("observedGeneration", 0)
    create: list[str] = []
    delete: list[str] = []
    retry: list[float] = []
    node_names = set()
    desired_nodes: list[str] = []
    for node in nodes:
        name = str(meta_of(node).get("name") or "")
        node_names.add(name)
        run, keep = should_run(node, ds)
        if run:
            desired_nodes.append(name)
        daemon_pods = by_node.get(name, [])
        if run and not daemon_pods:
            create.append(name)
        elif keep:
            running: list[Mapping[str, Any]] = []
            for pod in daemon_pods:
                if meta_of(pod).get("deletionTimestamp"):
                    continue
                phase = (pod.get("status") or {}).get("phase")
                if phase == "Failed":
                    wait = backoff.allow(f"{uid}/{observed}/{name}", now)
                    if wait is None:
                        delete.append(str(meta_of(pod).get("name")))
                    else:
                        retry.append(wait)
                elif phase == "Succeeded":
                    delete.append(str(meta_of(pod).get("name")))
                else:
                    running.append(pod)
            delete.extend(str(meta_of(p).get("name")) for p in _oldest_first(running)[1:])
        elif daemon_pods:
            delete.extend(str(meta_of(p).get("name")) for p in daemon_pods if not meta_of(p).get("deletionTimestamp"))
    for name, daemon_pods in by_node.items():
        if name not in node_names:
            delete.extend(str(meta_of(p).get("name")) for p in daemon_pods if not spec_of(p).get("nodeName"))

    strategy = (spec_of(ds).get("updateStrategy") or {}).get("type") or "RollingUpdate"
    if strategy == "RollingUpdate" and not create and not delete:
        delete.extend(_rolling_update(ds, desired_nodes, by_node, digest, generation, min_ready, wall))

    status = _status(ds, nodes, by_node, digest, generation, min_ready, wall)
    return DaemonSetPlan(
        tuple(create[:BURST]), tuple(dict.fromkeys(delete))[:BURST], status, min(retry) if retry else None
    )


def _rolling_update(
    ds: Mapping[str, Any],
    desired_nodes: Sequence[str],
    by_node: Mapping[str, Sequence[Mapping[str, Any]]],
    digest: str,
    generation: str,
    min_ready: int,
    wall: datetime,
) -> list[str]:
    """`rollingUpdate` without surge: old pods to delete now."""
    budget = _max_unavailable(ds, len(desired_nodes))
    unavailable = 0
    old_available: list[str] = []
    delete: list[str] = []
    for name in desired_nodes:
        live = [p for p in by_node.get(name, []) if not meta_of(p).get("deletionTimestamp")]
        if not live:
            unavailable += 1
            continue
        pod = _oldest_first(live)[0]
        if _updated(pod, digest, generation):
            if not available(pod, min_ready, wall):
                unavailable += 1
            continue
        if available(pod, min_ready, wall):
            old_available.append(str(meta_of(pod).get("name")))
        else:
            unavailable += 1
            delete.append(str(meta_of(pod).get("name")))
    for name in old_available:
        if unavailable >= budget:
            break
        delete.append(name)
        unavailable += 1
    return delete


def _status(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    by_node: Mapping[str, Sequence[Mapping[str, Any]]],
    digest: str,
    generation: str,
    min_ready: int,
    wall: datetime,
) -> JsonObj:
    desired = current = misscheduled = ready_count = updated = available_count = 0
    for node in nodes:
        name = str(meta_of(node).get("name") or "")
        run, _ = should_run(node, ds)
        daemon_pods = by_node.get(name, [])
        if not run:
            misscheduled += 1 if daemon_pods else 0
            continue
        desired += 1
        if not daemon_pods:
            continue
        current += 1
        pod = _oldest_first(daemon_pods)[0]
        if is_pod_ready(pod):
            ready_count += 1
            if available(pod, min_ready, wall):
                available_count += 1
        if _updated(pod, digest, generation):
            updated += 1
    status: JsonObj = {
        "observedGeneration": meta_of(ds).get("generation", 1),
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "numberReady": ready_count,
        "updatedNumberScheduled": updated,
        "numberAvailable": available_count,
        "numberUnavailable": desired - available_count,
    }
    return status
