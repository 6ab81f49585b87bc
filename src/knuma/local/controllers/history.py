"""ControllerRevisions: the template history of a StatefulSet or DaemonSet, which `kubectl rollout history` lists and
`kubectl rollout undo` patches back.

As kube-controller-manager keeps it (`pkg/controller/history`, the StatefulSet controller's
`getStatefulSetRevisions` / `truncateHistory` and the DaemonSet controller's `constructHistory` / `cleanupHistory`):

- a revision is a ControllerRevision named `<owner>-<hash of the template>`, controlled by its owner, labelled with
  the template's labels (a DaemonSet's also with `controller-revision-hash: <hash>`), annotated with the owner's
  annotations (so `kubernetes.io/change-cause` shows in `rollout history`), whose `data` is the patch that puts the
  template back: `{"spec": {"template": {..., "$patch": "replace"}}}` (`getPatch`), and whose `revision` counts up;
- a template seen before (a rollback, by `kubectl rollout undo` or by hand) reuses its revision, renumbered to come
  after every other one, as upstream "rolls back by incrementing the Revision of the equivalent revision";
- revisions beyond `revisionHistoryLimit` (10 by default) are deleted oldest first, never the current or update
  revision nor one that a live pod still runs.

The hash is knuma's template hash (the one in the pods' `controller-revision-hash`), not upstream's hash of the
serialized revision; `collisionCount` stays 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knuma.api.types import JsonObj, meta_of
from knuma.local.controllers.replicaset import controller_ref

__all__ = ["HistoryPlan", "plan_history", "revision_template"]

REVISION_HASH_LABEL = "controller-revision-hash"


@dataclass(frozen=True)
class HistoryPlan:
    create: JsonObj | None = None
    """A new ControllerRevision for the owner's current template."""
    renumber: tuple[str, int] | None = None
    """(name, revision): an older revision of the same template becomes the newest."""
    delete: tuple[str, ...] = ()
    """Revisions beyond the history limit."""
    templates: Mapping[str, JsonObj] = field(default_factory=dict)
    """Revision name -> its template, for every revision kept (what pods at that revision are created from)."""


def revision_template(revision: Mapping[str, Any]) -> JsonObj:
    """The pod template a ControllerRevision's `data` puts back (without the `$patch` directive); shares its values
    with `revision` (read only: a pod built from it copies what it keeps)."""
    data = revision.get("data")
    template = ((data.get("spec") or {}).get("template") if isinstance(data, Mapping) else None) or {}
    return {k: v for k, v in template.items() if k != "$patch"}


def plan_history(
    owner: Mapping[str, Any],
    kind: str,
    name: str,
    digest: str,
    revisions: Sequence[Mapping[str, Any]],
    in_use: Iterable[str] = (),
) -> HistoryPlan:
    """What to do with `owner`'s ControllerRevisions (`revisions`: those it controls) so that its current template,
    hashed `digest` and named `name`, is the newest revision. `in_use`: revision names kept whatever the limit
    (the current and update revisions, those of live pods)."""
    meta = meta_of(owner)
    spec = owner.get("spec") or {}
    template = spec.get("template") or {}
    numbers = {str(meta_of(r).get("name")): int(r.get("revision") or 0) for r in revisions}
    newest = max(numbers.values(), default=0)
    create: JsonObj | None = None
    renumber: tuple[str, int] | None = None
    if name not in numbers:
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        if kind == "DaemonSet":
            labels[REVISION_HASH_LABEL] = digest
        create = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace"),
                "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [controller_ref(owner, kind)],
            },
            "data": {"spec": {"template": {**template, "$patch": "replace"}}},
            "revision": newest + 1,
        }
        numbers[name] = newest + 1
    elif numbers[name] < newest:
        renumber = (name, newest + 1)
        numbers[name] = newest + 1
    limit = spec.get("revisionHistoryLimit")
    limit = 10 if limit is None else int(limit)
    keep = {name, *in_use}
    old = sorted((n for n in numbers if n not in keep), key=lambda n: numbers[n])
    delete = tuple(old[: max(0, len(old) - limit)])
    templates = {
        str(meta_of(r).get("name")): revision_template(r) for r in revisions if meta_of(r).get("name") not in delete
    }
    templates[name] = template
    return HistoryPlan(create, renumber, delete, templates)
