"""A Pod's defaults as kube-apiserver's decoder fills them in (`pkg/apis/core/v1/defaults.go` and the declarative
`+default` markers of `k8s.io/api/core/v1`, generated into `zz_generated.defaults.go`).

kube-apiserver defaults every Pod it decodes, a request body and an object read from etcd alike, so a client sees a
`securityContext: {}`, `enableServiceLinks: true`, each container's `terminationMessagePolicy: File`, a probe's
timeouts and thresholds, a secret volume's `defaultMode: 420`. Without them `kubectl get pod -o yaml` differs from a
real cluster's, and a manifest that spells the defaults out (as one copied from a cluster does) is a change to a pod
created without them: `kubectl replace` of it is refused (`pod updates may not change fields other than ...`;
pointer fields such as `securityContext` and `enableServiceLinks` compare as Go's `Semantic.DeepEqual` compares
them). The `ServiceAccount` admission plugin's additions (`serviceAccountName: default`, the token volume) are not
made: knuma's pods have no token to mount.

Followed: `SetDefaults_PodSpec`, `SetDefaults_Pod` (but its resources, `knuma.local.apiserver.defaults`),
`SetDefaults_Container` (every container, init and ephemeral ones too), `SetDefaults_Probe`,
`SetDefaults_HTTPGetAction` (probes and lifecycle handlers), `SetDefaults_ObjectFieldSelector`, `SetDefaults_Volume`
and the volume sources' `defaultMode` / `type` / `expirationSeconds`, `SetDefaults_PersistentVolumeClaimSpec` (an
ephemeral volume's claim template), and the markers `ContainerPort.protocol`, `GRPCAction.service`,
`FileKeySelector.optional` and the deprecated volume plugins' (`iscsi`, `rbd`, `azureDisk`, `scaleIO`). Pod
templates of workloads are left as written: upstream defaults them too, but a template defaulted after it was stored
would change its hash and roll every workload out again (upstream's own warning about `SetDefaults_PodSpec`).

Pure: in place on JSON objects; values of a wrong type are left for validation to report.
"""

from __future__ import annotations

from typing import Any

from knuma.api.gostructs import STRUCTS
from knuma.api.types import JsonObj

__all__ = ["default_pod"]

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
_FILE_MODE = 0o644
"""`SecretVolumeSourceDefaultMode` and its siblings: 420."""
_VOLUME_SOURCES = tuple(name for name in STRUCTS["Volume"] if name != "name")
"""`VolumeSource`'s fields (every one a pointer): a volume naming none is an `emptyDir` (`SetDefaults_Volume`)."""
_PLUGIN_DEFAULTS: dict[str, dict[str, Any]] = {
    "iscsi": {"iscsiInterface": "default"},
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "azureDisk": {"cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": False, "kind": "Shared"},
    "scaleIO": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
}
"""The `+default` markers of the deprecated volume plugins' sources."""


def default_pod(obj: JsonObj) -> None:
    """`SetDefaults_Pod` (its non-resource part) and everything its spec holds, in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _default_pod_spec(spec)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for container in _containers(spec, ("initContainers", "containers")):
            for port in _dicts(container.get("ports")):
                if not port.get("hostPort") and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]


def _default_pod_spec(spec: dict[str, Any]) -> None:
    """`SetDefaults_PodSpec` and the defaults of what the spec holds."""
    for key, value in (
        ("dnsPolicy", "ClusterFirst"),
        ("restartPolicy", "Always"),
        ("terminationGracePeriodSeconds", 30),
        ("schedulerName", "default-scheduler"),
    ):
        if spec.get(key) in (None, ""):
            spec[key] = value
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    for container in _containers(spec, _CONTAINER_LISTS):
        _default_container(container)
    for volume in _dicts(spec.get("volumes")):
        _default_volume(volume)


def _default_container(container: dict[str, Any]) -> None:
    """`SetDefaults_Container`, then its ports, probes, lifecycle handlers and environment."""
    if not container.get("imagePullPolicy"):
        image = container.get("image")
        latest = _tag(image if isinstance(image, str) else "") == "latest"
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = "/dev/termination-log"
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    for port in _dicts(container.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for key in _PROBES:
        probe = container.get(key)
        if isinstance(probe, dict):
            for field, value in _PROBE_DEFAULTS.items():
                if not probe.get(field):
                    probe[field] = value
            _default_handler(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            if isinstance(lifecycle.get(key), dict):
                _default_handler(lifecycle[key])
    for variable in _dicts(container.get("env")):
        source = variable.get("valueFrom")
        if isinstance(source, dict):
            _default_field_ref(source)
            if isinstance(source.get("fileKeyRef"), dict):
                source["fileKeyRef"].setdefault("optional", False)


def _tag(image: str) -> str:
    """The tag of an image reference as `parsers.ParseImageName` finds it (`latest` when there is neither a tag nor
    a digest)."""
    if "@" in image:
        return ""
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def _default_handler(handler: dict[str, Any]) -> None:
    """`SetDefaults_HTTPGetAction` and `GRPCAction.service`'s marker."""
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        if not http_get.get("path"):
            http_get["path"] = "/"
        if not http_get.get("scheme"):
            http_get["scheme"] = "HTTP"
    grpc = handler.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _default_field_ref(holder: dict[str, Any]) -> None:
    """`SetDefaults_ObjectFieldSelector`: a `fieldRef` without `apiVersion` reads `v1`."""
    field_ref = holder.get("fieldRef")
    if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
        field_ref["apiVersion"] = "v1"


def _default_volume(volume: dict[str, Any]) -> None:
    """`SetDefaults_Volume` and its source's defaults."""
    if all(volume.get(name) is None for name in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = volume.get(key)
        if isinstance(source, dict) and source.get("defaultMode") is None:
            source["defaultMode"] = _FILE_MODE
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        for item in _dicts(downward.get("items")):
            _default_field_ref(item)
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for source in _dicts(projected.get("sources")):
            token = source.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
            if isinstance(source.get("downwardAPI"), dict):
                for item in _dicts(source["downwardAPI"].get("items")):
                    _default_field_ref(item)
    ephemeral = volume.get("ephemeral")
    template = ephemeral.get("volumeClaimTemplate") if isinstance(ephemeral, dict) else None
    claim_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(claim_spec, dict) and claim_spec.get("volumeMode") is None:
        claim_spec["volumeMode"] = "Filesystem"
    for plugin, defaults in _PLUGIN_DEFAULTS.items():
        source = volume.get(plugin)
        if isinstance(source, dict):
            for field, value in defaults.items():
                if source.get(field) in (None, ""):
                    source[field] = value


def _containers(spec: dict[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [container for key in keys for container in _dicts(spec.get(key))]


def _dicts(raw: Any) -> list[dict[str, Any]]:
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
