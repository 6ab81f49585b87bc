"""ControllerRevisions (`knuma.local.controllers.history`): one per template, renumbered when a template comes back,
trimmed to `revisionHistoryLimit` without touching revisions still in use."""

from __future__ import annotations

import copy
from typing import Any

from knuma.local.controllers.history import plan_history, revision_template


def owner(image: str = "app:1", limit: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}
    }
    if limit is not None:
        spec["revisionHistoryLimit"] = limit
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "o-uid", "annotations": {"note": "x"}},
        "spec": spec,
    }


def revision(name: str, number: int, image: str = "app:1") -> dict[str, Any]:
    template = copy.deepcopy(owner(image)["spec"]["template"])
    return {"metadata": {"name": name}, "data": {"spec": {"template": {**template, "$patch": "replace"}}},
            "revision": number}  # fmt: skip


def test_a_new_template_gets_the_next_revision_with_the_patch_that_restores_it() -> None:
    plan = plan_history(owner("app:2"), "DaemonSet", "web-h2", "h2", [revision("web-h1", 1)])
    assert plan.create is not None and plan.renumber is None and plan.delete == ()
    created = plan.create
    assert created["revision"] == 2 and created["metadata"]["name"] == "web-h2"
    assert created["metadata"]["labels"] == {"app": "web", "controller-revision-hash": "h2"}
    assert created["metadata"]["annotations"] == {"note": "x"}
    assert created["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert created["data"]["spec"]["template"]["$patch"] == "replace"
    assert revision_template(created) == owner("app:2")["spec"]["template"]
    assert plan.templates["web-h1"]["spec"]["containers"][0]["image"] == "app:1"
    statefulset = plan_history(owner("app:2"), "StatefulSet", "web-h2", "h2", [])
    assert statefulset.create is not None and statefulset.create["metadata"]["labels"] == {"app": "web"}


def test_a_template_seen_before_is_renumbered_and_an_unchanged_one_left_alone() -> None:
    revisions = [revision("web-h1", 1), revision("web-h2", 2, "app:2")]
    rolled_back = plan_history(owner(), "StatefulSet", "web-h1", "h1", revisions)
    assert rolled_back.create is None and rolled_back.renumber == ("web-h1", 3)
    unchanged = plan_history(owner("app:2"), "StatefulSet", "web-h2", "h2", revisions)
    assert unchanged.create is None and unchanged.renumber is None


def test_history_beyond_the_limit_goes_oldest_first_but_never_a_revision_in_use() -> None:
    revisions = [revision(f"web-h{i}", i, f"app:{i}") for i in range(1, 6)]
    plan = plan_history(owner("app:6", limit=2), "StatefulSet", "web-h6", "h6", revisions, in_use={"web-h1"})
    assert plan.delete == ("web-h2", "web-h3")  # h1 is in use; h4, h5 are the two kept
    assert set(plan.templates) == {"web-h1", "web-h4", "web-h5", "web-h6"}
