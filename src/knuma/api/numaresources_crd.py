"""The CustomResourceDefinitions of `NUMAResourcesOperator` and `NUMAResourcesScheduler` (v1 only).

Names, short names, scope, the singleton-name CEL rule and the enum values are numaresources-operator's; the schema
covers the fields `knuma.api.numaresources` reads (unknown fields are pruned by the API server, as usual). Both have a
`status` subresource, so the operator writes conditions without racing spec edits.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

from knuma.api.numaresources import (
    GROUP,
    OPERATOR_KIND,
    OPERATOR_NAME,
    OPERATOR_PLURAL,
    SCHEDULER_KIND,
    SCHEDULER_NAME,
    SCHEDULER_PLURAL,
    VERSION,
    CacheResyncDebug,
    CacheResyncDetection,
    InfoRefreshMode,
    InfoRefreshPause,
    LogLevel,
    PodsFingerprinting,
    PreemptionMode,
    SchedulerInformer,
    ScoringType,
)

__all__ = ["ALPHA_VERSION", "ConversionWebhook", "operator_crd", "operator_crds", "scheduler_crd"]

_STRING = {"type": "string"}
_DURATION = {"type": "string", "description": "A duration such as 10s or 1m30s; 0s disables."}
_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _enum(kind: Any, description: str) -> dict[str, Any]:
    return {"type": "string", "enum": [m.value for m in kind], "description": description}


_LOG_LEVEL = {**_enum(LogLevel, "Operand verbosity."), "default": LogLevel.NORMAL.value}

_LABEL_SELECTOR = {
    "type": "object",
    "description": "On plain Kubernetes: a node label selector choosing the group's nodes.",
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": _STRING},
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": _STRING,
                    "operator": _STRING,
                    "values": {"type": "array", "items": _STRING},
                },
            },
        },
    },
}

_NODE_GROUP_CONFIG = {
    "type": "object",
    "properties": {
        "podsFingerprinting": _enum(PodsFingerprinting, "Default EnabledExclusiveResources."),
        "infoRefreshMode": _enum(InfoRefreshMode, "Default Periodic."),
        "infoRefreshPause": _enum(
            InfoRefreshPause, "Enabled: the exporters stop writing NodeResourceTopology objects. Default Disabled."
        ),
        "infoRefreshPeriod": _DURATION,
        "tolerations": {"type": "array", "items": _OBJECT, "description": "Replace the exporter's tolerations."},
    },
}

_DISABLE_PFP = {
    "type": "boolean",
    "description": "Deprecated (v1alpha1): true means config.podsFingerprinting: Disabled.",
}
ALPHA_VERSION = "v1alpha1"
_ALPHA_WARNING = f"{GROUP}/{ALPHA_VERSION} is deprecated; use {GROUP}/{VERSION}"

_CONDITIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": _STRING,
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": _STRING,
            "message": _STRING,
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "observedGeneration": {"type": "integer", "format": "int64"},
        },
    },
}

_NAMESPACED_NAME = {"type": "object", "properties": {"namespace": _STRING, "name": _STRING}}

_RELATED = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"group": _STRING, "resource": _STRING, "namespace": _STRING, "name": _STRING},
    },
}


def _operator_schema() -> dict[str, Any]:
    node_group = {
        "type": "object",
        "properties": {
            "machineConfigPoolSelector": _LABEL_SELECTOR,
            "poolName": {
                "type": "string",
                "description": "On plain Kubernetes: the nodes labelled node-role.kubernetes.io/<poolName>.",
            },
            "config": _NODE_GROUP_CONFIG,
            "annotations": {"type": "object", "additionalProperties": _STRING, "maxProperties": 8},
            "disablePodsFingerprinting": _DISABLE_PFP,
        },
    }
    spec = {
        "type": "object",
        "properties": {
            "nodeGroups": {"type": "array", "items": node_group},
            "imageSpec": {"type": "string", "description": "The exporter image; default knuma's image."},
            "logLevel": _LOG_LEVEL,
            "podExcludes": {
                "type": "array",
                "items": {"type": "object", "properties": {"namespace": _STRING, "name": _STRING}},
            },
        },
    }
    status = {
        "type": "object",
        "properties": {
            "conditions": _CONDITIONS,
            "daemonsets": {"type": "array", "items": _NAMESPACED_NAME},
            "nodeGroups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "daemonsets": _NAMESPACED_NAME,
                        "config": _NODE_GROUP_CONFIG,
                        "selector": _STRING,
                    },
                },
            },
            "relatedObjects": _RELATED,
        },
    }
    return _root(spec, status, OPERATOR_NAME)


def _scheduler_schema() -> dict[str, Any]:
    spec = {
        "type": "object",
        "properties": {
            "imageSpec": {"type": "string", "description": "The scheduler image; default knuma's image."},
            "schedulerName": _STRING,
            "logLevel": _LOG_LEVEL,
            "cacheResyncPeriod": _DURATION,
            "replicas": {"type": "integer", "format": "int32", "minimum": 1},
            "scoringStrategy": {
                "type": "object",
                "description": "NodeResourceTopologyMatch scoringStrategy; unset: the scheduler's default.",
                "properties": {
                    "type": _enum(ScoringType, "The scoring strategy."),
                    "resources": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": _STRING, "weight": {"type": "integer", "format": "int64"}},
                        },
                    },
                },
            },
            "cacheResyncDebug": _enum(CacheResyncDebug, "Dump the cache's fingerprint checks (default DumpJSONFile)."),
            "cacheResyncDetection": _enum(
                CacheResyncDetection, "Foreign pods the cache watches: Relaxed (exclusive resources) or Aggressive."
            ),
            "schedulerInformer": _enum(SchedulerInformer, "The cache's pod informer (default Dedicated)."),
            "preemptionMode": _enum(PreemptionMode, "Preemption by the NUMA-aware profile; unset: disabled."),
        },
    }
    status = {
        "type": "object",
        "properties": {
            "conditions": _CONDITIONS,
            "deployment": _NAMESPACED_NAME,
            "schedulerName": _STRING,
            "cacheResyncPeriod": _STRING,
            "relatedObjects": _RELATED,
        },
    }
    return _root(spec, status, SCHEDULER_NAME)


def _operator_alpha_schema() -> dict[str, Any]:
    """v1alpha1: node groups by machineConfigPoolSelector only, `disablePodsFingerprinting`, no annotations,
    tolerations or pool names; the status without nodeGroups and relatedObjects."""
    config: dict[str, Any] = copy.deepcopy(_NODE_GROUP_CONFIG)
    config["properties"] = {k: v for k, v in config["properties"].items() if k != "tolerations"}
    node_group = {
        "type": "object",
        "properties": {
            "machineConfigPoolSelector": _LABEL_SELECTOR,
            "config": config,
            "disablePodsFingerprinting": _DISABLE_PFP,
        },
    }
    spec = {
        "type": "object",
        "properties": {
            "nodeGroups": {"type": "array", "items": node_group},
            "imageSpec": _STRING,
            "logLevel": _LOG_LEVEL,
            "podExcludes": {
                "type": "array",
                "items": {"type": "object", "properties": {"namespace": _STRING, "name": _STRING}},
            },
        },
    }
    status = {
        "type": "object",
        "properties": {"conditions": _CONDITIONS, "daemonsets": {"type": "array", "items": _NAMESPACED_NAME}},
    }
    return _root(spec, status, OPERATOR_NAME)


def _scheduler_alpha_schema() -> dict[str, Any]:
    spec = {
        "type": "object",
        "properties": {
            "imageSpec": _STRING,
            "schedulerName": _STRING,
            "logLevel": _LOG_LEVEL,
            "cacheResyncPeriod": _DURATION,
        },
    }
    status = {
        "type": "object",
        "properties": {"conditions": _CONDITIONS, "deployment": _NAMESPACED_NAME, "schedulerName": _STRING},
    }
    return _root(spec, status, SCHEDULER_NAME)


def _root(spec: dict[str, Any], status: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "x-kubernetes-validations": [
            {
                "rule": f"has(self.metadata.name) && self.metadata.name == '{name}'",
                "message": f"the only accepted name is {name}",
            }
        ],
    }


def _crd(kind: str, plural: str, short: str, schema: dict[str, Any], alpha: dict[str, Any]) -> dict[str, Any]:
    """v1 (stored) and the deprecated v1alpha1, converted with strategy `None` (the API server only rewrites
    `apiVersion`; the operator reads v1alpha1's one renamed field, `disablePodsFingerprinting`, itself)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
            },
            "scope": "Cluster",
            "conversion": {"strategy": "None"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                },
                {
                    "name": ALPHA_VERSION,
                    "served": True,
                    "storage": False,
                    "deprecated": True,
                    "deprecationWarning": _ALPHA_WARNING,
                    "schema": {"openAPIV3Schema": alpha},
                    "subresources": {"status": {}},
                },
            ],
        },
    }


