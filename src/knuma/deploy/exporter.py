"""The `updater` component, knuma variant: `knuma exporter` as a DaemonSet publishing one NodeResourceTopology per
node.

It reads the host's sysfs and the kubelet's directory (PodResources socket, `config.yaml` for the Topology Manager
settings, the CPU/memory manager state files whose changes trigger updates) through read-only hostPath mounts. It
runs as root only because the PodResources socket is root-owned; everything else is dropped.
"""

from __future__ import annotations

from typing import Any

from knuma.deploy.objects import (
    Manifest,
    cluster_role,
    cluster_role_binding,
    config_map,
    metadata,
    namespace,
    network_policies,
    rule,
    security_context,
    service_account,
)
from knuma.deploy.openshift import SELINUX_TYPE, security_context_constraints
from knuma.deploy.options import DeployOptions, format_duration

__all__ = ["NAME", "exporter_args", "render_knuma_exporter", "updater_namespace"]

NAME = "knuma-exporter"
COMPONENT = "updater"
METRICS_PORT = 2112
HOST_KUBELET = "/host-var/lib/kubelet"
HOST_SYS = "/host-sys"
HOST_NOTIFY_DIR = "/host-run/knuma"
CONFIG_DIR = "/etc/knuma-exporter"
CONFIG_KEY = "config.yaml"
#: Pods that mount host paths need the `privileged` Pod Security level (baseline forbids hostPath).
POD_SECURITY_PRIVILEGED = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}


def updater_namespace(options: DeployOptions) -> str:
    return options.namespace or "tas-topology-updater"


def exporter_args(options: DeployOptions) -> list[str]:
    """`knuma exporter`'s command line: the same flags a user would type (see `knuma exporter --help`)."""
    args = [
        f"--sysfs-root={HOST_SYS}",
        f"--podresources-socket=unix://{HOST_KUBELET}/pod-resources/kubelet.sock",
        f"--kubelet-config-file={HOST_KUBELET}/config.yaml",
        f"--kubelet-state-dir={HOST_KUBELET}",
        f"--sleep-interval={format_duration(options.updater_sync_period)}",
        "--pods-fingerprint" if options.updater_pfp else "--no-pods-fingerprint",
        f"--metrics-port={METRICS_PORT}",
    ]
    if options.updater_notifications:
        args.append(f"--notify-file={HOST_NOTIFY_DIR}/notify")
    if options.updater_dra_devices:
        args.append("--dra-devices")
    if options.updater_config is not None:
        args.append(f"--config={CONFIG_DIR}/{CONFIG_KEY}")
    return args


def _pod_spec(options: DeployOptions) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "initialDelaySeconds": 10, "periodSeconds": 10}
    security = security_context(run_as_root=True)
    if options.platform.platform.is_openshift:
        security["seLinuxOptions"] = {"type": SELINUX_TYPE, "level": "s0"}
    mounts: list[dict[str, Any]] = [
        {"name": "host-sys", "mountPath": HOST_SYS, "readOnly": True},
        {"name": "host-kubelet", "mountPath": HOST_KUBELET, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
        {"name": "host-kubelet", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
    ]
    if options.updater_notifications:
        mounts.append({"name": "host-notify", "mountPath": HOST_NOTIFY_DIR})
        volumes.append({"name": "host-notify", "hostPath": {"path": "/run/knuma", "type": "DirectoryOrCreate"}})
    if options.updater_config is not None:
        mounts.append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": f"{NAME}-config"}})
    container = {
        "name": NAME,
        "image": options.images.knuma,
        "imagePullPolicy": options.pull_policy,
        # The exporter alone, without importing the other commands: half the memory on every node.
        "command": ["python", "-m", "knuma.cli.exporter"],
        "args": exporter_args(options),
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": probe,
        "readinessProbe": {**probe, "httpGet": {"path": "/readyz", "port": "metrics"}},
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": security,
        "volumeMounts": mounts,
    }
    return {
        "serviceAccountName": NAME,
        "priorityClassName": "system-node-critical",
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": volumes,
    }


def render_knuma_exporter(options: DeployOptions) -> list[Manifest]:
    ns = updater_namespace(options)
    pod_labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "knuma"}
    rules = [
        rule(["topology.node.k8s.io"], ["noderesourcetopologies"], ["create", "get", "list", "patch", "watch"]),
        rule([""], ["nodes"], ["get"]),
    ]
    if options.updater_dra_devices:  # knuma.exporter.drawatch: this node's slices, every claim's allocation
        rules.append(rule(["resource.k8s.io"], ["resourceslices", "resourceclaims"], ["list", "watch"]))
    objects: list[Manifest] = [
        namespace(ns, COMPONENT, extra_labels=POD_SECURITY_PRIVILEGED),
        service_account(NAME, ns, COMPONENT),
        cluster_role(NAME, COMPONENT, rules),
        cluster_role_binding(NAME, COMPONENT, NAME, NAME, ns),
        *network_policies(NAME, ns, COMPONENT, pod_labels, ingress_ports=[("metrics", METRICS_PORT)]),
    ]
    if options.updater_config is not None:
        objects.append(config_map(f"{NAME}-config", ns, COMPONENT, {CONFIG_KEY: options.updater_config}))
    pod_annotations: dict[str, str] = {}
    if options.platform.platform.is_openshift:
        scc = security_context_constraints(NAME, COMPONENT, ns, NAME, options.updater_scc)
        objects.append(scc)
        pod_annotations["openshift.io/required-scc"] = scc["metadata"]["name"]
    template_meta: dict[str, Any] = {"labels": {**metadata(NAME, COMPONENT)["labels"], **pod_labels}}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": metadata(NAME, COMPONENT, ns),
            "spec": {
                "selector": {"matchLabels": pod_labels},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
                "template": {"metadata": template_meta, "spec": _pod_spec(options)},
            },
        }
    )
    return objects
