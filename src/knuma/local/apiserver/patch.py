"""The three PATCH flavours of the Kubernetes API: JSON patch, JSON merge patch and strategic merge patch.

Strategic merge patch needs to know, per list field, whether the list is merged by a key or replaced. The real
server reads that from Go struct tags; here the merge keys of the core types the stack uses are listed in
`MERGE_KEYS` (field name → candidate keys; the first key present in the list items wins, e.g. container `ports` by
`containerPort`, Service `ports` by `port`).

A directive with a value of the wrong kind is a 400 whose message begins as `k8s.io/apimachinery`'s strategicpatch
and mergepatch errors do (`unknown patch type: bogus in map: map[$patch:bogus]`, `invalid patch format of
setElementOrder list`, ...) and then names the directive; kube-apiserver answers 400 for the `invalid patch format`
ones (`interpretStrategicMergePatchError`), while the others reach its generic error path.
"""

from __future__ import annotations

import copy
from typing import Any

from knuma.api.types import JsonObj
from knuma.local.apiserver.errors import ApiError, bad_request

MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "tolerations": ("key",),
    "conditions": ("type",),
    "imagePullSecrets": ("name",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey",),
    "resourceClaims": ("name",),
    "containerStatuses": ("name",),
    "initContainerStatuses": ("name",),
    "secrets": ("name",),
    "subjects": ("name",),
}
#: Lists of scalars merged as sets by strategic merge patch.
SET_LISTS = frozenset({"finalizers"})

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
#: mergepatch's errors for a directive of the wrong format (`ErrBadPatchFormatFor...`), by directive.
BAD_FORMAT = {
    RETAIN_KEYS: "invalid patch format of retainKeys",
    SET_ELEMENT_ORDER: "invalid patch format of setElementOrder list",
    DELETE_FROM_PRIMITIVE_LIST: "invalid patch format of primitive list",
}


def merge_key_for(field: str, items: list[Any]) -> str | None:
    """The merge key of list `field` given its items, or None when the list is atomic."""
    keys = MERGE_KEYS.get(field)
    if not keys:
        return None
    dict_items = [i for i in items if isinstance(i, dict)]
    if len(dict_items) != len(items):
        return None
    for key in keys:
        if any(key in i for i in dict_items):
            return key
    return keys[0]


# -- JSON merge patch (RFC 7386) --------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- JSON patch (RFC 6902) --------------------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _resolve(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for tok in tokens:
        if isinstance(cur, dict):
            if tok not in cur:
                raise _patch_error(f"doc is missing path: {'/' + '/'.join(tokens)}")
            cur = cur[tok]
        elif isinstance(cur, list):
            idx = _index(tok, cur, allow_end=False)
            cur = cur[idx]
        else:
            raise _patch_error(f"doc is missing path: {'/' + '/'.join(tokens)}")
    return cur


