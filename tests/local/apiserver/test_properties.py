"""Property tests of the pure parts: patches, field ownership, selectors, and watch replay consistency."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.local.apiserver import fieldmanager
from knuma.local.apiserver.patch import json_patch, merge_patch, strategic_merge
from knuma.local.apiserver.selectors import Requirement, labels_match, parse_label_selector
from knuma.local.apiserver.store import Store

keys = st.sampled_from(["a", "b", "c", "spec", "data", "x"])
scalars = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.booleans())
maps: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(keys, scalars, max_size=3),
    lambda children: st.dictionaries(keys, st.one_of(scalars, children), max_size=3),
    max_leaves=10,
)
patches: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(keys, st.one_of(scalars, st.none()), max_size=3),
    lambda children: st.dictionaries(keys, st.one_of(scalars, st.none(), children), max_size=3),
    max_leaves=10,
)


@given(maps, patches)
def test_merge_patch_is_idempotent_and_pure(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    once = merge_patch(doc, patch)
    assert merge_patch(once, patch) == once
    assert doc == before
    assert merge_patch(doc, {}) == doc


@given(maps, patches)
def test_strategic_merge_without_lists_equals_merge_patch(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    assert strategic_merge(doc, patch) == merge_patch(doc, patch)


@given(maps, st.text("abc", min_size=1, max_size=4), scalars)
def test_json_patch_add_then_remove_restores(doc: dict[str, Any], key: str, value: Any) -> None:
    if key in doc:
        return
    ops = [{"op": "add", "path": f"/{key}", "value": value}, {"op": "remove", "path": f"/{key}"}]
    assert json_patch(doc, ops) == doc


@given(maps)
def test_fields_v1_round_trip(doc: dict[str, Any]) -> None:
    paths = fieldmanager.field_paths(doc, status=False)
    assert fieldmanager.from_fields_v1(fieldmanager.to_fields_v1(paths)) == paths


@given(st.dictionaries(keys, st.text("xyz", min_size=1, max_size=3), max_size=3))
def test_apply_is_idempotent_and_owns_exactly_what_it_sets(data: dict[str, str]) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}
    first = fieldmanager.apply(None, config, "m", force=False, api_version="v1")
    second = fieldmanager.apply(first, config, "m", force=False, api_version="v1")
    assert {k: v for k, v in first.items() if k != "metadata"} == {k: v for k, v in second.items() if k != "metadata"}
    owned = fieldmanager.from_fields_v1(second["metadata"]["managedFields"][0]["fieldsV1"]) if data else set()
    assert owned == {("f:data", f"f:{k}") for k in data}


label_values = st.sampled_from(["web", "db", "x1"])


@given(
    st.dictionaries(st.sampled_from(["app", "tier", "zone"]), label_values, max_size=3),
    st.sampled_from(["app", "tier", "zone"]),
    st.sampled_from(["=", "!=", "in", "notin", "exists", "!"]),
    st.lists(label_values, min_size=1, max_size=2, unique=True),
)
def test_label_selector_text_matches_requirement_semantics(
    labels: dict[str, str], key: str, op: str, values: list[str]
) -> None:
    text = {
        "=": f"{key}={values[0]}",
        "!=": f"{key}!={values[0]}",
        "in": f"{key} in ({','.join(values)})",
        "notin": f"{key} notin ({','.join(values)})",
        "exists": key,
        "!": f"!{key}",
    }[op]
    expected = {
        "=": labels.get(key) == values[0],
        "!=": labels.get(key) != values[0],
        "in": labels.get(key) in values,
        "notin": labels.get(key) not in values,
        "exists": key in labels,
        "!": key not in labels,
    }[op]
    parsed = parse_label_selector(text)
    assert parsed == [
        Requirement(key, op, tuple(values) if op in ("in", "notin") else (values[0],) if op in ("=", "!=") else ())
    ]
    assert labels_match(parsed, {"metadata": {"labels": labels}}) is expected


operations = st.lists(
    st.tuples(st.sampled_from(["put", "remove"]), st.sampled_from(["a", "b", "c"]), st.integers(0, 9)), max_size=30
)


@settings(max_examples=50)
@given(operations)
def test_replaying_watch_events_rebuilds_the_store(ops: list[tuple[str, str, int]]) -> None:
    store = Store()
    gr = ("", "configmaps")
    for op, name, value in ops:
        if op == "put":
            created = store.get(gr, "default", name) is None
            store.put(
                gr, {"metadata": {"name": name, "namespace": "default"}, "data": {"v": str(value)}}, created=created
            )
        else:
            store.remove(gr, "default", name)
    replay: dict[str, Any] = {}
    last = 0
    events = store.events_since(gr, 0)
    assert events is not None
    for event in events:
        assert event.rv > last
        last = event.rv
        name = event.obj["metadata"]["name"]
        if event.type == "DELETED":
            del replay[name]
        else:
            assert (event.type == "ADDED") == (name not in replay)
            replay[name] = event.obj
    assert replay == {o["metadata"]["name"]: o for o in store.scan(gr)}
    assert last == store.rv


containers = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["c1", "c2"])}, optional={"image": scalars, "args": maps}),
    max_size=2,
)
objects: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.dictionaries(st.sampled_from(["labels", "annotations", "resourceVersion", "name"]), maps),
        "spec": st.one_of(
            scalars, st.fixed_dictionaries({}, optional={"containers": containers, "nodeName": scalars, "x": maps})
        ),
        "status": maps,
        "data": st.one_of(st.none(), maps),
    },
)


@given(objects, objects, st.booleans())
def test_changed_fields_are_the_paths_that_differ(old: dict[str, Any], new: dict[str, Any], status: bool) -> None:
    """The field manager walks only what differs; the result is the definition: paths of `new` that `old` lacks or
    holds with another value, and paths of `old` that `new` lacks."""
    old_paths = fieldmanager.field_paths(old, status=status)
    new_paths = fieldmanager.field_paths(new, status=status)
    expected_changed = {
        p for p in new_paths if p not in old_paths or fieldmanager.get_path(old, p) != fieldmanager.get_path(new, p)
    }
    assert fieldmanager._changes(old, new, status=status) == (expected_changed, old_paths - new_paths)


@given(objects, objects)
def test_an_update_moves_only_the_changed_fields_to_its_manager(old: dict[str, Any], new: dict[str, Any]) -> None:
    created = copy.deepcopy(old)
    fieldmanager.record_update(None, created, "creator", "v1")
    updated = copy.deepcopy(new)
    fieldmanager.record_update(created, updated, "updater", "v1")
    owners = {e["manager"]: fieldmanager.from_fields_v1(e["fieldsV1"]) for e in updated["metadata"]["managedFields"]}
    old_paths = fieldmanager.field_paths(old, status=False)
    new_paths = fieldmanager.field_paths(new, status=False)
    changed = {
        p for p in new_paths if p not in old_paths or fieldmanager.get_path(old, p) != fieldmanager.get_path(new, p)
    }
    assert owners.get("updater", set()) == changed
    assert owners.get("creator", set()) == old_paths - changed - (old_paths - new_paths)


def test_items_sharing_a_key_are_owned_as_one_entry() -> None:
    """structured-merge-diff's rule for duplicates in an associative list (kubernetes-sigs/structured-merge-diff#251,
    #254): the items that share a key are one atomic entry, owned as the key alone, and a change to any of them is a
    change of that key. Hypothesis found the case: two containers named c2."""
    key = ("f:spec", "f:containers", 'k:{"name":"c2"}')
    containers = [{"name": "c2", "args": {"a": 0}}, {"name": "c2", "image": 0, "args": {}}]
    new: dict[str, Any] = {"spec": {"containers": containers}}
    assert fieldmanager.field_paths(new, status=False) == {key}
    created = copy.deepcopy(new)
    fieldmanager.record_update(None, created, "creator", "v1")
    changed = copy.deepcopy(created)
    changed["spec"]["containers"][1]["image"] = 1  # only the second duplicate differs
    fieldmanager.record_update(created, changed, "updater", "v1")
    owners = {e["manager"]: fieldmanager.from_fields_v1(e["fieldsV1"]) for e in changed["metadata"]["managedFields"]}
    assert owners == {"updater": {key}}


def test_a_manager_that_loses_a_list_item_keeps_only_the_fields_it_still_owns() -> None:
    """Hypothesis found it: when an update changes a list item, the updater owns the item and the creator keeps the
    item's unchanged fields, so the creator's FieldsV1 must not mark the item itself (".") as its own any more."""
    item = ("f:spec", "f:containers", 'k:{"name":"c1"}')
    created: dict[str, Any] = {"spec": {"containers": [{"name": "c1", "image": 0}]}}
    fieldmanager.record_update(None, created, "creator", "v1")
    updated: dict[str, Any] = {"spec": {"containers": [{"name": "c1"}]}}
    fieldmanager.record_update(created, updated, "updater", "v1")
    owners = {e["manager"]: fieldmanager.from_fields_v1(e["fieldsV1"]) for e in updated["metadata"]["managedFields"]}
    assert owners == {"updater": {item}, "creator": {(*item, "f:name")}}
    creator = next(e for e in updated["metadata"]["managedFields"] if e["manager"] == "creator")
    assert creator["fieldsV1"] == {"f:spec": {"f:containers": {'k:{"name":"c1"}': {"f:name": {}}}}}
