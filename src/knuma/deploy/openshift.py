"""OpenShift: the SecurityContextConstraints the topology updater needs (hostPath volumes, the kubelet socket's
SELinux type), as the upstream deployer renders them.

Two versions exist upstream: `v1` (any volume type, SELinux type `rte.process` when the custom SELinux policy is
installed, `container_device_plugin_t` otherwise) and `v2` (a restricted volume list, always
`container_device_plugin_t`, which OpenShift ships). knuma installs no custom SELinux policy (no MachineConfig, no node
reboot), so both use `container_device_plugin_t`.
"""

from __future__ import annotations

from knuma.deploy.objects import Manifest, metadata

__all__ = ["SELINUX_TYPE", "security_context_constraints"]

SELINUX_TYPE = "container_device_plugin_t"


def security_context_constraints(name: str, component: str, namespace: str, sa: str, version: str) -> Manifest:
    """SCC `name` (`v1`) or `name-v2` (`v2`), usable by the updater's ServiceAccount only."""
    volumes = ["*"] if version == "v1" else ["configMap", "downwardAPI", "emptyDir", "hostPath", "projected", "secret"]
    return {
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": metadata(name if version == "v1" else f"{name}-v2", component),
        "allowHostDirVolumePlugin": True,
        "allowHostIPC": False,
        "allowHostNetwork": False,
        "allowHostPID": False,
        "allowHostPorts": False,
        "allowPrivilegeEscalation": False,
        "allowPrivilegedContainer": False,
        "allowedCapabilities": [],
        "defaultAddCapabilities": [],
        "requiredDropCapabilities": ["ALL"],
        "fsGroup": {"type": "RunAsAny"},
        "readOnlyRootFilesystem": False,
        "runAsUser": {"type": "RunAsAny"},
        "seLinuxContext": {"type": "MustRunAs", "seLinuxOptions": {"type": SELINUX_TYPE, "level": "s0"}},
        "seccompProfiles": ["runtime/default"],
        "supplementalGroups": {"type": "RunAsAny"},
        "users": [f"system:serviceaccount:{namespace}:{sa}"],
        "groups": [],
        "priority": None,
        "volumes": volumes,
    }
