"""Field ownership (`metadata.managedFields`) and server-side apply.

A field is identified by a path of elements: `f:<name>` for a map key and `k:<json>` for an item of a list merged by
key (containers by name, conditions by type, ...). Lists without a merge key are owned as a whole.

- Every write records, per field manager and operation (`Apply` or `Update`), the set of fields it set, in the
  `FieldsV1` format real servers use, so `kubectl get -o yaml --show-managed-fields` looks familiar.
- `apply()` merges an applied configuration into the live object, reports a 409 `Conflict` listing the fields another
  manager owns with a different value (unless `force`), and removes the fields the applier owned before but no
  longer sets (when nobody else owns them).

This is a faithful-in-spirit reimplementation of structured-merge-diff, not a port: schemas are not consulted,
merge keys come from `patch.MERGE_KEYS`, and a list item whose merge key is absent is treated as atomic.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.patch import merge_key_for

Path = tuple[str, ...]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

_IGNORED_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    }
)


class ApplyConflict(ApiError):
    """A 409 listing the fields other managers own with a different value."""

    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        self.conflicts = conflicts
        causes = [
            {"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": _show(p)}
            for m, p in conflicts
        ]
        lines = "\n".join(f'- conflict with "{m}": {_show(p)}' for m, p in conflicts)
        n = len(conflicts)
        super().__init__(
            409,
            "Conflict",
            f"Apply failed with {n} conflict{'s' if n > 1 else ''}:\n{lines}",
            details={"causes": causes},
        )


def upgrade_conflicts_allowed(live: JsonObj, conflicts: list[tuple[str, Path]]) -> bool:
    """kubectl's client-side to server-side apply upgrade (kube-apiserver's lastAppliedManager): conflicts are
    forgiven when every conflicting field is in the `last-applied-configuration` annotation with the live value,
    i.e. nobody changed it since the last client-side apply."""
    raw = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not raw:
        return False
    try:
        last_applied = json.loads(raw)
    except ValueError:
        return False
    if not isinstance(last_applied, dict):
        return False
    allowed = field_paths(last_applied, status=False)
    return all(p in allowed and get_path(live, p) == get_path(last_applied, p) for _, p in conflicts)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _item_key(field: str, item: Any, items: list[Any]) -> str | None:
    key = merge_key_for(field, items)
    if key is None or not isinstance(item, dict) or key not in item:
        return None
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))


def field_paths(obj: JsonObj, *, status: bool) -> set[Path]:
    """Leaf paths set in `obj`; only `status` when `status` is True, everything but status otherwise."""
    paths: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if (key == "status") != status:
            continue
        if key == "metadata" and isinstance(value, dict):
            for mk, mv in value.items():
                if mk not in _IGNORED_META:
                    _collect(("f:metadata", f"f:{mk}"), mk, mv, paths)
            continue
        _collect((f"f:{key}",), key, value, paths)
    return paths


def _collect(prefix: Path, field: str, value: Any, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _collect((*prefix, f"f:{k}"), k, v, out)
    elif isinstance(value, list) and value and merge_key_for(field, value):
        item_keys = [_item_key(field, item, value) for item in value]
        if None in item_keys:
            out.add(prefix)
            return
        duplicated = {ik for ik, count in Counter(item_keys).items() if count > 1}
        for item, ik in zip(value, item_keys, strict=True):
            assert ik is not None
            out.add((*prefix, ik))
            if ik in duplicated:
                # structured-merge-diff (#251, #254): items sharing a key are one atomic entry, owned as the key
                # alone, and any change to one of them modifies that key
                continue
            for k, v in item.items():
                _collect((*prefix, ik, f"f:{k}"), k, v, out)
    else:
        out.add(prefix)


def get_path(obj: Any, path: Path) -> tuple[bool, Any]:
    """(found, value) of the field at `path`."""
    cur = obj
    field = ""
    for el in path:
        if el.startswith("f:"):
            field = el[2:]
            if not isinstance(cur, dict) or field not in cur:
                return False, None
            cur = cur[field]
        else:
            ((key, val),) = json.loads(el[2:]).items()
            if not isinstance(cur, list):
                return False, None
            match = [i for i in cur if isinstance(i, dict) and i.get(key) == val]
            if not match:
                return False, None
            cur = match[0] if len(match) == 1 else match  # duplicates: all of them, compared as one entry
    return True, cur


def remove_path(obj: Any, path: Path) -> None:
    if not path:
        return
    found, parent = get_path(obj, path[:-1])
    if not found:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        ((key, val),) = json.loads(last[2:]).items()
        parent[:] = [i for i in parent if not (isinstance(i, dict) and i.get(key) == val)]


def to_fields_v1(paths: set[Path]) -> JsonObj:
    """The `FieldsV1` tree of `paths`. A list item that is owned itself and has owned fields carries `"."`; one whose
    fields alone are owned (a manager that lost the item to another but kept a field) does not."""
    root: JsonObj = {}
    for path in sorted(paths):
        node = root
        for n, el in enumerate(path):
            node = node.setdefault(el, {})
            if el.startswith("k:") and n < len(path) - 1 and path[: n + 1] in paths:
                node.setdefault(".", {})
    return root


def from_fields_v1(tree: JsonObj, prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    for el, sub in tree.items():
        if el == ".":
            continue
        children = {k: v for k, v in (sub or {}).items() if k != "."}
        if children:
            paths |= from_fields_v1(children, (*prefix, el))
        if not children or "." in (sub or {}):  # ".": the list item (or map) itself is owned too
            paths.add((*prefix, el))
    return paths


# -- managedFields bookkeeping ----------------------------------------------------------------------------------------


def _entries(obj: JsonObj) -> list[JsonObj]:
    return list((obj.get("metadata") or {}).get("managedFields") or [])


EntryId = tuple[str, str, str]
"""(manager, operation, subresource): one `managedFields` entry."""


def _entry_id(e: JsonObj) -> EntryId:
    return (e.get("manager", ""), e.get("operation", ""), e.get("subresource", ""))


def _owned(entries: list[JsonObj]) -> dict[EntryId, set[Path]]:
    return {_entry_id(e): from_fields_v1(e.get("fieldsV1") or {}) for e in entries}


def _write_entries(
    obj: JsonObj,
    owned: Mapping[EntryId, set[Path] | None],
    api_version: str,
    touched: EntryId,
    *,
    changed: bool = True,
    kept: Mapping[EntryId, JsonObj] | None = None,
) -> None:
    """Rewrite `managedFields`; the touched entry gets a new time only when the write changed something, so a
    no-op update or apply leaves the object (and its resourceVersion) as it was. An entry whose paths are None
    keeps its `FieldsV1` tree from `kept` (it owns none of the fields that changed)."""
    old = {_entry_id(e): e for e in _entries(obj)}
    if not changed and touched in old:
        changed = old[touched].get("fieldsV1") != to_fields_v1(owned.get(touched) or set())
    out: list[JsonObj] = []
    for eid, paths in owned.items():
        tree = (kept or {}).get(eid, {}) if paths is None else None
        if tree is not None and not any(k != "." for k in tree):
            continue
        if tree is None and not paths:
            continue
        manager, operation, sub = eid
        entry: JsonObj = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version if eid == touched else old.get(eid, {}).get("apiVersion", api_version),
            "time": _now() if eid == touched and changed else old.get(eid, {}).get("time", _now()),
            "fieldsType": "FieldsV1",
            "fieldsV1": tree if tree is not None else to_fields_v1(paths or set()),
        }
        if sub:
            entry["subresource"] = sub
        out.append(entry)
    obj.setdefault("metadata", {})["managedFields"] = out


def record_update(old: JsonObj | None, new: JsonObj, manager: str, api_version: str, subresource: str = "") -> None:
    """Give `manager` (operation Update) the fields that changed between `old` and `new`, in place on `new`.

    Only what differs is walked (`_changes`), and only the entries that own a changed field are re-parsed, so a
    binding (one field of a large pod) costs little whatever the pod's size."""
    status = subresource == "status"
    me = (manager, "Update", subresource)
    if old is None:
        changed, removed, entries = field_paths(new, status=status), set[Path](), []
    else:
        changed, removed = _changes(old, new, status=status)
        entries = _entries(old)
    touched = changed | removed
    owned: dict[EntryId, set[Path] | None] = {}
    kept: dict[EntryId, JsonObj] = {}
    for entry in entries:
        eid = _entry_id(entry)
        tree = entry.get("fieldsV1") or {}
        if eid == me or any(_tree_has(tree, p) for p in touched):
            owned[eid] = from_fields_v1(tree)
        else:  # owns none of the changed fields: its tree stays as it is
            owned[eid] = None
            kept[eid] = tree
    for eid, paths in owned.items():
        if paths is None:
            continue
        if eid != me:
            paths -= changed
        paths -= removed
    mine = owned.get(me) or set()
    owned[me] = mine | changed
    _write_entries(new, owned, api_version, me, changed=bool(changed or removed), kept=kept)


