"""The `updater` component, `--updater-type NFD`: node-feature-discovery's topology updater, as the upstream
deployer renders it (plus the hardened security context and Pod Security labels)."""

from __future__ import annotations

from knuma.deploy.exporter import POD_SECURITY_PRIVILEGED
from knuma.deploy.objects import (
    Manifest,
    cluster_role,
    cluster_role_binding,
    metadata,
    namespace,
    rule,
    security_context,
    service_account,
)
from knuma.deploy.options import DeployOptions, format_duration

__all__ = ["NAMESPACE", "render_nfd"]

NAME = "nfd-topology-updater"
NAMESPACE = "node-feature-discovery"
COMPONENT = "updater"


def render_nfd(options: DeployOptions) -> list[Manifest]:
    ns = NAMESPACE
    pod_labels = {"app": NAME}
    args = [
        "--kubelet-config-uri=file:///host-var/lib/kubelet/config.yaml",
        "--podresources-socket=unix:///host-var/lib/kubelet/pod-resources/kubelet.sock",
        f"-v={options.updater_verbose}",
    ]
    if options.updater_sync_period > 0:
        args.append(f"--sleep-interval={format_duration(options.updater_sync_period)}")
    args += [f"--pods-fingerprint={str(options.updater_pfp).lower()}", "--kubelet-state-dir="]
    container = {
        "name": NAME,
        "image": options.images.node_feature_discovery,
        "imagePullPolicy": options.pull_policy,
        "command": ["nfd-topology-updater"],
        "args": args,
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": security_context(run_as_root=True),
        "volumeMounts": [
            {"name": "host-sys", "mountPath": "/host-sys", "readOnly": True},
            {"name": "kubelet-state", "mountPath": "/host-var/lib/kubelet", "readOnly": True},
        ],
    }
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, COMPONENT, ns, extra_labels=pod_labels),
        "spec": {
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {"labels": dict(pod_labels)},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [
                        {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                        {"name": "kubelet-state", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
                    ],
                },
            },
        },
    }
    return [
        namespace(ns, COMPONENT, extra_labels=POD_SECURITY_PRIVILEGED),
        service_account(NAME, ns, COMPONENT),
        cluster_role(
            NAME,
            COMPONENT,
            [
                rule([""], ["nodes"], ["get", "list"]),
                rule([""], ["pods"], ["get"]),
                rule(["topology.node.k8s.io"], ["noderesourcetopologies"], ["create", "get", "update"]),
            ],
        ),
        cluster_role_binding(NAME, COMPONENT, NAME, NAME, ns),
        daemonset,
    ]
