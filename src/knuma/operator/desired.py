"""What the operator wants on the cluster for a custom resource: the deployer's manifests, configured from the spec.

One source of truth: every object comes from the deployer's render functions (`knuma.deploy.*`) with
`DeployOptions` built from the custom resource; the operator only adds what the deployer has no notion of: one
exporter DaemonSet per node group (`numaresourcesoperator-<pool>`, selecting the group's nodes), the operand
namespace, the owner references and a label to watch the owned objects by.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from knuma.api.numaresources import (
    ANNOTATION_NRT_API_DEFINITION,
    CacheResyncDebug,
    InfoRefreshMode,
    InfoRefreshPause,
    NodeGroup,
    OperatorSpec,
    PodsFingerprinting,
    SchedulerSpec,
    wants_guaranteed_scheduler,
)
from knuma.deploy.api import render_api
from knuma.deploy.exporter import COMPONENT, CONFIG_DIR, CONFIG_KEY, POD_SECURITY_PRIVILEGED, render_knuma_exporter
from knuma.deploy.images import Images
from knuma.deploy.objects import Manifest, config_map, namespace
from knuma.deploy.options import DEFAULT_PROFILE, DeployOptions
from knuma.deploy.scheduler import render_knuma_scheduler
from knuma.operator.kubeletconfig import LABEL_NAME, LABEL_POOL, render_config

__all__ = [
    "DEFAULT_NAMESPACE",
    "NODE_GROUP_LABEL",
    "OWNED_BY_LABEL",
    "daemonset_name",
    "group_config_map",
    "operator_objects",
    "owner_reference",
    "scheduler_objects",
]

DEFAULT_NAMESPACE = "numaresources-operator"
RESYNC_DUMP_DIR = "/run/pfpstatus"
"""Where the scheduler dumps its resync checks with `cacheResyncDebug: DumpJSONFile` (upstream's path)."""
#: On every object the operator owns; the operator watches owned kinds with this label selector.
OWNED_BY_LABEL = "nodetopology.openshift.io/owned-by"
NODE_GROUP_LABEL = "nodetopology.openshift.io/node-group"


def daemonset_name(owner_name: str, pool: str) -> str:
    """`objectnames.GetComponentName`: `<cr name>-<pool>`."""
    return f"{owner_name}-{pool}"


def owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    md = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": md["name"],
        "uid": md["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def operand_namespace(name: str) -> Manifest:
    """The namespace every operand lives in; privileged because the exporter mounts host paths. It has no owner:
    like the operator's own namespace, it outlives the custom resources."""
    return namespace(name, "operator", extra_labels=POD_SECURITY_PRIVILEGED)


def _own(obj: Manifest, owner: Mapping[str, Any]) -> Manifest:
    md = obj["metadata"]
    md["ownerReferences"] = [owner_reference(owner)]
    md.setdefault("labels", {})[OWNED_BY_LABEL] = owner["metadata"]["name"]
    return obj


def _group_options(base: DeployOptions, group: NodeGroup) -> DeployOptions:
    cfg = group.config
    events = cfg.info_refresh_mode in (InfoRefreshMode.EVENTS, InfoRefreshMode.PERIODIC_AND_EVENTS)
    periodic = cfg.info_refresh_mode is not InfoRefreshMode.EVENTS
    return dataclasses.replace(
        base,
        updater_sync_period=cfg.info_refresh_period if periodic else 0.0,
        updater_notifications=events,
        updater_pfp=cfg.pods_fingerprinting is not PodsFingerprinting.DISABLED,
    )


def group_config_map(owner_name: str, namespace_name: str, pool: str, config: str) -> Manifest:
    """The node group's exporter configuration (`knuma.operator.kubeletconfig`), named and labelled as upstream's
    kubeletconfig controller names its ConfigMaps."""
    cm = config_map(daemonset_name(owner_name, pool), namespace_name, COMPONENT, {CONFIG_KEY: config})
    cm["metadata"]["labels"].update({LABEL_NAME: owner_name, LABEL_POOL: pool, NODE_GROUP_LABEL: pool})
    return cm


def _group_daemonset(daemonset: Manifest, owner_name: str, group: NodeGroup) -> Manifest:
    """The deployer's exporter DaemonSet, narrowed to one node group's nodes, reading the group's ConfigMap (mounted,
    not copied into the template: the exporter re-reads the file when the kubelet updates it, no rollout needed)."""
    ds = copy.deepcopy(daemonset)
    ds["metadata"]["name"] = daemonset_name(owner_name, group.pool)
    ds["metadata"]["labels"][NODE_GROUP_LABEL] = group.pool
    spec = ds["spec"]
    spec["selector"]["matchLabels"][NODE_GROUP_LABEL] = group.pool
    template = spec["template"]
    template["metadata"]["labels"][NODE_GROUP_LABEL] = group.pool
    pod = template["spec"]
    pod["volumes"].append({"name": "config", "configMap": {"name": daemonset_name(owner_name, group.pool)}})
    for container in pod["containers"]:
        container["volumeMounts"].append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        container["args"].append(f"--config={CONFIG_DIR}/{CONFIG_KEY}")
    if group.node_selector:
        pod["nodeSelector"] = dict(group.node_selector)
    if group.match_expressions:
        pod["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in group.match_expressions]}]
                }
            }
        }
    if group.config.tolerations:
        pod["tolerations"] = [dict(t) for t in group.config.tolerations]
    if group.config.info_refresh_pause is InfoRefreshPause.ENABLED:
        for container in pod["containers"]:
            container["args"].append("--no-publish")  # as upstream adds RTE's flag
    if group.config.pods_fingerprinting is PodsFingerprinting.ENABLED:
        for container in pod["containers"]:
            container["args"].append("--pods-fingerprint-method=all")
    if group.annotations:
        template["metadata"].setdefault("annotations", {}).update(group.annotations)
    return ds


