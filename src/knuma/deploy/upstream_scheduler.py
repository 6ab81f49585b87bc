"""The `scheduler` component, upstream variant (`--scheduler upstream`): the scheduler-plugins kube-scheduler with
a NodeResourceTopologyMatch profile, as the upstream deployer renders it.

Differences kept on purpose: the `extension-apiserver-authentication-reader` RoleBinding is in `kube-system` (the
upstream deployer's `render` puts it in the updater namespace), the profile name, verbosity and control-plane
placement are the same for `render` and `deploy`, containers get the hardened security context, and the
PodGroup/ElasticQuota controller is not deployed (NodeResourceTopologyMatch does not use it).
"""

from __future__ import annotations

from knuma.deploy import scheduler as knuma_scheduler
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
from knuma.deploy.options import DeployOptions

__all__ = ["render_upstream_scheduler"]

NAME = knuma_scheduler.NAME
COMPONENT = "scheduler"
CONFIG_DIR = "/etc/kubernetes"
SECURE_PORT = 10259

_READ = ["get", "list", "watch"]


def _cluster_rules() -> list[dict[str, object]]:
    return [
        rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"]),
        rule([""], ["nodes"], _READ),
        rule([""], ["pods"], ["delete", "get", "list", "watch", "update"]),
        rule([""], ["bindings", "pods/binding"], ["create"]),
        rule([""], ["pods/status"], ["patch", "update"]),
        rule([""], ["replicationcontrollers", "services", "namespaces"], _READ),
        rule(["apps", "extensions"], ["replicasets", "statefulsets"], _READ),
        rule(["policy"], ["poddisruptionbudgets"], _READ),
        rule([""], ["persistentvolumeclaims", "persistentvolumes"], [*_READ, "patch", "update"]),
        rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
        rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
        rule(["storage.k8s.io"], ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"], _READ),
        rule(["scheduling.x-k8s.io"], ["podgroups", "elasticquotas"], ["*"]),
        rule(["topology.node.k8s.io"], ["noderesourcetopologies"], _READ),
    ]


def render_upstream_scheduler(options: DeployOptions) -> list[Manifest]:
    ns = knuma_scheduler.scheduler_namespace(options)
    pod_labels = {"component": "scheduler"}
    lease_ns, lease_name = knuma_scheduler.leader_election_lease(options)
    text = knuma_scheduler.config_text(
        knuma_scheduler.scheduler_config(options, api_version="kubescheduler.config.k8s.io/v1beta3")
    )
    probe = {"httpGet": {"path": "/healthz", "port": SECURE_PORT, "scheme": "HTTPS"}, "initialDelaySeconds": 15}
    container = {
        "name": NAME,
        "image": options.images.scheduler_plugin,
        "imagePullPolicy": options.pull_policy,
        "command": ["/bin/kube-scheduler"],
        "args": [f"--config={CONFIG_DIR}/{knuma_scheduler.CONFIG_KEY}", f"-v={options.sched_verbose}"],
        "livenessProbe": probe,
        "readinessProbe": {"httpGet": probe["httpGet"]},
        "resources": {"requests": {"cpu": "200m", "memory": "500Mi"}, "limits": {"cpu": "200m", "memory": "500Mi"}},
        "securityContext": security_context(),
        "volumeMounts": [
            {"name": "scheduler-config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    elect = f"{NAME}-leader-elect"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(NAME, COMPONENT, ns, extra_labels=pod_labels),
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {
                    "labels": dict(pod_labels),
                    "annotations": {
                        knuma_scheduler.CONFIG_HASH_ANNOTATION: knuma_scheduler.config_hash(text),
                    },
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [
                        {"name": "scheduler-config", "configMap": {"name": knuma_scheduler.CONFIG_MAP}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                    ],
                    **knuma_scheduler.placement(options, pod_labels),
                },
            },
        },
    }
    return [
        namespace(ns, COMPONENT, extra_labels=knuma_scheduler.POD_SECURITY_RESTRICTED),
        service_account(NAME, ns, COMPONENT),
        cluster_role(NAME, COMPONENT, _cluster_rules()),
        cluster_role_binding(NAME, COMPONENT, NAME, NAME, ns),
        *network_policies(NAME, ns, COMPONENT, pod_labels, api_server_ports=(6443,)),
        role(
            elect,
            lease_ns,
            COMPONENT,
            [
                rule(["coordination.k8s.io"], ["leases"], ["create"]),
                rule(["coordination.k8s.io", ""], ["leases", "endpoints"], ["get", "update"], [lease_name]),
            ],
        ),
        role_binding(elect, lease_ns, COMPONENT, elect, NAME, ns),
        role_binding(
            f"{NAME}-as-kube-scheduler",
            "kube-system",
            COMPONENT,
            "extension-apiserver-authentication-reader",
            NAME,
            ns,
        ),
        config_map(knuma_scheduler.CONFIG_MAP, ns, COMPONENT, {knuma_scheduler.CONFIG_KEY: text}),
        deployment,
    ]
