"""`knuma render operator`: the operator itself as a Deployment, with RBAC derived from what it applies.

The operator's permissions are computed, not hand-written, from the objects `desired` renders for sample custom
resources, so a new operand object cannot be forgotten and nothing more is granted:

- namespaced operands (ConfigMaps, DaemonSets, the scheduler Deployment, ServiceAccounts, NetworkPolicies, the
  scheduler's leader-election Role) live in the operand namespace: a **Role** there, per resource kind;
- cluster-scoped operands (the NRT CRD, the operand Namespace, the operands' ClusterRoles and bindings): `create`,
  and `get` / `patch` / `update` **restricted to their names**;
- the operands' own permissions (the exporter's and the scheduler's ClusterRole rules, the scheduler's Role rules),
  because the API server lets a subject create a role or a binding only with the permissions it grants (no
  `escalate` or `bind`, which would let the operator grant itself anything);
- what the operator reads: its custom resources (status and finalizers written: owner references block deletion),
  nodes and `nodes/proxy` (replica counts, the kubeletconfig controller's configz), OpenShift KubeletConfigs and
  MachineConfigPools, and its leader Lease (get / update by name).

The Deployment runs two replicas with `--leader-elect`; both probes use `/healthz`, because `/readyz` reports
leadership and a standby that never became ready would stall every rolling update.

For real clusters the CRDs convert v1alpha1 through the operator's conversion webhook (`knuma.operator.webhook`):
a Service `knuma-operator-webhook` (443 -> 9443) in front of every replica, the serving certificate in a Secret,
self-signed (its own CA, the CRDs' `caBundle`); the operator installs its CRDs at start-up with the same webhook, so
its own apply keeps them so. Without it (`--no-conversion-webhook`), strategy `None`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.numaresources import (
    API_VERSION,
    GROUP,
    OPERATOR_NAME,
    OPERATOR_PLURAL,
    SCHEDULER_NAME,
    SCHEDULER_PLURAL,
    parse_operator_spec,
    parse_scheduler_spec,
)
from knuma.api.numaresources_crd import ConversionWebhook, operator_crds
from knuma.deploy.images import Images
from knuma.deploy.objects import (
    Manifest,
    cluster_role,
    cluster_role_binding,
    metadata,
    network_policies,
    role,
    role_binding,
    rule,
    security_context,
    service_account,
)
from knuma.operator.desired import DEFAULT_NAMESPACE, operand_namespace, operator_objects, scheduler_objects

__all__ = [
    "LEASE_NAME",
    "METRICS_PORT",
    "NAME",
    "WEBHOOK_PORT",
    "WebhookTLS",
    "applied_objects",
    "operator_rules",
    "render_operator",
    "webhook_hosts",
]

NAME = "knuma-operator"
COMPONENT = "operator"
LEASE_NAME = "knuma-operator-leader"
METRICS_PORT = 8080
WEBHOOK_PORT = 9443
"""controller-runtime's (and numaresources-operator's) webhook port."""
WEBHOOK_SERVICE = "knuma-operator-webhook"
WEBHOOK_SECRET = "knuma-operator-webhook-cert"
WEBHOOK_CERT_DIR = "/etc/knuma-operator/webhook"
_ALL = ["get", "list", "watch", "create", "patch", "update", "delete"]
_PLURALS = {"NetworkPolicy": "networkpolicies"}


def _plural(kind: str) -> str:
    return _PLURALS.get(kind) or kind.lower() + "s"


def _group(obj: Manifest) -> str:
    return str(obj["apiVersion"]).rpartition("/")[0]


def applied_objects(namespace_name: str = DEFAULT_NAMESPACE, images: Images = Images()) -> list[Manifest]:
    """What the operator applies for a NUMAResourcesOperator with a node group and a NUMAResourcesScheduler."""
    uid = "00000000-0000-0000-0000-000000000000"
    owner: Manifest = {"apiVersion": API_VERSION, "kind": "NUMAResourcesOperator", "metadata": {"name": OPERATOR_NAME}}
    owner["metadata"]["uid"] = uid
    sched_owner: Manifest = {
        "apiVersion": API_VERSION,
        "kind": "NUMAResourcesScheduler",
        "metadata": {"name": SCHEDULER_NAME, "uid": uid},
    }
    spec = parse_operator_spec({"nodeGroups": [{"poolName": "worker"}]})
    return [
        *operator_objects(owner, spec, namespace_name, images),
        *scheduler_objects(sched_owner, parse_scheduler_spec({}), 2, namespace_name, images),
    ]


def _merged(rules: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules with the same groups, resources and names merged (verbs united), in first-seen order."""
    out: dict[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], dict[str, Any]] = {}
    for r in rules:
        key = (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames") or ()))
        if key in out:
            verbs = out[key]["verbs"]
            out[key]["verbs"] = [*verbs, *(v for v in r["verbs"] if v not in verbs)]
        else:
            out[key] = {**r, "verbs": list(r["verbs"])}
    return list(out.values())


def operator_rules(namespace_name: str = DEFAULT_NAMESPACE) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ClusterRole rules, Role rules in the operand namespace) of the operator."""
    objects = applied_objects(namespace_name)
    cluster: list[dict[str, Any]] = [
        rule([GROUP], [OPERATOR_PLURAL, SCHEDULER_PLURAL], ["get", "list", "watch"]),
        rule([GROUP], [f"{OPERATOR_PLURAL}/status", f"{SCHEDULER_PLURAL}/status"], ["get", "patch", "update"]),
        rule([GROUP], [f"{OPERATOR_PLURAL}/finalizers", f"{SCHEDULER_PLURAL}/finalizers"], ["update"]),
        rule([""], ["nodes"], ["get", "list", "watch"]),
        rule([""], ["nodes/proxy"], ["get"]),
        rule(["machineconfiguration.openshift.io"], ["kubeletconfigs"], ["get", "list", "watch"]),
        rule(["machineconfiguration.openshift.io"], ["machineconfigpools"], ["get", "list"]),
        rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], ["create"]),
        rule(
            ["apiextensions.k8s.io"],
            ["customresourcedefinitions"],
            ["get", "patch", "update"],
            [c["metadata"]["name"] for c in operator_crds()],
        ),
    ]
    namespaced: list[dict[str, Any]] = [
        rule(["coordination.k8s.io"], ["leases"], ["create"]),
        rule(["coordination.k8s.io"], ["leases"], ["get", "update"], [LEASE_NAME]),
    ]
    for obj in objects:
        group, plural, name = _group(obj), _plural(obj["kind"]), obj["metadata"]["name"]
        if obj["metadata"].get("namespace"):
            namespaced.append(rule([group], [plural], _ALL))
        else:
            cluster.append(rule([group], [plural], ["create"]))
            cluster.append(rule([group], [plural], ["get", "patch", "update"], [name]))
        if obj["kind"] == "ClusterRole":
            cluster.extend(obj["rules"])  # held, so that creating and binding it is no escalation
        elif obj["kind"] == "Role":
            namespaced.extend(obj["rules"])
    return _merged(cluster), _merged(namespaced)


@dataclass(frozen=True, slots=True)
class WebhookTLS:
    """The conversion webhook's serving certificate (self-signed: it is its own CA, the CRDs' caBundle) and key,
    PEM. `knuma render operator` makes one per render (`webhook_hosts` names what it must be valid for)."""

    cert_pem: str
    key_pem: str


def webhook_hosts(namespace_name: str = DEFAULT_NAMESPACE) -> list[str]:
    """The DNS names the API server may use for the webhook Service (it dials `<service>.<namespace>.svc`)."""
    base = f"{WEBHOOK_SERVICE}.{namespace_name}"
    return [WEBHOOK_SERVICE, base, f"{base}.svc", f"{base}.svc.cluster.local"]


def _webhook_objects(namespace_name: str, tls: WebhookTLS, pod_labels: Mapping[str, str]) -> list[Manifest]:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(WEBHOOK_SECRET, COMPONENT, namespace_name),
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": tls.cert_pem, "tls.key": tls.key_pem, "ca.crt": tls.cert_pem},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(WEBHOOK_SERVICE, COMPONENT, namespace_name),
        "spec": {
            "selector": dict(pod_labels),
            "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}],
        },
    }
    return [secret, service]


def _deployment(namespace_name: str, images: Images, replicas: int, webhook: bool = False) -> Manifest:
    pod_labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "knuma"}
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "initialDelaySeconds": 5, "periodSeconds": 10}
    container: Manifest = {
        "name": NAME,
        "image": images.knuma,
        "args": [
            "operator",
            f"--namespace={namespace_name}",
            "--leader-elect",
            f"--leader-elect-name={LEASE_NAME}",
            "--metrics-address=0.0.0.0",  # behind the NetworkPolicy that admits only the metrics port
            f"--metrics-port={METRICS_PORT}",
        ],
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": probe,
        "readinessProbe": probe,
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": security_context(),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes: list[Manifest] = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    if webhook:
        container["args"] += [
            f"--webhook-port={WEBHOOK_PORT}",
            "--webhook-address=0.0.0.0",  # the API server dials the pod through the Service
            f"--webhook-cert-dir={WEBHOOK_CERT_DIR}",
            f"--webhook-service={WEBHOOK_SERVICE}",
        ]
        container["ports"].append({"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"})
        container["volumeMounts"].append({"name": "webhook-cert", "mountPath": WEBHOOK_CERT_DIR, "readOnly": True})
        volumes.append({"name": "webhook-cert", "secret": {"secretName": WEBHOOK_SECRET}})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(NAME, COMPONENT, namespace_name),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {"labels": {**metadata(NAME, COMPONENT)["labels"], **pod_labels}},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": volumes,
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {"matchLabels": pod_labels},
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                },
            },
        },
    }


def render_operator(
    namespace_name: str = DEFAULT_NAMESPACE,
    images: Images = Images(),
    replicas: int = 2,
    webhook: WebhookTLS | None = None,
) -> list[Manifest]:
    """The operator's CRDs, namespace, ServiceAccount, RBAC, NetworkPolicies and Deployment, in apply order. With
    `webhook`: the CRDs convert v1alpha1 through the operator's webhook (`--webhook-port`), behind a Service, with
    its certificate in a Secret; without: conversion strategy `None`."""
    cluster_rules, namespaced_rules = operator_rules(namespace_name)
    pod_labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "knuma"}
    conversion = ConversionWebhook(namespace_name, WEBHOOK_SERVICE, webhook.cert_pem) if webhook else None
    ports = [("metrics", METRICS_PORT)] + ([("webhook", WEBHOOK_PORT)] if webhook else [])
    return [
        *operator_crds(conversion),
        operand_namespace(namespace_name),
        service_account(NAME, namespace_name, COMPONENT),
        cluster_role(NAME, COMPONENT, cluster_rules),
        cluster_role_binding(NAME, COMPONENT, NAME, NAME, namespace_name),
        role(NAME, namespace_name, COMPONENT, namespaced_rules),
        role_binding(NAME, namespace_name, COMPONENT, NAME, NAME, namespace_name),
        *network_policies(NAME, namespace_name, COMPONENT, pod_labels, ingress_ports=ports),
        *(_webhook_objects(namespace_name, webhook, pod_labels) if webhook else []),
        _deployment(namespace_name, images, replicas, webhook is not None),
    ]
