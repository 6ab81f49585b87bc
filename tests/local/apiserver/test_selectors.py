"""Label and field selectors, and limit/continue pagination."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.local.apiserver.errors import ApiError
from knuma.local.apiserver.selectors import labels_match, parse_label_selector
from tests.local.apiserver.conftest import Http, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"


def names(reply_json: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in reply_json["items"]]


def test_label_selector_grammar() -> None:
    obj = {"metadata": {"labels": {"app": "web", "tier": "front"}}}
    cases = {
        "app=web": True,
        "app==web": True,
        "app!=web": False,
        "app in (web, db)": True,
        "app notin (web)": False,
        "tier": True,
        "!tier": False,
        "!missing": True,
        "missing notin (x)": True,
        "app=web,tier in (back)": False,
    }
    for text, expected in cases.items():
        assert labels_match(parse_label_selector(text), obj) is expected, text
    with pytest.raises(ApiError) as err:
        parse_label_selector("app in web")
    assert err.value.code == 400


def test_label_selectors_over_http(http_client: Http) -> None:
    http_client.post(CM, configmap("a", labels={"app": "web", "tier": "front"}))
    http_client.post(CM, configmap("b", labels={"app": "db"}))
    http_client.post(CM, configmap("c"))

    def q(sel: str) -> list[str]:
        return names(http_client.get(f"{CM}?labelSelector={sel}").json)

    assert q("app%3Dweb") == ["a"]
    assert q("app!%3Dweb") == ["b", "c"]
    assert q("app%20in%20(web,db)") == ["a", "b"]
    assert q("app%20notin%20(web)") == ["b", "c"]
    assert q("app") == ["a", "b"]
    assert q("!app") == ["c"]
    assert http_client.get(f"{CM}?labelSelector=app%20in%20web").status == 400


def test_field_selectors(http_client: Http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    http_client.post(pods, pod("p1"))
    http_client.post(pods, pod("p2", schedulerName="knuma-scheduler"))
    http_client.post(f"{pods}/p1/binding", {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n1"}})
    http_client.patch(f"{pods}/p2/status", {"status": {"phase": "Running"}}, "application/merge-patch+json")

    def q(sel: str) -> list[str]:
        return names(http_client.get(f"/api/v1/pods?fieldSelector={sel}").json)

    assert q("spec.nodeName%3Dn1") == ["p1"]
    assert q("spec.nodeName%3D") == ["p2"]
    assert q("spec.schedulerName%3Dknuma-scheduler") == ["p2"]
    assert q("status.phase%3DPending") == ["p1"]
    assert q("status.phase!%3DPending,metadata.namespace%3Ddefault") == ["p2"]
    assert q("metadata.name%3Dp1") == ["p1"]
    bad = http_client.get("/api/v1/pods?fieldSelector=spec.bogus%3Dx")
    assert (bad.status, bad.json["reason"]) == (400, "BadRequest")
    assert "field label not supported" in bad.json["message"]


def test_limit_and_continue(http_client: Http) -> None:
    for n in range(7):
        http_client.post(CM, configmap(f"cm-{n}"))
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        reply = http_client.get(f"{CM}?limit=3" + (f"&continue={token}" if token else "")).json
        pages += 1
        seen += names(reply)
        token = reply["metadata"].get("continue", "")
        if not token:
            assert "remainingItemCount" not in reply["metadata"]
            break
        assert reply["metadata"]["remainingItemCount"] > 0
    assert pages == 3
    assert seen == [f"cm-{n}" for n in range(7)]
    assert http_client.get(f"{CM}?limit=2&continue=garbage").status == 400