def _changes(old: JsonObj, new: JsonObj, *, status: bool) -> tuple[set[Path], set[Path]]:
    """(changed, removed): the leaf paths of `new` that `old` lacks or holds with another value, and those of `old`
    that `new` lacks; as comparing `field_paths` of both objects path by path, but equal subtrees are skipped."""
    changed: set[Path] = set()
    removed: set[Path] = set()
    for key in new.keys() | old.keys():
        if key in ("apiVersion", "kind") or (key == "status") != status:
            continue
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before == after:
            continue
        if key == "metadata" and isinstance(before, dict) and isinstance(after, dict):
            for mk in after.keys() | before.keys():
                if mk not in _IGNORED_META:
                    _subtree_changes(("f:metadata", f"f:{mk}"), mk, before, after, changed, removed)
            continue
        if key == "metadata":  # not a map on one side: compare as `field_paths` sees it
            old_paths = field_paths({key: before} if key in old else {}, status=status)
            new_paths = field_paths({key: after} if key in new else {}, status=status)
            changed |= {p for p in new_paths if p not in old_paths or get_path(old, p) != get_path(new, p)}
            removed |= old_paths - new_paths
            continue
        _subtree_changes((f"f:{key}",), key, old, new, changed, removed)
    return changed, removed


def _subtree_changes(
    prefix: Path, field: str, old_parent: JsonObj, new_parent: JsonObj, changed: set[Path], removed: set[Path]
) -> None:
    """The changes under `field` of two maps whose paths so far (`prefix`) are map keys only."""
    before, after = old_parent.get(field, _MISSING), new_parent.get(field, _MISSING)
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict) and before and after:
        for key in after.keys() | before.keys():
            _subtree_changes((*prefix, f"f:{key}"), key, before, after, changed, removed)
        return
    old_paths: set[Path] = set()
    new_paths: set[Path] = set()
    if before is not _MISSING:
        _collect(prefix, field, before, old_paths)
    if after is not _MISSING:
        _collect(prefix, field, after, new_paths)
    depth = len(prefix) - 1  # the paths below start with `prefix`; look them up from the parents
    for p in new_paths:
        if p not in old_paths or get_path(old_parent, p[depth:]) != get_path(new_parent, p[depth:]):
            changed.add(p)
    removed |= old_paths - new_paths


