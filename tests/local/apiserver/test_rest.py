"""CRUD semantics over real HTTP: metadata, optimistic concurrency, errors, namespaces, binding, status."""

from __future__ import annotations

from tests.local.apiserver.conftest import Http, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def test_create_sets_metadata_and_one_monotonic_resource_version(http_client: Http) -> None:
    first = http_client.post(CM, configmap("a", x="1"))
    assert first.status == 201
    md = first.json["metadata"]
    assert md["uid"] and md["creationTimestamp"].endswith("Z")
    assert "generation" not in md  # a ConfigMap has no spec to count changes of, as on kube-apiserver
    second = http_client.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert "generation" not in second.json["metadata"]
    updated = http_client.put(f"{CM}/a", {**configmap("a", x="2")})
    assert updated.status == 200 and "generation" not in updated.json["metadata"]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    assert (
        http_client.post("/apis/apps/v1/namespaces/default/deployments", deployment).json["metadata"]["generation"] == 1
    )
    assert int(second.json["metadata"]["resourceVersion"]) > int(md["resourceVersion"])
    got = http_client.get(f"{CM}/a").json
    assert got["data"] == {"x": "2"}
    listed = http_client.get(CM).json
    assert listed["kind"] == "ConfigMapList"
    assert int(listed["metadata"]["resourceVersion"]) >= int(second.json["metadata"]["resourceVersion"])


def test_errors_carry_real_reasons_and_codes(http_client: Http) -> None:
    http_client.post(CM, configmap("a"))
    dup = http_client.post(CM, configmap("a"))
    assert (dup.status, dup.json["reason"]) == (409, "AlreadyExists")
    assert dup.json["message"] == 'configmaps "a" already exists'
    assert dup.json["details"] == {"name": "a", "kind": "configmaps"}
    missing = http_client.get(f"{CM}/nope")
    assert (missing.status, missing.json["reason"], missing.json["message"]) == (
        404,
        "NotFound",
        'configmaps "nope" not found',
    )
    bad_name = http_client.post(CM, configmap("Not_Valid"))
    assert (bad_name.status, bad_name.json["reason"]) == (422, "Invalid")
    assert bad_name.json["details"]["causes"][0]["field"] == "metadata.name"
    assert "RFC 1123" in bad_name.json["message"]
    malformed = http_client.post(CM, b"{not json")
    assert (malformed.status, malformed.json["reason"]) == (400, "BadRequest")
    no_ns = http_client.post("/api/v1/namespaces/ghost/configmaps", configmap("a", namespace="ghost"))
    assert (no_ns.status, no_ns.json["message"]) == (404, 'namespaces "ghost" not found')
    wrong_kind = http_client.post(CM, {**configmap("b"), "kind": "Secret"})
    assert wrong_kind.status == 400
    mismatch = http_client.post(CM, configmap("c", namespace="kube-system"))
    assert mismatch.status == 400
    pod_invalid = http_client.post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    assert pod_invalid.status == 422
    assert pod_invalid.json["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.containers",
    }


def test_an_init_container_restart_policy_other_than_always_is_422(http_client: Http) -> None:
    """`validateInitContainers`: `always` is not `Always` (knuma would take the container for a plain init one)."""
    spec = {
        "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "always"}],
        "containers": [{"name": "app", "image": "busybox"}],
    }
    response = http_client.post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lc"}, "spec": spec})
    assert (response.status, response.json["reason"]) == (422, "Invalid")
    assert response.json["message"] == (
        'Pod "lc" is invalid: spec.initContainers[0].restartPolicy: Unsupported value: "always": supported values: '
        '"Always"'
    )
    spec["initContainers"][0]["restartPolicy"] = "Always"
    sidecar = http_client.post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok"}, "spec": spec})
    assert sidecar.status == 201, sidecar.json


