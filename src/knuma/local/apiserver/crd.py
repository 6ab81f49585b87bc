"""CustomResourceDefinitions: turning a CRD object into served resource types, and the status the server sets.

kube-apiserver's CRD controllers mark a CRD `NamesAccepted` and then `Established` once its resources are served;
clients (kubectl wait --for=condition=Established, kopf, deploy tools) wait for that, so the server sets both
conditions in the same write that registers the resources.
"""

from __future__ import annotations

from datetime import UTC, datetime

from knuma.api.types import JsonObj
from knuma.local.apiserver import celrules
from knuma.local.apiserver.resources import ResourceType


def resource_types(crd: JsonObj) -> list[ResourceType]:
    """One `ResourceType` per served version of `crd`."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    storage = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"] if versions else "v1")
    out: list[ResourceType] = []
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        subs = tuple(s for s in ("status", "scale") if s in subresources)
        schema = ((version.get("schema") or spec.get("validation") or {}).get("openAPIV3Schema")) or None
        out.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or names["kind"].lower(),
                short_names=tuple(names.get("shortNames") or ()),
                subresources=subs,
                categories=tuple(names.get("categories") or ()),
                schema=schema,
                validation_rules=celrules.rules_present(schema),
                custom=True,
                storage_version=storage,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                scale_paths=_scale_paths(subresources.get("scale")),
            )
        )
    return out


def _scale_paths(scale: JsonObj | None) -> tuple[str, str, str]:
    scale = scale or {}
    return (
        scale.get("specReplicasPath", ".spec.replicas"),
        scale.get("statusReplicasPath", ".status.replicas"),
        scale.get("labelSelectorPath", ""),
    )


def established_status(crd: JsonObj) -> JsonObj:
    """The `status` of a served CRD: accepted names, stored versions and the two conditions clients wait for."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = crd.get("spec") or {}
    old = crd.get("status") or {}
    storage = [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
    stored = list(old.get("storedVersions") or [])
    for name in storage:
        if name not in stored:
            stored.append(name)
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    previous = {c.get("type"): c for c in old.get("conditions") or []}

    def cond(type_: str, reason: str, message: str) -> JsonObj:
        prior = previous.get(type_)
        since = prior["lastTransitionTime"] if prior and prior.get("status") == "True" else now
        return {"type": type_, "status": "True", "lastTransitionTime": since, "reason": reason, "message": message}

    return {
        "conditions": [
            cond("NamesAccepted", "NoConflicts", "no conflicts found"),
            cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    }
