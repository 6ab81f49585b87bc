"""StatefulSet validation as kube-apiserver's (`pkg/apis/apps/validation/validation.go`, `ValidateStatefulSetSpec`
and `ValidateStatefulSetUpdate`), for what a user gets wrong: an unknown `podManagementPolicy` or update strategy,
`rollingUpdate` under `OnDelete`, a negative `replicas`, `partition` or `minReadySeconds`, an empty selector, a
selector that does not match the template's labels, a template whose `restartPolicy` is not `Always`, and, on
update, a change to a field the API server keeps fixed (`serviceName`, `selector`, `volumeClaimTemplates`,
`podManagementPolicy`): kubectl users meet that one as `spec: Forbidden: updates to statefulset spec for fields
other than ...`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver.selectors import match_label_selector_object

__all__ = ["UPDATABLE", "statefulset_causes", "statefulset_update_causes"]

Cause = tuple[str, str, str]

UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
"""The spec fields an update may change (everything else must stay as stored)."""
FORBIDDEN_UPDATE = (
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
    "forbidden"
)


def _go_map(labels: Mapping[str, Any]) -> str:
    return "map[string]string{" + ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items())) + "}"


def _unsupported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return ("FieldValueNotSupported", field, f'Unsupported value: "{value}": supported values: {listed}')


def _nonnegative(spec: Mapping[str, Any], key: str, field: str) -> list[Cause]:
    value = spec.get(key)
    if isinstance(value, int) and value < 0:
        return [("FieldValueInvalid", field, f"Invalid value: {value}: must be greater than or equal to 0")]
    return []


def statefulset_causes(obj: JsonObj) -> list[Cause]:
    """What `ValidateStatefulSetSpec` refuses (422)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy", "OrderedReady")  # validated before defaulting on create
    if policy not in ("OrderedReady", "Parallel"):
        causes.append(_unsupported("spec.podManagementPolicy", policy, ("OrderedReady", "Parallel")))
    raw_strategy = spec.get("updateStrategy")
    strategy: JsonObj = raw_strategy if isinstance(raw_strategy, dict) else {}
    kind = strategy.get("type", "RollingUpdate")
    if kind not in ("OnDelete", "RollingUpdate"):
        causes.append(_unsupported("spec.updateStrategy.type", kind, ("OnDelete", "RollingUpdate")))
    rolling = strategy.get("rollingUpdate")
    if kind == "OnDelete" and rolling is not None:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.updateStrategy.rollingUpdate",
                "Invalid value: \"OnDelete\": only allowed for updateStrategy 'RollingUpdate'",
            )
        )
    if isinstance(rolling, dict):
        causes += _nonnegative(rolling, "partition", "spec.updateStrategy.rollingUpdate.partition")
    causes += _nonnegative(spec, "replicas", "spec.replicas")
    causes += _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    selector = spec.get("selector")
    raw_template = spec.get("template")
    template: JsonObj = raw_template if isinstance(raw_template, dict) else {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            ("FieldValueInvalid", "spec.selector", "Invalid value: {}: empty selector is invalid for statefulset")
        )
    elif isinstance(selector, dict) and not match_label_selector_object(selector, dict(labels)):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`",
            )
        )
    restart = (template.get("spec") or {}).get("restartPolicy", "Always")
    if restart != "Always":
        causes.append(_unsupported("spec.template.spec.restartPolicy", restart, ("Always",)))
    return causes


def statefulset_update_causes(old: JsonObj, new: JsonObj) -> list[Cause]:
    """`ValidateStatefulSetUpdate`: the spec, less the fields an update may change, must stay as stored."""
    before = {k: v for k, v in (old.get("spec") or {}).items() if k not in UPDATABLE}
    after = {k: v for k, v in (new.get("spec") or {}).items() if k not in UPDATABLE}
    return [] if before == after else [("FieldValueForbidden", "spec", FORBIDDEN_UPDATE)]
