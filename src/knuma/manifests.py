"""Reading Kubernetes manifests from YAML files, with errors that name the file and say what to fix."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from knuma.errors import InvalidInput

__all__ = ["ManifestError", "load_documents", "pod_manifest", "yaml_problem"]

_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController")


class ManifestError(InvalidInput):
    """A manifest file that cannot be read."""


def load_documents(path: str | Path) -> list[dict[str, Any]]:
    """Every non-empty YAML (or JSON) document of a file, as mappings."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(f"{path}: cannot read: {err}") from None
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        raise ManifestError(f"{path}: {yaml_problem(err)}") from None
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise ManifestError(f"{path}: document {index + 1} is a {type(doc).__name__}, not a Kubernetes object")
    if not documents:
        raise ManifestError(f"{path}: the file holds no Kubernetes object")
    return documents


def yaml_problem(err: yaml.YAMLError) -> str:
    """One line for a YAML parse error, the same in every command: `malformed YAML at line 4, column 5: <what>`
    (PyYAML's own text spans several lines and names `<unicode string>`)."""
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err)
    return f"malformed YAML{where}: {problem}"


def pod_manifest(obj: Mapping[str, Any], source: str = "") -> Mapping[str, Any]:
    """A Pod, or the pod template of a workload (Deployment, Job, CronJob, ...), as a Pod manifest."""
    kind = obj.get("kind", "Pod")
    if kind == "Pod":
        return obj
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    elif kind not in _TEMPLATE_KINDS:
        raise ManifestError(f"{source or 'manifest'}: expected a Pod or a workload with a pod template, got {kind!r}")
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ManifestError(f"{source or 'manifest'}: {kind} has no spec.template")
    metadata = dict(template.get("metadata") or {})
    outer = obj.get("metadata") or {}
    metadata.setdefault("name", outer.get("name", ""))
    metadata.setdefault("namespace", outer.get("namespace", "default"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec") or {}}
