"""Publish the node's NodeResourceTopology object: create it once, then merge-patch only what changed.

The decisions are pure functions (`desired_object`, `merge_patch`) over plain dicts; `Publisher` is the thin async
loop around them that talks to the API server through lightkube.

- Create: the object is named after the node and, unless disabled, owned by the Node (`ownerReferences`
  `[{apiVersion: v1, kind: Node, name, uid}]`), so it is garbage-collected with the node.
- Update: an RFC 7386 JSON merge patch of the fields the exporter owns (`zones`, `attributes`, the fingerprint
  annotation, the owner reference). Lists are replaced whole, as the CRD declares plain arrays. Nothing is sent when
  nothing changed. The patch carries the `resourceVersion` it was computed against: if someone else wrote the object
  in between, the API server answers 409 Conflict and the publisher re-reads the object and recomputes the patch.
- The object is built completely before any write, so a failure never leaves a partial object behind.
- The owner reference (the Node's UID) is read again whenever the object is (every `resync_every` publishes, after
  a deletion, a conflict or a lost connection): a Node deleted and created again has a new UID, and an object owned
  by the old one is garbage-collected as soon as it is written. Caching the UID forever made every republished
  object vanish again.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any

from lightkube import AsyncClient
from lightkube.generic_resource import create_global_resource
from lightkube.resources.core_v1 import Node
from lightkube.types import PatchType

from knuma.api.nrt import ANNOTATION_FINGERPRINT, GROUP, KIND, NodeResourceTopology
from knuma.errors import OperationFailed
from knuma.kube.client import lightkube_errors
from knuma.kube.errors import Conflict, Forbidden, Invalid, KubeApiError, NotFound

__all__ = [
    "NRT",
    "Outcome",
    "PublishError",
    "Publisher",
    "desired_object",
    "merge_patch",
    "owner_reference",
]

log = logging.getLogger("knuma.exporter.publisher")

NRT = create_global_resource(group=GROUP, version="v1alpha2", kind=KIND, plural="noderesourcetopologies")
MANAGED_ANNOTATIONS = (ANNOTATION_FINGERPRINT,)
MAX_CONFLICT_RETRIES = 5


class Outcome(enum.StrEnum):
    CREATED = "create"
    UPDATED = "update"
    UNCHANGED = "unchanged"
    NOT_PUBLISHED = "not-published"
    """`--no-publish`: built, not written."""


class PublishError(OperationFailed):
    """The API server did not take the object; `retryable` is False for errors a retry cannot fix (403, 422)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def owner_reference(node_name: str, node_uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}


