"""`DefaultTolerationSeconds` on `knuma apiserver`: pods get the not-ready and unreachable NoExecute tolerations for
300 s unless they tolerate those taints already, as kube-apiserver's admission plugin adds them."""

from __future__ import annotations

from typing import Any

from tests.local.apiserver.conftest import Http, Kubectl, pod

PODS = "/api/v1/namespaces/default/pods"


def tolerations(http_client: Http, name: str, given: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    body = pod(name) if given is None else pod(name, tolerations=given)
    created = http_client.post(PODS, body)
    assert created.status == 201, created.json
    return list(created.json["spec"]["tolerations"])


def test_pods_get_the_default_tolerations_they_lack(http_client: Http, kubectl: Kubectl) -> None:
    default = tolerations(http_client, "plain", None)
    assert default == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    everything = [{"operator": "Exists"}]  # empty key and effect: tolerates both already
    assert tolerations(http_client, "tolerant", everything) == everything
    short = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 60,
    }
    mixed = tolerations(http_client, "short", [short])
    assert mixed[0] == short and [t["key"] for t in mixed[1:]] == ["node.kubernetes.io/unreachable"]
    described = kubectl("describe", "pod", "plain").stdout
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in described
    # an update that leaves the tolerations out keeps them (the plugin runs on updates too)
    stored = http_client.get(f"{PODS}/plain").json
    stored["metadata"]["labels"]["touched"] = "yes"
    del stored["spec"]["tolerations"]
    updated = http_client.put(f"{PODS}/plain", stored)
    assert updated.status == 200, updated.json
    assert updated.json["spec"]["tolerations"] == default
