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

import yaml

from knuma.api.numaresources import (
    ANNOTATION_NRT_API_DEFINITION,
    InfoRefreshMode,
    NodeGroup,
    OperatorSpec,
    PodsFingerprinting,
    SchedulerSpec,
)
from knuma.deploy.api import render_api
from knuma.deploy.exporter import POD_SECURITY_PRIVILEGED, render_knuma_exporter
from knuma.deploy.images import Images
from knuma.deploy.objects import Manifest, namespace
from knuma.deploy.options import DEFAULT_PROFILE, DeployOptions
from knuma.deploy.scheduler import render_knuma_scheduler

__all__ = [
    "DEFAULT_NAMESPACE",
    "NODE_GROUP_LABEL",
    "OWNED_BY_LABEL",
    "daemonset_name",
    "operator_objects",
    "owner_reference",
    "scheduler_objects",
]

DEFAULT_NAMESPACE = "numaresources-operator"
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


def _exporter_config(spec: OperatorSpec) -> str | None:
    """The exporter's `--config` file (RTE's format): the pods it must not account."""
    if not spec.pod_excludes:
        return None
    excludes = [{"namespacePattern": ns, "namePattern": name} for ns, name in spec.pod_excludes]
    return yaml.safe_dump({"podExclude": excludes}, sort_keys=False)


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


def _group_daemonset(daemonset: Manifest, owner_name: str, group: NodeGroup) -> Manifest:
    """The deployer's exporter DaemonSet, narrowed to one node group's nodes."""
    ds = copy.deepcopy(daemonset)
    ds["metadata"]["name"] = daemonset_name(owner_name, group.pool)
    ds["metadata"]["labels"][NODE_GROUP_LABEL] = group.pool
    spec = ds["spec"]
    spec["selector"]["matchLabels"][NODE_GROUP_LABEL] = group.pool
    template = spec["template"]
    template["metadata"]["labels"][NODE_GROUP_LABEL] = group.pool
    pod = template["spec"]
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
    if group.config.pods_fingerprinting is PodsFingerprinting.ENABLED:
        for container in pod["containers"]:
            container["args"].append("--pods-fingerprint-method=all")
    if group.annotations:
        template["metadata"].setdefault("annotations", {}).update(group.annotations)
    return ds


def operator_objects(
    owner: Mapping[str, Any], spec: OperatorSpec, namespace_name: str = DEFAULT_NAMESPACE, images: Images = Images()
) -> list[Manifest]:
    """The NRT CRD (unless the cluster defines it: `nrt-api-definition: cluster`; never owned, so it outlives the
    operator), the namespace, the exporter's shared objects and one DaemonSet per node group, in apply order."""
    annotations = (owner.get("metadata") or {}).get("annotations") or {}
    out: list[Manifest] = []
    base = DeployOptions(
        namespace=namespace_name,
        images=dataclasses.replace(images, knuma=spec.image_spec or images.knuma),
        updater_config=_exporter_config(spec),
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
        out.append(_own(_group_daemonset(daemonset, name, group), owner))
    return out


def scheduler_options(
    spec: SchedulerSpec, replicas: int, namespace_name: str = DEFAULT_NAMESPACE, images: Images = Images()
) -> DeployOptions:
    return DeployOptions(
        namespace=namespace_name,
        images=dataclasses.replace(images, knuma=spec.image_spec or images.knuma),
        replicas=replicas,
        profile_name=spec.scheduler_name or DEFAULT_PROFILE,
        resync_period=spec.cache_resync_period,
        sched_verbose=spec.log_level.verbosity,
    )


def scheduler_objects(
    owner: Mapping[str, Any],
    spec: SchedulerSpec,
    replicas: int,
    namespace_name: str = DEFAULT_NAMESPACE,
    images: Images = Images(),
) -> list[Manifest]:
    """The namespace, then the deployer's scheduler objects (ConfigMap, RBAC, Deployment, ...), owned by the CR."""
    options = scheduler_options(spec, replicas, namespace_name, images)
    rendered = [o for o in render_knuma_scheduler(options) if o["kind"] != "Namespace"]
    return [operand_namespace(namespace_name), *(_own(o, owner) for o in rendered)]