def _index(tok: str, seq: list[Any], *, allow_end: bool) -> int:
    if tok == "-" and allow_end:
        return len(seq)
    if not tok.isdigit():
        raise _patch_error(f"invalid array index {tok!r}")
    idx = int(tok)
    if idx > len(seq) or (idx == len(seq) and not allow_end):
        raise _patch_error(f"array index out of bounds: {idx}")
    return idx


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, parent, allow_end=True), value)
    else:
        raise _patch_error("cannot add to a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise _patch_error("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _patch_error(f"unable to remove nonexistent key: {last}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, parent, allow_end=False))
    raise _patch_error("cannot remove from a scalar")


def json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind = op["op"]
        tokens = _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _resolve(doc, tokens)
            if tokens:
                _remove(doc, tokens)
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_resolve(doc, source))
            doc = _add(doc, tokens, value)
        elif kind == "test":
            if _resolve(doc, tokens) != op.get("value"):
                raise _patch_error(f"testing value {op['path']} failed")
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc


# -- strategic merge patch --------------------------------------------------------------------------------------------


def strategic_merge(original: Any, patch: Any, field: str = "") -> Any:
    """Apply a strategic merge patch, honouring `$patch`, `$retainKeys`, `$setElementOrder/` and
    `$deleteFromPrimitiveList/` directives as kubectl generates them; a directive with a wrong value is a 400."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if DIRECTIVE in patch:  # handleDirectiveInMergeMap: replace or delete, nothing else (not even merge)
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return {k: copy.deepcopy(v) for k, v in patch.items() if k != DIRECTIVE}
        if directive == "delete":  # "don't merge it, just return an empty map": the key stays, as {}
            return {}
        raise _unknown_patch_type(directive, patch)
    result: JsonObj = dict(original) if isinstance(original, dict) else {}
    retain = _retain_keys(patch)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key == RETAIN_KEYS:
            continue
        if key.startswith(SET_ELEMENT_ORDER):
            orders[_directive_field(key, SET_ELEMENT_ORDER, value)] = value
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            name = _directive_field(key, DELETE_FROM_PRIMITIVE_LIST, value)
            if isinstance(result.get(name), list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, key)
        elif isinstance(value, dict):
            result[key] = strategic_merge(result.get(key), value, key)
        else:
            result[key] = value
    for name, order in orders.items():
        if isinstance(result.get(name), list):
            result[name] = _reorder(result[name], order, name)
    if retain is not None:
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _go(value: Any) -> str:
    """`value` as Go's `%v` prints a decoded JSON value, as upstream's messages show them: `map[a:1 b:[x y]]`."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unknown_patch_type(directive: Any, item: JsonObj) -> ApiError:
    """mergepatch `ErrBadPatchType`, with what `$patch` takes."""
    return bad_request(f"unknown patch type: {_go(directive)} in map: {_go(item)}; $patch takes replace or delete")


def _retain_keys(patch: JsonObj) -> list[Any] | None:
    """`$retainKeys` (`applyRetainKeysDirective`): a list of the fields to keep, every field the patch sets among
    them; None without the directive."""
    if RETAIN_KEYS not in patch:
        return None
    retain = patch[RETAIN_KEYS]
    if not isinstance(retain, list):
        raise bad_request(f"{BAD_FORMAT[RETAIN_KEYS]}: $retainKeys must be a list of field names, got {_go(retain)}")
    for key, value in patch.items():
        if value is None or key.startswith((RETAIN_KEYS, SET_ELEMENT_ORDER, DELETE_FROM_PRIMITIVE_LIST)):
            continue
        if key not in retain:
            raise bad_request(f"{BAD_FORMAT[RETAIN_KEYS]}: the patch sets {key}, which $retainKeys does not list")
    return retain


def _directive_field(key: str, directive: str, value: Any) -> str:
    """The field a parallel-list directive (`$setElementOrder/FIELD`, `$deleteFromPrimitiveList/FIELD`) is about;
    its value must be a list (`extractKey` and the list checks of strategicpatch)."""
    prefix, slash, name = key.partition("/")
    if prefix != directive or not slash:
        raise bad_request(f"{BAD_FORMAT[directive]}: {key} is not {directive}/FIELD")
    if not isinstance(value, list):
        raise bad_request(f"{BAD_FORMAT[directive]}: {key} must be a list, got {_go(value)}")
    if directive == SET_ELEMENT_ORDER and MERGE_KEYS.get(name):
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise bad_request(
                    f"{BAD_FORMAT[directive]}: {key}[{index}] must be a map with the merge key "
                    f"{MERGE_KEYS[name][0]}, got {_go(item)}"
                )
    return name


def _merge_list(original: Any, patch: list[Any], field: str) -> list[Any]:
    current = list(original) if isinstance(original, list) else []
    if field in SET_LISTS and all(not isinstance(v, dict | list) for v in patch):
        return current + [v for v in patch if v not in current]
    key = merge_key_for(field, patch + current)
    if key is None:
        if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
            return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
        return copy.deepcopy(patch)
    for item in patch:  # mergeSliceWithSpecialElements: delete or replace an item, nothing else
        if not isinstance(item, dict) or DIRECTIVE not in item or item[DIRECTIVE] in ("delete", "replace"):
            continue
        if item[DIRECTIVE] == "merge":
            raise bad_request(f"merging lists cannot yet be specified in the patch ({field}: $patch: merge)")
        raise _unknown_patch_type(item[DIRECTIVE], item)
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if "$patch" not in p]
    result = [copy.deepcopy(i) for i in current]
    for item in patch:
        if not isinstance(item, dict):
            continue
        idx = next((n for n, cur in enumerate(result) if cur.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                result.pop(idx)
            continue
        if idx is None:
            result.append(strategic_merge({}, item, field))
        else:
            result[idx] = strategic_merge(result[idx], item, field)
    return result


def _reorder(items: list[Any], order: list[Any], field: str) -> list[Any]:
    key = merge_key_for(field, items)
    if key is None:
        ranks = {repr(v): n for n, v in enumerate(order)}
        return sorted(items, key=lambda v: ranks.get(repr(v), len(ranks)))
    wanted = [o.get(key) for o in order if isinstance(o, dict)]
    ranks = {repr(v): n for n, v in enumerate(wanted)}
    return sorted(items, key=lambda v: ranks.get(repr(v.get(key) if isinstance(v, dict) else v), len(ranks)))
