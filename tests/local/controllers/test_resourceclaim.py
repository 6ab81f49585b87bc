"""The resourceclaim controller: the pure planner (names, ownership, reuse, deallocation) and the controller running
against a real API server (claims created, pod status written, deleted with the pod, deallocated when the last
consumer goes, an event for a missing template)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from knuma.kube.client import async_http
from knuma.local.controllers.claims import ResourceClaimController, pod_claim_names
from knuma.local.controllers.resourceclaim import (
    FINALIZER,
    POD_CLAIM_ANNOTATION,
    generate_name,
    plan_claim,
    plan_pod,
)
from knuma.testing.apiserver import apiserver_in_thread

NS = "/api/v1/namespaces/default"
RES = "/apis/resource.k8s.io/v1/namespaces/default"
SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.sim.knuma.io"}}]}}


def pod(name: str = "trainer", uid: str = "uid-1", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {
            "containers": [{"name": "main", "image": "busybox"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
        "status": status,
    }


def template(name: str = "one-gpu") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"metadata": {"labels": {"team": "ml"}}, "spec": SPEC},
    }


def owned_claim(name: str, pod_uid: str = "uid-1", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {POD_CLAIM_ANNOTATION: "gpu"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": pod_uid, "controller": True}
            ],
            "finalizers": [FINALIZER],
        },
        "spec": SPEC,
        "status": status,
    }


def test_generated_names_follow_kube_controller_manager() -> None:
    assert generate_name("trainer", "gpu") == "trainer-gpu-"
    long = generate_name("p" * 60, "c" * 20)
    # Both parts shortened in proportion (60 and 20 of 82 characters to 57): 41 + "-" + 13.
    assert long == "p" * 41 + "-" + "c" * 13
    assert len(long) <= 57


def test_a_template_claim_is_planned_with_owner_annotation_and_template_metadata() -> None:
    plan = plan_pod(pod(), [], {"one-gpu": template()})
    assert plan.errors == [] and len(plan.create) == 1
    pod_claim, claim = plan.create[0]
    assert pod_claim == "gpu"
    assert claim["metadata"]["generateName"] == "trainer-gpu-"
    assert claim["metadata"]["annotations"] == {POD_CLAIM_ANNOTATION: "gpu"}
    assert claim["metadata"]["labels"] == {"team": "ml"}
    assert claim["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim["spec"] == SPEC
    assert plan.statuses({"gpu": "trainer-gpu-abcde"}) == [{"name": "gpu", "resourceClaimName": "trainer-gpu-abcde"}]


def test_an_existing_owned_claim_is_reused_and_another_pods_is_not() -> None:
    plan = plan_pod(pod(), [owned_claim("trainer-gpu-x1y2z")], {"one-gpu": template()})
    assert plan.create == [] and plan.known == {"gpu": "trainer-gpu-x1y2z"}
    other = plan_pod(pod(uid="uid-2"), [owned_claim("trainer-gpu-x1y2z")], {"one-gpu": template()})
    assert len(other.create) == 1


def test_a_missing_template_is_an_error_for_that_pod_claim() -> None:
    plan = plan_pod(pod(), [], {})
    assert plan.create == []
    assert plan.errors == [
        (
            "gpu",
            'PodResourceClaim gpu: resource claim template "one-gpu": '
            'resourceclaimtemplate.resource.k8s.io "one-gpu" not found',
        )
    ]


def test_the_last_consumer_going_deallocates_and_a_done_owner_deletes() -> None:
    consumer = {"resource": "pods", "name": "trainer", "uid": "uid-1"}
    allocated = owned_claim("c", allocation={"devices": {"results": []}}, reservedFor=[consumer])
    running = pod(phase="Running")
    assert plan_claim(allocated, {"trainer": running}).reserved_for is None
    assert not plan_claim(allocated, {"trainer": running}).deallocate
    gone = plan_claim(allocated, {})
    assert (gone.reserved_for, gone.deallocate, gone.remove_finalizer, gone.delete) == ([], True, True, False)
    done = plan_claim(allocated, {"trainer": pod(phase="Succeeded")})
    assert (done.deallocate, done.delete) == (True, True)
    replaced = plan_claim(allocated, {"trainer": pod(uid="uid-9", phase="Running")})
    assert replaced.deallocate and replaced.delete
    # Two consumers of a shared claim: one going keeps the allocation.
    shared = owned_claim(
        "c", allocation={"devices": {"results": []}}, reservedFor=[consumer, {**consumer, "name": "b", "uid": "uid-b"}]
    )
    one_left = plan_claim(shared, {"trainer": running})
    assert one_left.reserved_for == [consumer] and not one_left.deallocate and not one_left.remove_finalizer
    # The scheduler added its finalizer and has not written the allocation yet: nothing to undo.
    assert plan_claim(owned_claim("c"), {"trainer": running}) == plan_claim(owned_claim("c"), {"trainer": running})
    assert not plan_claim(owned_claim("c"), {"trainer": running}).remove_finalizer


def extended_claim(name: str = "trainer-extended-resources-abcde", **status: Any) -> dict[str, Any]:
    """What kube-scheduler's PreBind creates for a pod's DRA-backed extended resources (KEP-5004)."""
    claim = owned_claim(name, **status)
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    claim["spec"] = {
        "devices": {"requests": [{"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu.sim.knuma.io"}}]}
    }
    return claim


def test_the_extended_resource_claim_is_a_claim_of_the_pod_and_goes_when_it_is_done() -> None:
    """Named in `status.extendedResourceClaimStatus` only (no `spec.resourceClaims`), owned by the pod: freed and
    deleted when the pod is done, as upstream does since kubernetes#134312."""
    trainer = pod(phase="Running")
    del trainer["spec"]["resourceClaims"]
    trainer["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": "trainer-extended-resources-abcde",
        "requestMappings": [
            {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        ],
    }
    assert pod_claim_names(trainer) == ["trainer-extended-resources-abcde"]
    consumer = {"resource": "pods", "name": "trainer", "uid": "uid-1"}
    claim = extended_claim(allocation={"devices": {"results": []}}, reservedFor=[consumer])
    assert plan_claim(claim, {"trainer": trainer}) == plan_claim(owned_claim("x"), {"trainer": trainer})
    done = plan_claim(claim, {"trainer": {**trainer, "status": {**trainer["status"], "phase": "Failed"}}})
    assert (done.reserved_for, done.deallocate, done.remove_finalizer, done.delete) == ([], True, True, True)


async def _wait(check: Any, timeout: float = 10.0) -> Any:
    for _ in range(int(timeout / 0.05)):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def test_controller_against_a_real_api_server(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, bookmark_interval=0.2) as api:
        http = async_http(api.kubeconfig)
        controller = ResourceClaimController(http)
        task = asyncio.create_task(controller.run())
        try:
            (await http.post(f"{RES}/resourceclaimtemplates", json=template())).raise_for_status()
            (await http.post(f"{NS}/pods", json=pod())).raise_for_status()

            async def statuses() -> Any:
                got = (await http.get(f"{NS}/pods/trainer")).json()
                return got["status"].get("resourceClaimStatuses")

            recorded = await _wait(statuses)
            assert len(recorded) == 1 and recorded[0]["name"] == "gpu"
            name = recorded[0]["resourceClaimName"]
            assert name.startswith("trainer-gpu-") and len(name) == len("trainer-gpu-") + 5
            claim = (await http.get(f"{RES}/resourceclaims/{name}")).json()
            assert claim["metadata"]["ownerReferences"][0]["name"] == "trainer"
            assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
            await asyncio.sleep(0.5)  # more syncs of the pod create nothing more
            assert len((await http.get(f"{RES}/resourceclaims")).json()["items"]) == 1

            # A missing template: an event on the pod, no claim.
            lonely = pod("lonely", uid="")
            lonely["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "missing"
            del lonely["metadata"]["uid"]
            (await http.post(f"{NS}/pods", json=lonely)).raise_for_status()

            async def event() -> Any:
                items = (await http.get(f"{NS}/events")).json()["items"]
                return [e for e in items if e["reason"] == "FailedResourceClaimCreation"]

            events = await _wait(event)
            assert events[0]["involvedObject"]["name"] == "lonely"
            assert 'resource claim template "missing"' in events[0]["message"]
            # The template appears: the waiting pod gets its claim.
            (await http.post(f"{RES}/resourceclaimtemplates", json=template("missing"))).raise_for_status()

            async def lonely_claim() -> Any:
                items = (await http.get(f"{RES}/resourceclaims")).json()["items"]
                return [c for c in items if c["metadata"]["name"].startswith("lonely-gpu-")]

            await _wait(lonely_claim)

            # Allocated and reserved for the pod (what the scheduler does), then the pod goes: deallocated, then
            # the garbage collector deletes the claim with its owner.
            current = (await http.get(f"{RES}/resourceclaims/{name}")).json()
            current["metadata"]["finalizers"] = [FINALIZER]
            current = (await http.put(f"{RES}/resourceclaims/{name}", json=current)).json()
            uid = (await http.get(f"{NS}/pods/trainer")).json()["metadata"]["uid"]
            result = {"request": "gpu", "driver": "gpu.sim.knuma.io", "pool": "node-a", "device": "gpu-0"}
            current["status"] = {
                "allocation": {"devices": {"results": [result]}},
                "reservedFor": [{"resource": "pods", "name": "trainer", "uid": uid}],
            }
            (await http.put(f"{RES}/resourceclaims/{name}/status", json=current)).raise_for_status()
            (await http.delete(f"{NS}/pods/trainer")).raise_for_status()

            async def claim_gone() -> bool:
                return (await http.get(f"{RES}/resourceclaims/{name}")).status_code == 404

            await _wait(claim_gone)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await http.aclose()


MERGE = {"Content-Type": "application/merge-patch+json"}


async def _scheduled_with_extended_claim(http: Any, name: str) -> str:
    """A pod whose `example.com/gpu` kube-scheduler's PreBind gave it through DRA: its claim (owned by the pod,
    allocated, reserved for it) and its `status.extendedResourceClaimStatus`; returns the claim's path."""
    manifest = pod(name)
    del manifest["spec"]["resourceClaims"], manifest["metadata"]["uid"]
    manifest["spec"]["containers"][0]["resources"] = {"limits": {"example.com/gpu": "1"}}
    made = await http.post(f"{NS}/pods", json=manifest)
    assert made.status_code == 201, made.text
    uid = made.json()["metadata"]["uid"]
    claim = extended_claim(f"{name}-extended-resources-abcde")
    claim["metadata"]["ownerReferences"][0].update(name=name, uid=uid)
    del claim["status"]
    created = await http.post(f"{RES}/resourceclaims", json=claim)
    assert created.status_code == 201, created.text
    body = created.json()
    path = f"{RES}/resourceclaims/{body['metadata']['name']}"
    result = {"request": "container-0-request-0", "driver": "gpu.sim.knuma.io", "pool": "n", "device": "gpu-0"}
    body["status"] = {
        "allocation": {"devices": {"results": [result]}},
        "reservedFor": [{"resource": "pods", "name": name, "uid": uid}],
    }
    (await http.put(f"{path}/status", json=body)).raise_for_status()
    mapping = {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    status = {
        "extendedResourceClaimStatus": {"resourceClaimName": body["metadata"]["name"], "requestMappings": [mapping]}
    }
    (await http.patch(f"{NS}/pods/{name}/status", json={"status": status}, headers=MERGE)).raise_for_status()
    return path


async def test_an_extended_resource_claim_goes_when_its_pod_finishes_or_is_deleted(tmp_path: Path) -> None:
    """Against a real API server: a pod that finishes (and stays): the controller frees its claim and deletes it; a
    pod that is deleted: the garbage collector deletes its claim with it (owner reference)."""
    with apiserver_in_thread(tmp_path, bookmark_interval=0.2) as api:
        http = async_http(api.kubeconfig)
        controller = ResourceClaimController(http)
        task = asyncio.create_task(controller.run())
        try:
            finishing = await _scheduled_with_extended_claim(http, "trainer")
            deleted = await _scheduled_with_extended_claim(http, "server")
            await asyncio.sleep(0.5)  # running: the claims stay, reserved
            for path in (finishing, deleted):
                assert (await http.get(path)).json()["status"]["reservedFor"][0]["resource"] == "pods"
            done = {"status": {"phase": "Succeeded"}}
            (await http.patch(f"{NS}/pods/trainer/status", json=done, headers=MERGE)).raise_for_status()
            (await http.delete(f"{NS}/pods/server")).raise_for_status()

            async def gone(path: str) -> bool:
                return (await http.get(path)).status_code == 404

            await _wait(lambda: gone(finishing))
            await _wait(lambda: gone(deleted))
            assert (await http.get(f"{NS}/pods/trainer")).status_code == 200  # the finished pod itself stays
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await http.aclose()