def operator_objects(
    owner: Mapping[str, Any],
    spec: OperatorSpec,
    namespace_name: str = DEFAULT_NAMESPACE,
    images: Images = Images(),
    kubelet: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Manifest]:
    """The NRT CRD (unless the cluster defines it: `nrt-api-definition: cluster`; never owned, so it outlives the
    operator), the namespace, the exporter's shared objects, and per node group its ConfigMap (the group's distilled
    kubelet settings from `kubelet`, by pool, and the pod excludes) and its DaemonSet, in apply order."""
    annotations = (owner.get("metadata") or {}).get("annotations") or {}
    out: list[Manifest] = []
    base = DeployOptions(
        namespace=namespace_name,
        images=dataclasses.replace(images, knuma=spec.image_spec or images.knuma),
        updater_verbose=spec.log_level.verbosity,
    )
    if annotations.get(ANNOTATION_NRT_API_DEFINITION) != "cluster":
        out.extend(render_api(base))
    out.append(operand_namespace(namespace_name))
    shared = [o for o in render_knuma_exporter(base) if o["kind"] not in ("Namespace", "DaemonSet")]
    out.extend(_own(o, owner) for o in shared)
    name = owner["metadata"]["name"]
    for group in spec.node_groups:
        rendered = render_knuma_exporter(_group_options(base, group))
        daemonset = next(o for o in rendered if o["kind"] == "DaemonSet")
        config = render_config((kubelet or {}).get(group.pool) or {}, spec.pod_excludes)
        out.append(_own(group_config_map(name, namespace_name, group.pool, config), owner))
        out.append(_own(_group_daemonset(daemonset, name, group), owner))
    return out


def scheduler_options(
    spec: SchedulerSpec,
    replicas: int,
    namespace_name: str = DEFAULT_NAMESPACE,
    images: Images = Images(),
    *,
    guaranteed: bool = False,
) -> DeployOptions:
    """`guaranteed`: the CR asks for a Guaranteed scheduler pod (`scheduler-qos-request: guaranteed`)."""
    return DeployOptions(
        namespace=namespace_name,
        images=dataclasses.replace(images, knuma=spec.image_spec or images.knuma),
        replicas=replicas,
        profile_name=spec.scheduler_name or DEFAULT_PROFILE,
        resync_period=spec.cache_resync_period,
        sched_verbose=spec.log_level.verbosity,
        scoring_strategy=(
            (spec.scoring_strategy.type.value, spec.scoring_strategy.resources) if spec.scoring_strategy else None
        ),
        foreign_pods_detect=spec.cache_resync_detection.foreign_pods_detect,
        informer_mode=spec.scheduler_informer.value,
        preemption_mode=spec.preemption_mode.value if spec.preemption_mode else None,
        resync_debug_dir=RESYNC_DUMP_DIR if spec.cache_resync_debug is CacheResyncDebug.DUMP_JSON_FILE else None,
        scheduler_guaranteed=guaranteed,
    )


def scheduler_objects(
    owner: Mapping[str, Any],
    spec: SchedulerSpec,
    replicas: int,
    namespace_name: str = DEFAULT_NAMESPACE,
    images: Images = Images(),
) -> list[Manifest]:
    """The namespace, then the deployer's scheduler objects (ConfigMap, RBAC, Deployment, ...), owned by the CR."""
    options = scheduler_options(spec, replicas, namespace_name, images, guaranteed=wants_guaranteed_scheduler(owner))
    rendered = [o for o in render_knuma_scheduler(options) if o["kind"] != "Namespace"]
    return [operand_namespace(namespace_name), *(_own(o, owner) for o in rendered)]