def desired_object(nrt: NodeResourceTopology, owner: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full object to create: `nrt.to_dict()` plus the owner reference."""
    obj = nrt.to_dict()
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [dict(owner)]
    return obj


def merge_patch(current: Mapping[str, Any], desired: Mapping[str, Any], *, manage_owner: bool) -> dict[str, Any]:
    """The merge patch turning `current` (as read from the server) into `desired`, limited to the exporter's
    fields; empty when nothing changed."""
    patch: dict[str, Any] = {}
    for key in ("zones", "attributes"):
        if current.get(key) != desired.get(key):
            patch[key] = desired.get(key)
    meta_patch: dict[str, Any] = {}
    current_meta = current.get("metadata") or {}
    desired_meta = desired.get("metadata") or {}
    current_annotations = current_meta.get("annotations") or {}
    desired_annotations = desired_meta.get("annotations") or {}
    annotations: dict[str, Any] = {}
    for key in MANAGED_ANNOTATIONS:
        if current_annotations.get(key) != desired_annotations.get(key):
            annotations[key] = desired_annotations.get(key)  # None removes it
    if annotations:
        meta_patch["annotations"] = annotations
    owners = desired_meta.get("ownerReferences")
    if manage_owner and owners and current_meta.get("ownerReferences") != owners:
        meta_patch["ownerReferences"] = owners
    if meta_patch:
        patch["metadata"] = meta_patch
    return patch


class Publisher:
    """Keeps one NRT object in line with what the builder produces. Not thread-safe: one caller at a time."""

    def __init__(
        self, client: AsyncClient, node_name: str, *, add_owner_reference: bool = True, resync_every: int = 10
    ) -> None:
        self.client = client
        self.node_name = node_name
        self.add_owner_reference = add_owner_reference
        self.resync_every = resync_every
        """Re-read the object every N publishes (RTE's `--patch-resync`), so edits by others are undone even when
        the node's data does not change; 0 never re-reads unless a write fails."""
        self._since_read = 0
        self.kubelet_version: str | None = None
        """`status.nodeInfo.kubeletVersion` of the Node, once read for the owner reference."""
        self._owner: dict[str, Any] | None = None
        self._owner_problem = ""
        """Why the last read of the Node failed, logged once until it changes (not at every publish)."""
        self._current: dict[str, Any] | None = None
        """The object as the server last returned it (None until read or created)."""

    def forget(self) -> None:
        """The object may be gone (deleted, or its CRD re-created, or its Node re-created and the object collected):
        read it and the Node's UID again before the next publish."""
        self._current = None
        self._owner = None

    async def publish(self, nrt: NodeResourceTopology) -> Outcome:
        if nrt.name != self.node_name:
            raise ValueError(f"NRT object {nrt.name!r} does not belong to node {self.node_name!r}")
        try:
            return await self._publish(nrt)
        except KubeApiError as err:
            if err.status is None:
                self._current = None  # the server may have restarted without our object: read it again next time
                raise PublishError(f"cannot publish {self.node_name}: {err}") from None
            raise PublishError(
                f"API server rejected NodeResourceTopology {self.node_name}: {err.status} {err.message}",
                retryable=err.status != 400 and not isinstance(err, Forbidden | Invalid),
            ) from None

    async def _publish(self, nrt: NodeResourceTopology) -> Outcome:
        self._since_read += 1
        if self.resync_every and self._since_read >= self.resync_every:
            self._current = None
        for _ in range(MAX_CONFLICT_RETRIES):
            if self._current is None:
                self._current = await self._read()
                self._since_read = 0
                self._owner = None  # re-read the Node with the object: it may have been re-created
            owner = await self._owner_reference() if self.add_owner_reference else None
            desired = desired_object(nrt, owner)
            if self._current is None:
                created = await self._create(desired)
                if created is not None:
                    self._current = created
                    return Outcome.CREATED
                continue  # someone created it first: read it and patch
            patch = merge_patch(self._current, desired, manage_owner=self.add_owner_reference)
            if not patch:
                return Outcome.UNCHANGED
            patch.setdefault("metadata", {})["resourceVersion"] = self._current["metadata"].get("resourceVersion")
            try:
                with lightkube_errors():
                    result = await self.client.patch(NRT, self.node_name, patch, patch_type=PatchType.MERGE)
            except Conflict:
                log.info("conflict updating NodeResourceTopology %s; re-reading it", self.node_name)
                self._current = None
                continue
            except NotFound:
                log.info("NodeResourceTopology %s was deleted; creating it again", self.node_name)
                self._current = None
                continue
            self._current = _as_dict(result)
            return Outcome.UPDATED
        raise PublishError(
            f"NodeResourceTopology {self.node_name}: still conflicting after {MAX_CONFLICT_RETRIES} tries"
        )

    async def _read(self) -> dict[str, Any] | None:
        try:
            with lightkube_errors():
                found = await self.client.get(NRT, self.node_name)
        except NotFound:
            return None
        return _as_dict(found)

    async def _create(self, desired: dict[str, Any]) -> dict[str, Any] | None:
        try:
            with lightkube_errors():
                created = await self.client.create(NRT.from_dict(desired))
        except Conflict:
            return None
        return _as_dict(created)

    async def _owner_reference(self) -> dict[str, Any] | None:
        if self._owner is None:
            try:
                with lightkube_errors():
                    node = await self.client.get(Node, self.node_name)
            except (NotFound, Forbidden) as err:
                problem = (
                    "not found (check --node-name)" if isinstance(err, NotFound) else "not readable (RBAC: get nodes)"
                )
                if problem != self._owner_problem:
                    log.warning(
                        "Node %s %s: publishing NodeResourceTopology without an owner reference, so it will not be "
                        "garbage-collected with the node",
                        self.node_name,
                        problem,
                    )
                self._owner_problem = problem
                return None
            self._owner_problem = ""
            info = node.status.nodeInfo if node.status is not None else None
            self.kubelet_version = info.kubeletVersion if info is not None else None
            uid = node.metadata.uid if node.metadata is not None else None
            if not uid:
                return None
            self._owner = owner_reference(self.node_name, uid)
        return self._owner


def _as_dict(obj: Any) -> dict[str, Any]:
    """A lightkube generic object as the plain dict the server sent."""
    plain: dict[str, Any] = obj.to_dict()
    return plain
