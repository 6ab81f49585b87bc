"""Server-side apply and delete of plain manifests, reporting what changed, like `kubectl apply --server-side`.

Apply is idempotent: an object whose applied fields already hold the desired values is not written (the API server
skips no-op applies, so its resourceVersion stays), which is how `created` / `configured` / `unchanged` are told
apart. Conflicts with other field managers are forced: the deployer owns the fields it renders, and a re-run must
converge after someone edited them. With `dry_run`, the server computes the result without storing it, and the
report carries a diff against the live object. A failure is the `knuma.kube.errors` class for the server's
answer (`Forbidden`, `Invalid`, `Unavailable`...), as on every other request path.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field
from typing import Any

import yaml
from lightkube import Client
from lightkube.types import CascadeType

from knuma.kube.client import lightkube_errors
from knuma.kube.errors import NotFound
from knuma.kube.resources import RestMapper, object_ref

__all__ = ["Change", "Outcome", "apply_object", "delete_object", "get_object", "object_lines", "stripped"]

#: Fields the server owns; they differ between live and desired without anything having changed.
_SERVER_METADATA = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink")


class Change(enum.StrEnum):
    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    ABSENT = "absent"
    """Remove of an object that is not there: not an error."""
    KEPT = "kept"
    """Remove left the object in place on purpose (the NRT CRD while NodeResourceTopology objects exist)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    ref: str
    change: Change
    diff: list[str] = field(default_factory=list)
    """With dry-run: unified diff lines between the live and the would-be object."""


def stripped(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object without server-owned metadata and status, for comparisons and diffs."""
    if obj is None:
        return None
    out = {k: v for k, v in obj.items() if k != "status"}
    md = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    out["metadata"] = md
    return out


class _DiffDumper(yaml.SafeDumper):
    """Multi-line strings (configuration files in ConfigMaps) as literal blocks, so a diff shows changed lines."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_DiffDumper.add_representer(str, _literal)


def object_lines(obj: dict[str, Any] | None) -> list[str]:
    """`obj` as sorted YAML lines, for diffs."""
    return yaml.dump(obj, Dumper=_DiffDumper, sort_keys=True).splitlines() if obj is not None else []


def _diff(ref: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    text = object_lines

    return list(difflib.unified_diff(text(before), text(after), f"live/{ref}", f"applied/{ref}", lineterm="", n=2))


def get_object(client: Client, mapper: RestMapper, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The live version of `obj`, or None when it does not exist."""
    resource = mapper.resource_for(obj["apiVersion"], obj["kind"])
    md = obj["metadata"]
    try:
        with lightkube_errors():
            live = client.get(resource.lightkube_class(), md["name"], namespace=md.get("namespace"))
    except NotFound:
        return None
    return dict(live)


def apply_object(
    client: Client, mapper: RestMapper, obj: dict[str, Any], *, field_manager: str, dry_run: bool = False
) -> Outcome:
    resource = mapper.resource_for(obj["apiVersion"], obj["kind"])
    cls = resource.lightkube_class()
    ref = object_ref(obj)
    live = get_object(client, mapper, obj)
    with lightkube_errors():
        result = dict(
            client.apply(
                cls(obj),  # the namespace comes from the object's metadata
                field_manager=field_manager,
                force=True,
                dry_run=dry_run,
            )
        )
    if live is None:
        return Outcome(ref, Change.CREATED, _diff(ref, None, stripped(result)) if dry_run else [])
    if dry_run:
        before, after = stripped(live), stripped(result)
        if before == after:
            return Outcome(ref, Change.UNCHANGED)
        return Outcome(ref, Change.CONFIGURED, _diff(ref, before, after))
    same = (result.get("metadata") or {}).get("resourceVersion") == live["metadata"].get("resourceVersion")
    return Outcome(ref, Change.UNCHANGED if same else Change.CONFIGURED)


def delete_object(client: Client, mapper: RestMapper, obj: dict[str, Any], *, dry_run: bool = False) -> Outcome:
    """Delete in the background (dependents are garbage-collected); a missing object is `absent`, not an error."""
    resource = mapper.resource_for(obj["apiVersion"], obj["kind"])
    md = obj["metadata"]
    ref = object_ref(obj)
    try:
        with lightkube_errors():
            client.delete(
                resource.lightkube_class(),
                md["name"],
                namespace=md.get("namespace") if resource.namespaced else None,
                cascade=CascadeType.BACKGROUND,
                dry_run=dry_run,
            )
    except NotFound:
        return Outcome(ref, Change.ABSENT)
    return Outcome(ref, Change.DELETED)
