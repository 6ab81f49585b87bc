"""`--load DIR_OR_FILE...`: objects created from YAML when the server starts.

The k8srm prototype's mock API server is used loaded with its testdata; `knuma apiserver --load examples/devices`
does the same for any manifests: CustomResourceDefinitions first (so their kinds exist), then Namespaces, then
everything else in file order. A directory contributes its `*.yaml`, `*.yml` and `*.json` files in name order (not
recursively); a file may hold several documents and `List` objects.

Objects go through the same rules as a `kubectl create` (defaults, validation, CRD schemas), so a bad manifest stops
the server from starting with an error naming the file, the document and the API server's message. An object that
already exists (a resumed `--data-dir`) is replaced by the file's version when they differ.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knuma.api.types import JsonObj
from knuma.errors import InvalidInput
from knuma.local.apiserver.bodies import check_bounds, check_finite
from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.rest import ObjectService, WriteOptions
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_documents

__all__ = ["LoadError", "LoadedObject", "Manifest", "load_objects", "read_manifests"]

FIELD_MANAGER = "knuma-load"
SUFFIXES = (".yaml", ".yml", ".json")


class LoadError(InvalidInput):
    """A `--load` file that cannot be read, parsed or created; the message names the file and document."""


@dataclass(frozen=True)
class Manifest:
    source: str
    """`FILE#N`: the file and the 1-based document number, for messages."""
    obj: JsonObj

    @property
    def describe(self) -> str:
        md = self.obj.get("metadata") or {}
        ns = f"{md.get('namespace')}/" if md.get("namespace") else ""
        return f"{self.obj.get('kind', '?')} {ns}{md.get('name', '?')} ({self.source})"


@dataclass(frozen=True)
class LoadedObject:
    manifest: Manifest
    action: str
    """`created`, `replaced` or `unchanged`."""


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    if path.is_file():
        return [path]
    raise LoadError(f"--load {path}: no such file or directory")


def _documents(path: Path) -> Iterable[tuple[int, Any]]:
    try:
        text = read_user_file(path)
    except UnreadableFile as err:
        raise LoadError(f"--load {err}") from None
    try:
        if path.suffix == ".json":
            yield 1, json.loads(text)
            return
        yield from enumerate(yaml_documents(text), start=1)
    except YamlProblem as err:
        raise LoadError(f"--load {path}: {err}") from None
    except ValueError as err:  # JSONDecodeError, or an integer of more than 4300 digits
        raise LoadError(f"--load {path}: malformed JSON: {err}") from None


def read_manifests(paths: Sequence[Path]) -> list[Manifest]:
    """Every object of `paths`, in the order they will be created (CRDs, Namespaces, the rest)."""
    found: list[Manifest] = []
    for path in paths:
        for file in _files(path):
            for number, doc in _documents(file):
                if doc is None:
                    continue
                source = f"{file}#{number}"
                if not isinstance(doc, dict):
                    raise LoadError(f"--load {source}: a document must be an object, got {type(doc).__name__}")
                items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else [doc]
                for item in items or []:
                    if not isinstance(item, dict) or not item.get("apiVersion") or not item.get("kind"):
                        raise LoadError(f"--load {source}: every object needs apiVersion and kind")
                    found.append(Manifest(source, item))

    def rank(m: Manifest) -> int:
        return {"CustomResourceDefinition": 0, "Namespace": 1}.get(str(m.obj.get("kind")), 2)

    return sorted(found, key=rank)  # stable: file order within a rank


def _strip_server_fields(obj: JsonObj) -> JsonObj:
    clean = copy.deepcopy(obj)
    md = clean.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        md.pop(key, None)
    return clean


def _load_one(service: ObjectService, manifest: Manifest) -> str:
    check_bounds(manifest.obj, "object")  # what a request body's decoding refuses (`bodies`): a recursive alias,
    check_finite(manifest.obj, "object")  # a size beyond the limit, a number that is not finite
    obj = _strip_server_fields(manifest.obj)
    rt = service.registry.by_kind(str(obj["apiVersion"]), str(obj["kind"]))
    if rt is None:
        raise LoadError(
            f"--load {manifest.describe}: the server has no kind {obj['kind']} in {obj['apiVersion']}; "
            "load its CustomResourceDefinition too"
        )
    md = obj["metadata"]
    namespace = str(md.get("namespace") or "default") if rt.namespaced else ""
    opts = WriteOptions(FIELD_MANAGER)
    name = md.get("name")
    existing = service.store.get(rt.storage_gr, namespace, str(name)) if name else None
    if existing is None:
        service.create(rt, namespace, obj, opts)
        return "created"
    before = service.view(rt, existing)
    after = service.update(rt, namespace, str(name), obj, opts)
    return (
        "unchanged"
        if after.get("metadata", {}).get("resourceVersion") == before["metadata"]["resourceVersion"]
        else "replaced"
    )


def load_objects(service: ObjectService, manifests: Sequence[Manifest]) -> list[LoadedObject]:
    """Create (or replace) every object; the first failure raises `LoadError` with the server's message."""
    loaded: list[LoadedObject] = []
    for manifest in manifests:
        try:
            action = _load_one(service, manifest)
        except ApiError as err:
            raise LoadError(f"--load {manifest.describe}: {err.message}") from None
        loaded.append(LoadedObject(manifest, action))
    return loaded
