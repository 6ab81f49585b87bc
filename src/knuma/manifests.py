"""Reading Kubernetes manifests from YAML files, with errors that name the file and say what to fix; and
`read_user_file`, how every command reads a file the user gave (manifests, configurations, kubeconfigs, token files).
"""

from __future__ import annotations

import os
import reprlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from knuma.errors import InvalidInput

__all__ = [
    "ManifestError",
    "UnreadableFile",
    "YamlProblem",
    "load_documents",
    "load_objects",
    "pod_manifest",
    "read_user_file",
    "yaml_document",
    "yaml_documents",
    "yaml_problem",
]

_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController")


class ManifestError(InvalidInput):
    """A manifest file that cannot be read."""


class UnreadableFile(ManifestError):
    """A file the user gave cannot be read as text: `{path}: no such file` or `{path}: cannot read: {reason}`.
    `reason` alone is there for callers that word the rest themselves (`cannot read --token-auth-file F: ...`);
    `cause` is the reason without the advice (`not UTF-8 text (byte 0xff at offset 0)`, no `; save it as UTF-8`),
    for a file knuma wrote itself."""

    def __init__(self, path: str | os.PathLike[str], cause: str, advice: str = "", *, missing: bool = False) -> None:
        self.path = str(path)
        self.cause = cause
        self.reason = f"{cause}; {advice}" if advice else cause
        self.problem = self.reason if missing else f"cannot read: {self.reason}"
        """The message without the path: `no such file` or `cannot read: {reason}`."""
        super().__init__(f"{path}: {self.problem}")


def read_user_file(path: str | os.PathLike[str]) -> str:
    """The text of a file the user gave, decoded as UTF-8 as kubectl and the Kubernetes components read theirs (the
    platform's locale plays no part). Raises `UnreadableFile` saying what is wrong: no such file, the system's reason
    (`Permission denied`, `Is a directory`), or not UTF-8 text with the first bad byte, and to save it as UTF-8."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UnreadableFile(path, "no such file", missing=True) from None
    except OSError as err:
        raise UnreadableFile(path, err.strerror or str(err)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            found = "UTF-16 text (it starts with a UTF-16 byte-order mark), not UTF-8"
        else:
            found = f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        raise UnreadableFile(path, found, "save it as UTF-8") from None


def load_documents(path: str | Path) -> list[dict[str, Any]]:
    """Every non-empty YAML (or JSON) document of a file, as mappings."""
    path = Path(path)
    text = read_user_file(path)
    try:
        documents = [doc for doc in yaml_documents(text) if doc is not None]
    except YamlProblem as err:
        raise ManifestError(f"{path}: {err}") from None
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise ManifestError(f"{path}: document {index + 1} is a {type(doc).__name__}, not a Kubernetes object")
    if not documents:
        raise ManifestError(f"{path}: the file holds no Kubernetes object")
    return documents


def load_objects(paths: Iterable[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """Every document of every file, each with where it is (`FILE: document N`, N counting the non-empty
    documents as `load_documents` returns them), for errors that name the file of a bad object among many."""
    return [
        (f"{path}: document {index}", doc) for path in paths for index, doc in enumerate(load_documents(path), start=1)
    ]


class YamlProblem(ManifestError):
    """YAML that PyYAML cannot read, in one line without the file's name (the caller names it)."""


def yaml_documents(text: str) -> list[Any]:
    """Every document of a YAML (or JSON) text, as every command reads a file the user gave. What PyYAML cannot read
    is a `YamlProblem`: malformed YAML (`yaml_problem`), a scalar its constructors refuse (an integer of 5000 digits,
    the date 2024-13-45: a ValueError) and nesting too deep for Python (a RecursionError), which were tracebacks."""
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise YamlProblem(yaml_problem(err)) from None
    except ValueError as err:
        problem = str(err).split("; use sys.set_int_max_str_digits()")[0]
        raise YamlProblem(f"a value cannot be read ({problem}); quote it if it is text") from None
    except RecursionError:
        raise YamlProblem("nested too deeply to read; flatten it") from None


def yaml_document(text: str) -> Any:
    """The one document of a YAML text (None when empty), as `yaml.safe_load` reads it; more than one is a
    `YamlProblem`, as is what `yaml_documents` cannot read."""
    documents = yaml_documents(text)
    if len(documents) > 1:
        raise YamlProblem(f"holds {len(documents)} YAML documents; expected one")
    return documents[0] if documents else None


def yaml_problem(err: yaml.YAMLError) -> str:
    """One line for a YAML parse error, the same in every command: `malformed YAML at line 4, column 5: <what>`
    (PyYAML's own text spans several lines and names `<unicode string>`)."""
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err)
    return f"malformed YAML{where}: {problem}"


def pod_manifest(obj: Mapping[str, Any], source: str = "") -> Mapping[str, Any]:
    """A Pod, or the pod template of a workload (Deployment, Job, CronJob, ...), as a Pod manifest."""
    where = source or "manifest"
    kind = obj.get("kind", "Pod")
    if kind == "Pod":
        return obj
    if kind not in (*_TEMPLATE_KINDS, "CronJob"):
        raise ManifestError(f"{where}: expected a Pod or a workload with a pod template, got {kind!r}")
    spec = _mapping(obj.get("spec"), f"{where}: {kind} spec", "with the pod template (template)")
    path = "spec"
    if kind == "CronJob":
        job = _mapping(spec.get("jobTemplate"), f"{where}: CronJob spec.jobTemplate", "with the Job's spec")
        spec = _mapping(job.get("spec"), f"{where}: CronJob spec.jobTemplate.spec", "with the pod template")
        path = "spec.jobTemplate.spec"
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ManifestError(f"{where}: {kind} has no {path}.template")
    metadata = dict(_mapping(template.get("metadata"), f"{where}: {kind} {path}.template.metadata", "(labels, ...)"))
    outer = _mapping(obj.get("metadata"), f"{where}: {kind} metadata", "with name and namespace")
    metadata.setdefault("name", outer.get("name", ""))
    metadata.setdefault("namespace", outer.get("namespace", "default"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec") or {}}


def _mapping(value: Any, what: str, holding: str) -> Mapping[str, Any]:
    """`value` when it is a mapping (None: an empty one), else a `ManifestError` saying what it must be."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ManifestError(f"{what} must be a mapping {holding}, got {reprlib.repr(value)}")
    return value