def test_pod_with_duplicate_container_names_is_422_like_kube_apiserver(http_client: Http) -> None:
    spec = {
        "initContainers": [{"name": "app", "image": "busybox"}],
        "containers": [{"name": "app", "image": "busybox"}],
    }
    response = http_client.post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dup"}, "spec": spec})
    assert (response.status, response.json["reason"]) == (422, "Invalid")
    assert response.json["message"] == 'Pod "dup" is invalid: spec.initContainers[0].name: Duplicate value: "app"'
    assert response.json["details"]["causes"] == [
        {"reason": "FieldValueDuplicate", "message": 'Duplicate value: "app"', "field": "spec.initContainers[0].name"}
    ]
    assert http_client.get(f"{PODS}/dup").status == 404
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": spec},
        },
    }
    refused = http_client.post("/apis/apps/v1/namespaces/default/deployments", deployment)
    assert refused.status == 422
    assert refused.json["details"]["causes"][0]["field"] == "spec.template.spec.initContainers[0].name"


def test_stale_resource_version_is_409_conflict(http_client: Http) -> None:
    created = http_client.post(CM, configmap("a", x="1")).json
    fresh = {**created, "data": {"x": "2"}}
    updated = http_client.put(f"{CM}/a", fresh)
    assert updated.status == 200
    assert updated.json["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    stale = http_client.put(f"{CM}/a", {**created, "data": {"x": "3"}})
    assert (stale.status, stale.json["reason"]) == (409, "Conflict")
    assert "the object has been modified" in stale.json["message"]
    assert http_client.get(f"{CM}/a").json["data"] == {"x": "2"}


def test_generation_bumps_on_spec_changes_only(http_client: Http) -> None:
    created = http_client.post(PODS, pod("p")).json
    relabeled = http_client.patch(
        f"{PODS}/p", {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json"
    ).json
    assert relabeled["metadata"]["generation"] == 1
    respec = http_client.patch(f"{PODS}/p", {"spec": {"activeDeadlineSeconds": 5}}, "application/merge-patch+json").json
    assert respec["metadata"]["generation"] == 2
    status = http_client.patch(
        f"{PODS}/p/status", {"status": {"phase": "Running"}}, "application/merge-patch+json"
    ).json
    assert status["metadata"]["generation"] == 2
    assert status["status"]["phase"] == "Running"
    assert created["status"]["phase"] == "Pending"


def test_status_subresource_is_separate_from_main_resource(http_client: Http) -> None:
    http_client.post(PODS, pod("p"))
    main = http_client.patch(
        f"{PODS}/p", {"status": {"phase": "Failed"}, "metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"
    ).json
    assert main["status"]["phase"] == "Pending"
    assert main["metadata"]["labels"]["a"] == "b"
    obj = http_client.get(f"{PODS}/p/status").json
    obj["status"]["phase"] = "Succeeded"
    obj["spec"]["activeDeadlineSeconds"] = 99
    put = http_client.put(f"{PODS}/p/status", obj).json
    assert put["status"]["phase"] == "Succeeded"
    assert "activeDeadlineSeconds" not in put["spec"]


def test_binding_sets_node_name_once(http_client: Http) -> None:
    http_client.post(PODS, pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    first = http_client.post(f"{PODS}/p/binding", binding)
    assert first.status == 201
    assert first.json["status"] == "Success"
    bound = http_client.get(f"{PODS}/p").json
    assert bound["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    second = http_client.post(f"{PODS}/p/binding", {**binding, "target": {"kind": "Node", "name": "n2"}})
    assert (second.status, second.json["reason"]) == (409, "Conflict")
    assert 'already assigned to node "n1"' in second.json["message"]
    missing = http_client.post(f"{PODS}/ghost/binding", {**binding, "metadata": {"name": "ghost"}})
    assert missing.status == 404


def test_a_binding_names_its_pod_and_binds_only_that_pod(http_client: Http) -> None:
    """`BindingREST.Create`: the body's name must be the URL's (a Binding without one is refused, not completed);
    a UID in it is a precondition, so a scheduler never binds a namesake created after it decided."""
    uid = http_client.post(PODS, pod("q")).json["metadata"]["uid"]
    target = {"kind": "Node", "name": "n1"}
    for metadata in ({"name": "other"}, {}):
        reply = http_client.post(f"{PODS}/q/binding", {"metadata": metadata, "target": target})
        assert (reply.status, reply.json["message"]) == (400, "name in URL does not match name in Binding object")
    stale = http_client.post(f"{PODS}/q/binding", {"metadata": {"name": "q", "uid": "0000"}, "target": target})
    assert stale.status == 409
    assert stale.json["message"] == (
        f'Operation cannot be fulfilled on pods "q": Precondition failed: UID in precondition: 0000, '
        f"UID in object meta: {uid}"
    )
    assert "nodeName" not in http_client.get(f"{PODS}/q").json["spec"]
    bound = http_client.post(f"{PODS}/q/binding", {"metadata": {"name": "q", "uid": uid}, "target": target})
    assert bound.status == 201


def test_generate_name_and_cluster_scoped_kinds(http_client: Http) -> None:
    made = http_client.post(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-"}})
    assert made.status == 201
    assert made.json["metadata"]["name"].startswith("cm-") and len(made.json["metadata"]["name"]) == 8
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    assert http_client.post("/apis/scheduling.k8s.io/v1/priorityclasses", pc).status == 201
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:knuma"}}
    assert http_client.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role).status == 201
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "knuma-scheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "a"},
    }
    assert http_client.post("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease).status == 201
    ev = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "reason": "Scheduled",
        "note": "ok",
    }
    assert http_client.post("/apis/events.k8s.io/v1/namespaces/default/events", ev).status == 201
    assert http_client.get("/apis/scheduling.k8s.io/v1/namespaces/default/priorityclasses").status == 404


def test_network_policies_are_served(http_client: Http) -> None:
    """The deployer's components come with NetworkPolicies."""
    netpol = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all", "namespace": "default"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    url = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    assert http_client.post(url, netpol).status == 201
    assert http_client.get(f"{url}/deny-all").json["spec"]["policyTypes"] == ["Ingress", "Egress"]
    resources = http_client.get("/apis/networking.k8s.io/v1").json["resources"]
    assert {"name": "networkpolicies", "kind": "NetworkPolicy", "namespaced": True}.items() <= resources[0].items()


def test_delete_returns_object_and_then_404(http_client: Http) -> None:
    http_client.post(CM, configmap("a"))
    deleted = http_client.delete(
        f"{CM}/a", {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    )
    assert deleted.status == 200
    assert deleted.json["metadata"]["name"] == "a"
    assert http_client.get(f"{CM}/a").status == 404
    assert http_client.delete(f"{CM}/a").status == 404


def test_delete_preconditions(http_client: Http) -> None:
    created = http_client.post(CM, configmap("a")).json
    stale = http_client.delete(f"{CM}/a", {"preconditions": {"resourceVersion": "1"}})
    assert (stale.status, stale.json["reason"]) == (409, "Conflict")
    ok = http_client.delete(f"{CM}/a", {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert ok.status == 200


def test_dry_run_does_not_persist(http_client: Http) -> None:
    reply = http_client.post(f"{CM}?dryRun=All", configmap("a"))
    assert reply.status == 201
    assert http_client.get(f"{CM}/a").status == 404


def test_events_k8s_io_and_core_events_share_storage(http_client: Http) -> None:
    http_client.post(PODS, pod("p"))
    uid = http_client.get(f"{PODS}/p").json["metadata"]["uid"]
    new_style = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "knuma-scheduler",
        "reportingInstance": "knuma-scheduler-0",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available: 3 cannot align container",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "uid": uid, "apiVersion": "v1"},
    }
    created = http_client.post("/apis/events.k8s.io/v1/namespaces/default/events", new_style)
    assert created.status == 201
    assert created.json["apiVersion"] == "events.k8s.io/v1" and created.json["note"].startswith("0/3")
    core = http_client.get("/api/v1/namespaces/default/events/p.1").json
    assert core["apiVersion"] == "v1"
    assert core["message"] == new_style["note"]
    assert core["involvedObject"]["name"] == "p"
    assert core["reportingComponent"] == "knuma-scheduler"
    selected = http_client.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp").json
    assert [e["metadata"]["name"] for e in selected["items"]] == ["p.1"]
    listed = http_client.get("/apis/events.k8s.io/v1/events").json["items"]
    assert listed[0]["regarding"]["uid"] == uid and "involvedObject" not in listed[0]
    http_client.patch(
        "/apis/events.k8s.io/v1/namespaces/default/events/p.1",
        {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"}},
        "application/merge-patch+json",
    )
    assert http_client.get("/api/v1/namespaces/default/events/p.1").json["series"]["count"] == 2


def test_pod_defaults_requests_from_limits_and_qos_class(http_client: Http) -> None:
    guaranteed = pod("g")
    guaranteed["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    created = http_client.post(PODS, guaranteed).json
    assert created["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert created["status"]["qosClass"] == "Guaranteed"
    assert created["spec"]["schedulerName"] == "default-scheduler"
    burstable = pod("b")
    burstable["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    assert http_client.post(PODS, burstable).json["status"]["qosClass"] == "Burstable"
    assert http_client.post(PODS, pod("e")).json["status"]["qosClass"] == "BestEffort"
    # pod-level resources (1.34, `defaultPodRequests`): CPU from the containers' requests, memory from the pod-level
    # limit; hugepages limited to the containers' (`defaultHugePagePodLimits`); the QoS class from them
    whole = pod("w")
    whole["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}, "limits": {"hugepages-2Mi": "4Mi"}}
    whole["spec"]["resources"] = {"limits": {"cpu": "4", "memory": "2Gi"}}
    stored = http_client.post(PODS, whole).json
    assert stored["spec"]["resources"]["requests"] == {"cpu": "1", "memory": "2Gi", "hugepages-2Mi": "4Mi"}
    assert stored["spec"]["resources"]["limits"] == {"cpu": "4", "memory": "2Gi", "hugepages-2Mi": "4Mi"}
    assert stored["status"]["qosClass"] == "Burstable"


def test_new_daemonset_reads_back_with_zero_counters(http_client: Http) -> None:
    """Typed clients (lightkube) require DaemonSetStatus' non-omitempty counters."""
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "a", "image": "x"}]},
            },
        },
    }
    created = http_client.post("/apis/apps/v1/namespaces/default/daemonsets", ds)
    assert created.status == 201
    assert created.json["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


def test_malformed_read_parameters_and_delete_bodies_are_400_not_ignored(http_client: Http) -> None:
    """A `resourceVersion` that is not a number, a `timeoutSeconds` that is not whole seconds and a DeleteOptions
    body that is not an object are refused as kube-apiserver refuses them (ignored, they served another read than the
    one asked for, or deleted without the options the client meant to send); nothing is deleted."""
    http_client.post(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}})
    for path in (f"{CM}/kept?resourceVersion=abc", f"{CM}?resourceVersion=abc", f"{CM}?resourceVersion=-1"):
        reply = http_client.get(path)
        assert reply.status == 400, path
        assert reply.json["message"].startswith("invalid resource version: "), path
    assert http_client.get(f"{CM}?timeoutSeconds=soon").json["message"] == "invalid value for timeoutSeconds: 'soon'"
    assert http_client.get(f"{CM}/kept?resourceVersion=0").status == 200
    refused = http_client.request("DELETE", f"{CM}/kept", b"[1]", content_type="application/json")
    assert refused.status == 400
    assert refused.json["message"] == "json: cannot unmarshal array into Go value of type v1.DeleteOptions"
    assert http_client.get(f"{CM}/kept").status == 200
