"""The `updater` component, `--updater-type RTE`: resource-topology-exporter, as the upstream deployer renders it
(plus the hardened container security context and the Pod Security labels every updater namespace gets)."""

from __future__ import annotations

from typing import Any

from knuma.deploy.exporter import POD_SECURITY_PRIVILEGED, updater_namespace
from knuma.deploy.objects import (
    Manifest,
    cluster_role,
    cluster_role_binding,
    config_map,
    metadata,
    namespace,
    network_policies,
    role,
    role_binding,
    rule,
    security_context,
    service_account,
)
from knuma.deploy.openshift import SELINUX_TYPE, security_context_constraints
from knuma.deploy.options import DeployOptions, format_duration

__all__ = ["render_rte"]

NAME = "resource-topology-exporter"
SA = "rte"
COMPONENT = "updater"
METRICS_PORT = 2112
CONFIG_MAP = "rte-config"


def rte_args(options: DeployOptions) -> list[str]:
    args = []
    if options.updater_sync_period > 0:
        args.append(f"--sleep-interval={format_duration(options.updater_sync_period)}")
    args += [
        "--sysfs=/host-sys",
        "--podresources-socket=unix:///host-podresources/kubelet.sock",
        f"-v={options.updater_verbose}",
        f"--pods-fingerprint={str(options.updater_pfp).lower()}",
    ]
    if options.updater_notifications:
        args.append("--notify-file=/host-run-rte/notify")
    if not options.platform.platform.is_openshift:
        args.append("--kubelet-config-file=/host-var-lib-kubelet/config.yaml")
    return args


def _daemonset(options: DeployOptions, ns: str) -> Manifest:
    pod_labels = {"name": "resource-topology"}
    openshift = options.platform.platform.is_openshift
    security = security_context(run_as_root=True)
    if openshift:
        security["seLinuxOptions"] = {"type": SELINUX_TYPE, "level": "s0"}
    mounts: list[dict[str, Any]] = [
        {"name": "host-sys", "mountPath": "/host-sys", "readOnly": True},
        {"name": "host-podresources", "mountPath": "/host-podresources"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
        {"name": "host-podresources", "hostPath": {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}},
    ]
    if options.updater_notifications:
        mounts.append({"name": "host-run-rte", "mountPath": "/host-run-rte"})
        volumes.append({"name": "host-run-rte", "hostPath": {"path": "/run/rte", "type": "DirectoryOrCreate"}})
    if not openshift:
        mounts.append({"name": "host-var-lib-kubelet", "mountPath": "/host-var-lib-kubelet", "readOnly": True})
        volumes.append({"name": "host-var-lib-kubelet", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}})
    if options.updater_config is not None:
        mounts.append({"name": "rte-config-volume", "mountPath": "/etc/resource-topology-exporter/"})
        volumes.append({"name": "rte-config-volume", "configMap": {"name": CONFIG_MAP, "optional": True}})

    def downward(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    exporter = {
        "name": NAME,
        "image": options.images.resource_topology_exporter,
        "imagePullPolicy": options.pull_policy,
        "command": ["/bin/resource-topology-exporter"],
        "args": rte_args(options),
        "env": [
            downward("NODE_NAME", "spec.nodeName"),
            downward("REFERENCE_NAMESPACE", "metadata.namespace"),
            downward("REFERENCE_POD_NAME", "metadata.name"),
            {"name": "REFERENCE_CONTAINER_NAME", "value": "shared-pool-container"},
            {"name": "METRICS_PORT", "value": str(METRICS_PORT)},
        ],
        "ports": [{"name": "metrics-port", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": security,
        "volumeMounts": mounts,
    }
    shared_pool = {
        "name": "shared-pool-container",
        "image": options.images.pause,
        "imagePullPolicy": options.pull_policy,
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}},
        "securityContext": security_context(),
    }
    template_meta: dict[str, Any] = {"labels": dict(pod_labels)}
    if openshift:
        template_meta["annotations"] = {"openshift.io/required-scc": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, COMPONENT, ns, extra_labels=pod_labels),
        "spec": {
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": template_meta,
                "spec": {
                    "serviceAccountName": SA,
                    "priorityClassName": "system-node-critical",
                    "readinessGates": [
                        {"conditionType": "PodresourcesFetched"},
                        {"conditionType": "NodeTopologyUpdated"},
                    ],
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [exporter, shared_pool],
                    "volumes": volumes,
                },
            },
        },
    }


def render_rte(options: DeployOptions) -> list[Manifest]:
    ns = updater_namespace(options)
    objects: list[Manifest] = [namespace(ns, COMPONENT, extra_labels=POD_SECURITY_PRIVILEGED)]
    if options.updater_config is not None:
        objects.append(config_map(CONFIG_MAP, ns, COMPONENT, {"config.yaml": options.updater_config}))
    if options.platform.platform.is_openshift:
        objects += [security_context_constraints(NAME, COMPONENT, ns, SA, v) for v in ("v1", "v2")]
    objects += [
        role(SA, ns, COMPONENT, [rule([""], ["pods"], ["get"]), rule([""], ["pods/status"], ["update"])]),
        role_binding(SA, ns, COMPONENT, SA, SA, ns),
        cluster_role(
            SA,
            COMPONENT,
            [
                rule(["topology.node.k8s.io"], ["noderesourcetopologies"], ["create", "update", "get", "list"]),
                rule([""], ["nodes"], ["watch", "list"]),
            ],
        ),
        cluster_role_binding(SA, COMPONENT, SA, SA, ns),
        service_account(SA, ns, COMPONENT),
        *network_policies(
            SA,
            ns,
            COMPONENT,
            {"name": "resource-topology"},
            ingress_ports=[("metrics", METRICS_PORT)],
            api_server_ports=(6443,),
        ),
        _daemonset(options, ns),
    ]
    return objects