_MISSING: Any = object()


def _tree_has(tree: JsonObj, path: Path) -> bool:
    """Whether a `FieldsV1` tree has a node at `path` (so the entry may own it)."""
    node: Any = tree
    for el in path:
        node = node.get(el) if isinstance(node, dict) else None
        if node is None:
            return False
    return True


def _merge(live: Any, config: Any, field: str = "") -> Any:
    if isinstance(config, dict):
        result = dict(live) if isinstance(live, dict) else {}
        for k, v in config.items():
            result[k] = _merge(result.get(k), v, k)
        return result
    if isinstance(config, list):
        key = merge_key_for(field, config)
        if key is None or not all(isinstance(i, dict) and key in i for i in config):
            return copy.deepcopy(config)
        current = [copy.deepcopy(i) for i in live] if isinstance(live, list) else []
        for item in config:
            idx = next((n for n, c in enumerate(current) if isinstance(c, dict) and c.get(key) == item[key]), None)
            if idx is None:
                current.append(copy.deepcopy(item))
            else:
                current[idx] = _merge(current[idx], item, field)
        return current
    return copy.deepcopy(config)


def _show(path: Path) -> str:
    out = ""
    for el in path:
        out += (
            "." + el[2:]
            if el.startswith("f:")
            else "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(el[2:]).items()) + "]"
        )
    return out


def apply(
    live: JsonObj | None,
    config: JsonObj,
    manager: str,
    *,
    force: bool,
    api_version: str,
    subresource: str = "",
) -> JsonObj:
    """Server-side apply `config` by `manager` onto `live` (None to create); returns the new object."""
    status = subresource == "status"
    base: JsonObj = copy.deepcopy(live) if live is not None else {}
    owned = _owned(_entries(base))
    me = (manager, "Apply", subresource)
    cfg_paths = field_paths(config, status=status)
    conflicts: list[tuple[str, Path]] = []
    for eid, paths in owned.items():
        if eid == me or eid[2] != subresource:
            continue
        for p in paths & cfg_paths:
            if get_path(base, p) != get_path(config, p):
                conflicts.append((eid[0], p))
    if conflicts and not force:
        raise ApplyConflict(sorted(conflicts))
    for manager_name, p in conflicts:
        for eid, paths in owned.items():
            if eid[0] == manager_name and eid != me:
                paths.discard(p)
    merged: JsonObj = _merge(base, {k: v for k, v in config.items() if k not in ("apiVersion", "kind")})
    merged["apiVersion"] = config.get("apiVersion", base.get("apiVersion"))
    merged["kind"] = config.get("kind", base.get("kind"))
    previous = owned.get(me, set())
    others: set[Path] = set().union(*(paths for eid, paths in owned.items() if eid != me)) if owned else set()
    for p in sorted(previous - cfg_paths, key=len, reverse=True):
        if p not in others and not any(o[: len(p)] == p for o in others):
            remove_path(merged, p)
    owned[me] = cfg_paths
    unchanged = {k: v for k, v in merged.items() if k != "metadata"} == {
        k: v for k, v in base.items() if k != "metadata"
    } and {k: v for k, v in merged.get("metadata", {}).items() if k != "managedFields"} == {
        k: v for k, v in base.get("metadata", {}).items() if k != "managedFields"
    }
    _write_entries(merged, owned, api_version, me, changed=not unchanged)
    return merged