@dataclass(frozen=True, slots=True)
class ConversionWebhook:
    """Where the API server sends ConversionReviews for v1alpha1 <-> v1 (the operator's webhook Service), and the CA
    that signed its serving certificate (PEM)."""

    namespace: str
    service: str
    ca_bundle_pem: str
    path: str = "/convert"
    port: int = 443

    def conversion(self) -> dict[str, Any]:
        """The CRD's `spec.conversion` (`apiextensions.k8s.io/v1`, ConversionReview v1)."""
        return {
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {
                    "service": {
                        "namespace": self.namespace,
                        "name": self.service,
                        "path": self.path,
                        "port": self.port,
                    },
                    "caBundle": base64.b64encode(self.ca_bundle_pem.encode()).decode(),
                },
            },
        }


def _with(crd: dict[str, Any], webhook: ConversionWebhook | None) -> dict[str, Any]:
    out = copy.deepcopy(crd)
    if webhook is not None:
        out["spec"]["conversion"] = webhook.conversion()
    return out


def operator_crd(webhook: ConversionWebhook | None = None) -> dict[str, Any]:
    return _with(
        _crd(OPERATOR_KIND, OPERATOR_PLURAL, "numaresop", _operator_schema(), _operator_alpha_schema()), webhook
    )


def scheduler_crd(webhook: ConversionWebhook | None = None) -> dict[str, Any]:
    return _with(
        _crd(SCHEDULER_KIND, SCHEDULER_PLURAL, "numaressched", _scheduler_schema(), _scheduler_alpha_schema()),
        webhook,
    )


def operator_crds(webhook: ConversionWebhook | None = None) -> list[dict[str, Any]]:
    """Both CRDs, what `knuma operator --render-crds` prints and `knuma operator --install-crds` applies: conversion
    strategy `None` (`knuma apiserver`, clusters that only ever see v1), or `Webhook` to the operator's conversion
    webhook (`knuma.operator.webhook`), which converts v1alpha1's fields as upstream does."""
    return [operator_crd(webhook), scheduler_crd(webhook)]
