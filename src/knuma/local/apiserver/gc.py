"""Deletion semantics: finalizers, `ownerReferences` garbage collection and namespace termination.

What kube-controller-manager's garbage collector and namespace controller do, run in-process right after the write
that triggers them (deferred to the next loop iteration, so the DELETE answers first):

- an object with finalizers gets `deletionTimestamp` and stays until the finalizers are removed; a pod on a node
  stays until its grace period ends, when its kubelet deletes it (`knuma.local.apiserver.graceful`);
- `Background` propagation deletes dependents after the owner is gone; `Foreground` adds the `foregroundDeletion`
  finalizer to the owner and removes it once no dependent is left; `Orphan` strips the owner reference;
- a dependent with another live owner only loses the reference to the deleted one;
- an object written with a reference to an owner that no longer exists (a controller acting on a stale copy: the
  resourceclaim controller creating a claim for a pod deleted a moment before) is treated the same way, as the
  garbage collector's `attemptToDeleteItem` deletes a dependent whose owners are all absent, so it is not left
  behind forever;
- a deleted Namespace turns `Terminating`, its contents are deleted, then the namespace itself.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from knuma.api.types import JsonObj
from knuma.local.apiserver.graceful import before_delete
from knuma.local.apiserver.store import GroupResource, Store

ObjectKey = tuple[GroupResource, str, str]

NAMESPACE_GR: GroupResource = ("", "namespaces")
POD_GR: GroupResource = ("", "pods")
FOREGROUND = "foregroundDeletion"


class Writer(Protocol):
    """The service's index-maintaining writes (the collector never touches the store directly for writes)."""

    def put(self, gr: GroupResource, obj: JsonObj, *, created: bool, old: JsonObj | None = None) -> JsonObj: ...

    def remove(self, gr: GroupResource, obj: JsonObj) -> JsonObj: ...


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _md(obj: JsonObj) -> JsonObj:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


