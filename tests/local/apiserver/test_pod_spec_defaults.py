"""A Pod's spec defaults as kube-apiserver's decoder gives them (`knuma.local.apiserver.poddefaults`): on create, on
update bodies and on pods an older version stored, so that a manifest spelling the defaults out replaces a pod created
without them and a pod stored without them takes a label."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from knuma.local.apiserver.poddefaults import default_pod
from knuma.testing.apiserver import apiserver_in_thread
from tests.strategies import JSON_VALUES, mutations

from .conftest import Http, Kubectl

PODS = "/api/v1/namespaces/default/pods"
DB = "knuma-apiserver.sqlite3"


def _manifest(name: str = "web") -> dict[str, Any]:
    probe = {"httpGet": {"port": 8080}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "ports": [{"containerPort": 8080}],
                    "readinessProbe": probe,
                    "livenessProbe": {"grpc": {"port": 9090}},
                    "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"}],
                }
            ],
            "initContainers": [{"name": "setup", "image": "busybox:1.36"}],
            "volumes": [{"name": "scratch"}, {"name": "creds", "secret": {"secretName": "creds"}}],
        },
    }


def test_a_pod_gets_the_defaults_of_the_go_decoder() -> None:
    obj = _manifest()
    default_pod(obj)
    spec = obj["spec"]
    assert (spec["securityContext"], spec["enableServiceLinks"], spec["terminationGracePeriodSeconds"]) == (
        {},
        True,
        30,
    )
    assert (spec["dnsPolicy"], spec["restartPolicy"], spec["schedulerName"]) == (
        "ClusterFirst",
        "Always",
        "default-scheduler",
    )
    app, setup = spec["containers"][0], spec["initContainers"][0]
    assert app["imagePullPolicy"] == "Always"  # no tag is `latest`
    assert setup["imagePullPolicy"] == "IfNotPresent"
    assert setup["terminationMessagePolicy"] == app["terminationMessagePolicy"] == "File"
    assert app["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert app["readinessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert app["livenessProbe"]["grpc"] == {"port": 9090, "service": ""}
    assert app["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert spec["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 420}},
    ]
    container = {"name": "app", "image": "nginx", "ports": [{"containerPort": 8080}]}
    host: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "spec": {"hostNetwork": True, "containers": [container]}}
    default_pod(host)
    assert host["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]


@given(st.data())
def test_any_pod_body_is_defaulted_without_an_exception_and_twice_is_once(data: st.DataObject) -> None:
    """Defaulting runs before validation, on whatever a client sent: values of a wrong type are left for validation
    to name, never a traceback; and defaulting is idempotent (an update body of a defaulted pod is no change)."""
    body = data.draw(st.one_of(mutations(_manifest()), st.fixed_dictionaries({"spec": JSON_VALUES})))
    if not isinstance(body, dict):
        return
    default_pod(body)
    again = copy.deepcopy(body)
    default_pod(again)
    assert again == body


def test_a_manifest_spelling_the_defaults_out_replaces_a_pod_created_without_them(
    kubectl: Kubectl, http_client: Http
) -> None:
    """A manifest with every default written out (as `kubectl get pod -o yaml` of a cluster has them) replaces, with
    a new image, the pod created from the bare manifest: an allowed update, since both were defaulted alike."""
    kubectl("apply", "-f", "-", stdin=json.dumps(_manifest()))
    stored = http_client.get(f"{PODS}/web").json
    assert stored["spec"]["securityContext"] == {} and stored["spec"]["enableServiceLinks"] is True
    from_real_cluster = _manifest()
    default_pod(from_real_cluster)
    from_real_cluster["metadata"] = {"name": "web", "namespace": "default"}
    from_real_cluster["spec"]["containers"][0]["image"] = "nginx:1.27"
    replaced = kubectl("replace", "-f", "-", stdin=yaml.safe_dump(from_real_cluster))
    assert "pod/web replaced" in replaced.stdout
    assert http_client.get(f"{PODS}/web").json["spec"]["containers"][0]["image"] == "nginx:1.27"
    # a pointer field set to its zero value is a change from the default, as kube-apiserver sees it
    changed = dict(from_real_cluster, spec={**from_real_cluster["spec"], "enableServiceLinks": False})
    refused = kubectl("replace", "-f", "-", stdin=yaml.safe_dump(changed), check=False)
    assert refused.returncode == 1
    assert "spec.enableServiceLinks: true -> false" in refused.stderr


def test_a_pod_an_older_version_stored_without_defaults_takes_a_label(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with apiserver_in_thread(tmp_path / "one", data_dir=data) as api:
        assert Http(api).post(PODS, _manifest()).status == 201
    with sqlite3.connect(data / DB) as conn:  # as a version that defaulted less stored it
        (body,) = conn.execute("SELECT body FROM objects WHERE resource = 'pods'").fetchone()
        old = json.loads(body)
        for key in ("securityContext", "enableServiceLinks"):
            del old["spec"][key]
        del old["spec"]["containers"][0]["terminationMessagePolicy"]
        conn.execute("UPDATE objects SET body = ? WHERE resource = 'pods'", (json.dumps(old),))
    with apiserver_in_thread(tmp_path / "two", data_dir=data) as api:
        http = Http(api)
        assert http.get(f"{PODS}/web").json["spec"]["securityContext"] == {}
        labelled = http.patch(f"{PODS}/web", {"metadata": {"labels": {"tier": "web"}}}, "application/merge-patch+json")
        assert labelled.status == 200, labelled.json
        assert labelled.json["metadata"]["labels"] == {"tier": "web"}
