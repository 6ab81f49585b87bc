"""Constructors for the plain objects every component needs: metadata with knuma's labels, Namespace,
ServiceAccount, RBAC, NetworkPolicies and the hardened container security context.

Manifests are plain dicts (what `kubectl apply -f` reads), built from typed arguments, so a component module reads
like the YAML it produces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from knuma import __version__

__all__ = [
    "Manifest",
    "cluster_role",
    "cluster_role_binding",
    "config_map",
    "labels",
    "metadata",
    "namespace",
    "network_policies",
    "role",
    "role_binding",
    "rule",
    "security_context",
    "service_account",
]

Manifest = dict[str, Any]

PART_OF = "knuma"
MANAGED_BY = "knuma"
#: The port the API server listens on behind the `kubernetes` Service: 6443 on kubeadm-style clusters, 443 on many
#: managed ones. NetworkPolicies see the endpoint port, so both are allowed.
API_SERVER_PORTS = (443, 6443)


def labels(component: str, name: str) -> dict[str, str]:
    """The recommended `app.kubernetes.io/*` labels; `remove` and users' selectors rely on them."""
    return {
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/version": __version__,
    }


def metadata(
    name: str,
    component: str,
    namespace: str | None = None,
    *,
    app: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["labels"] = {**labels(component, app or name), **(extra_labels or {})}
    if annotations:
        out["annotations"] = dict(annotations)
    return out


def namespace(name: str, component: str, *, extra_labels: Mapping[str, str] | None = None) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(name, component, extra_labels=extra_labels)}


def service_account(name: str, namespace: str, component: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(name, component, namespace),
        "automountServiceAccountToken": True,
    }


def config_map(name: str, namespace: str, component: str, data: Mapping[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, component, namespace),
        "data": dict(data),
    }


def rule(
    groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    out["verbs"] = list(verbs)
    return out


def cluster_role(name: str, component: str, rules: Iterable[dict[str, Any]]) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, component),
        "rules": list(rules),
    }


def role(name: str, namespace: str, component: str, rules: Iterable[dict[str, Any]]) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(name, component, namespace),
        "rules": list(rules),
    }


def _subject(service_account: str, namespace: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}


def cluster_role_binding(name: str, component: str, role_name: str, sa: str, sa_namespace: str) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, component),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
        "subjects": [_subject(sa, sa_namespace)],
    }


def role_binding(
    name: str, namespace: str, component: str, role_name: str, sa: str, sa_namespace: str, *, role_kind: str = "Role"
) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(name, component, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [_subject(sa, sa_namespace)],
    }


def network_policies(
    prefix: str,
    namespace: str,
    component: str,
    pod_labels: Mapping[str, str],
    *,
    ingress_ports: Sequence[tuple[str, int]] = (),
    api_server_ports: Sequence[int] = API_SERVER_PORTS,
) -> list[Manifest]:
    """Deny everything to and from the component's pods, then allow what they need: egress to the API server
    (and DNS-free, since in-cluster clients use the service IP), and ingress to the named ports (metrics, probes)."""
    selector = {"matchLabels": dict(pod_labels)}
    out = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": metadata(f"{prefix}-default-deny-all", component, namespace),
            "spec": {"podSelector": selector, "policyTypes": ["Ingress", "Egress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": metadata(f"{prefix}-egress-to-api-server", component, namespace),
            "spec": {
                "podSelector": selector,
                "policyTypes": ["Egress"],
                "egress": [{"ports": [{"protocol": "TCP", "port": port} for port in api_server_ports]}],
            },
        },
    ]
    for port_name, port in ingress_ports:
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": metadata(f"{prefix}-ingress-to-{port_name}", component, namespace),
                "spec": {
                    "podSelector": selector,
                    "policyTypes": ["Ingress"],
                    "ingress": [{"ports": [{"protocol": "TCP", "port": port}]}],
                },
            }
        )
    return out


def security_context(*, run_as_root: bool = False, uid: int = 65532) -> dict[str, Any]:
    """Read-only root filesystem, no privilege escalation, every capability dropped, the runtime's seccomp profile;
    non-root unless the component must reach a root-owned socket (the kubelet's PodResources API)."""
    out: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if run_as_root:
        out["runAsUser"] = 0
        out["runAsNonRoot"] = False
    else:
        out["runAsUser"] = uid
        out["runAsGroup"] = uid
        out["runAsNonRoot"] = True
    return out