class GarbageCollector:
    def __init__(self, store: Store, writer: Writer, defer: Callable[[Callable[[], None]], None]) -> None:
        self.store = store
        self.writer = writer
        self.defer = defer
        #: uid -> key of every stored object.
        self.by_uid: dict[str, ObjectKey] = {}
        #: owner uid -> keys of its dependents.
        self.dependents: dict[str, set[ObjectKey]] = {}

    # -- indexes -------------------------------------------------------------------------------------------------

    def index(self, gr: GroupResource, obj: JsonObj) -> None:
        md = _md(obj)
        key = (gr, md.get("namespace") or "", md["name"])
        if md.get("uid"):
            self.by_uid[md["uid"]] = key
        for ref in md.get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid"):
                self.dependents.setdefault(ref["uid"], set()).add(key)

    def check_owners(self, obj: JsonObj) -> None:
        """After a write: references to owners that do not exist (any more) are collected as if the owner had
        just been deleted (`Background`: deleted when no other owner lives, else the reference is dropped)."""
        for ref in _md(obj).get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid") and ref["uid"] not in self.by_uid:
                self.defer(functools.partial(self.collect_dependents, ref["uid"], "Background"))

    def unindex(self, gr: GroupResource, obj: JsonObj) -> None:
        md = _md(obj)
        key = (gr, md.get("namespace") or "", md["name"])
        self.by_uid.pop(md.get("uid", ""), None)
        for ref in md.get("ownerReferences") or []:
            if isinstance(ref, dict):
                deps = self.dependents.get(ref.get("uid", ""))
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self.dependents[ref["uid"]]

    def resume_pending(self) -> None:
        """Finish what a crash interrupted: terminating namespaces, foreground deletions, and dependents whose
        owners are gone."""
        for gr, obj in list(self.store.iter_all()):
            md = obj["metadata"]
            if gr == NAMESPACE_GR and md.get("deletionTimestamp"):
                self.defer(functools.partial(self.empty_namespace, md["name"]))
            elif md.get("deletionTimestamp") and FOREGROUND in (md.get("finalizers") or []):
                self.defer(functools.partial(self.collect_dependents, md.get("uid", ""), "Foreground"))
                self.defer(functools.partial(self.maybe_finish_foreground, md.get("uid", "")))
        for owner_uid in list(self.dependents):
            if owner_uid not in self.by_uid:
                self.defer(functools.partial(self.collect_dependents, owner_uid, "Background"))

    # -- deletion ------------------------------------------------------------------------------------------------

    def delete(self, gr: GroupResource, existing: JsonObj, propagation: str, options: JsonObj | None = None) -> JsonObj:
        """Delete now, or mark for deletion when finalizers (or foreground dependents) hold the object, or, for a pod
        on a node, its grace period (`knuma.local.apiserver.graceful`: its kubelet deletes it when its containers
        stopped). `options` are the request's DeleteOptions; the collector's own deletions send none, as the
        garbage collector and the namespace controller send none."""
        if gr == NAMESPACE_GR:
            return self.delete_namespace(existing)
        md = existing["metadata"]
        marks: JsonObj = {}
        if gr == POD_GR:
            graceful = before_delete(existing, options or {})
            if graceful.action == "pending":
                return existing
            marks = graceful.metadata
        finalizers = list(md.get("finalizers") or [])
        uid = md.get("uid", "")
        if propagation == "Foreground" and self.dependents.get(uid) and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if propagation == "Orphan":
            self.orphan(uid)
        if not finalizers and not {**md, **marks}.get("deletionGracePeriodSeconds"):
            return self.writer.remove(gr, existing)
        new = copy.deepcopy(existing)
        new["metadata"].update(marks)
        new["metadata"]["finalizers"] = finalizers
        if not finalizers:
            new["metadata"].pop("finalizers")
        new["metadata"].setdefault("deletionTimestamp", _now())
        new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
        if new == existing:
            return existing
        stored = self.writer.put(gr, new, created=False, old=existing)
        if FOREGROUND in finalizers:
            self.defer(functools.partial(self.collect_dependents, uid, "Foreground"))
        return stored

    def after_remove(self, removed: JsonObj) -> None:
        """Follow-ups of a removal: its dependents, its owners' foreground deletions, its namespace."""
        md = removed["metadata"]
        uid = md.get("uid", "")
        if self.dependents.get(uid):
            self.defer(functools.partial(self.collect_dependents, uid, "Background"))
        for ref in md.get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid"):
                self.defer(functools.partial(self.maybe_finish_foreground, ref["uid"]))
        namespace = md.get("namespace")
        if namespace:
            self.defer(functools.partial(self.maybe_finish_namespace, namespace))

    def collect_dependents(self, owner_uid: str, propagation: str) -> None:
        for key in sorted(self.dependents.get(owner_uid, set())):
            dep = self.store.get(*key)
            if dep is None or _md(dep).get("deletionTimestamp"):
                continue
            refs = [r for r in _md(dep).get("ownerReferences") or [] if isinstance(r, dict)]
            if any(r.get("uid") != owner_uid and r.get("uid") in self.by_uid for r in refs):
                new = copy.deepcopy(dep)
                new["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]
                self.writer.put(key[0], new, created=False, old=dep)
            else:
                self.delete(key[0], dep, propagation)

    def orphan(self, owner_uid: str) -> None:
        for key in sorted(self.dependents.get(owner_uid, set())):
            dep = self.store.get(*key)
            if dep is None:
                continue
            new = copy.deepcopy(dep)
            refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self.writer.put(key[0], new, created=False, old=dep)

    def maybe_finish_foreground(self, owner_uid: str) -> None:
        key = self.by_uid.get(owner_uid)
        owner = self.store.get(*key) if key else None
        if key is None or owner is None or self.dependents.get(owner_uid):
            return
        finalizers = _md(owner).get("finalizers") or []
        if FOREGROUND not in finalizers or not _md(owner).get("deletionTimestamp"):
            return
        new = copy.deepcopy(owner)
        rest = [f for f in finalizers if f != FOREGROUND]
        if rest:
            new["metadata"]["finalizers"] = rest
        else:
            new["metadata"].pop("finalizers", None)
        if rest or _md(owner).get("deletionGracePeriodSeconds"):  # a pod in its grace period: its kubelet deletes it
            self.writer.put(key[0], new, created=False, old=owner)
        else:
            self.writer.remove(key[0], new)

    # -- namespaces ----------------------------------------------------------------------------------------------

    def delete_namespace(self, ns: JsonObj) -> JsonObj:
        if ns["metadata"].get("deletionTimestamp"):
            return ns
        new = copy.deepcopy(ns)
        new["metadata"]["deletionTimestamp"] = _now()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        stored = self.writer.put(NAMESPACE_GR, new, created=False, old=ns)
        self.defer(functools.partial(self.empty_namespace, ns["metadata"]["name"]))
        return stored

    def contents(self, namespace: str) -> list[tuple[GroupResource, JsonObj]]:
        return [(gr, obj) for gr, obj in self.store.iter_all() if obj["metadata"].get("namespace") == namespace]

    def empty_namespace(self, namespace: str) -> None:
        for gr, obj in self.contents(namespace):
            if not obj["metadata"].get("deletionTimestamp"):
                self.delete(gr, obj, "Background")
        self.maybe_finish_namespace(namespace)

    def maybe_finish_namespace(self, namespace: str) -> None:
        """Once a terminating namespace is empty: drop the `kubernetes` spec finalizer, then the namespace
        (unless metadata finalizers still hold it; removing them later completes the deletion)."""
        ns = self.store.get(NAMESPACE_GR, "", namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp") or self.contents(namespace):
            return
        if (ns.get("spec") or {}).get("finalizers"):
            new = copy.deepcopy(ns)
            new["spec"]["finalizers"] = []
            ns = self.writer.put(NAMESPACE_GR, new, created=False, old=ns)
        if not ns["metadata"].get("finalizers"):
            self.writer.remove(NAMESPACE_GR, ns)
