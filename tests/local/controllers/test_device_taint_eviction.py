"""The device taint eviction controller (KEP-5055): the pure delay (upstream's per-device eviction time with the
node taint eviction controller's toleration rules), and the controller against a real API server, where a
DeviceTaintRule with `NoExecute` on a device a running pod's claim holds deletes the pod with the
`DisruptionTarget` condition, while a pod whose claim tolerates the taint stays; and the rules' `EvictionInProgress`
condition (the `None` effect's dry run, then pods pending eviction and evicted) as the controller writes it through
the status subresource."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from knuma.api.taints import Taint
from knuma.kube.client import async_http
from knuma.kube.tasks import cancel_and_wait
from knuma.local.controllers.device_taint_eviction import (
    DeviceTaintEvictionController,
    eviction_delay,
    eviction_time,
    taint_delay,
)
from knuma.testing.apiserver import apiserver_in_thread

from .test_resourceclaim import MERGE, NS, RES, _wait

GPU = ("gpu.example.com", "node-1", "gpu-0")
DOWN = Taint("example.com/down", "", "NoExecute")


def _claim(name: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"request": "gpu", "driver": GPU[0], "pool": GPU[1], "device": GPU[2]}
    if tolerations:
        result["tolerations"] = tolerations
    return {"metadata": {"name": name}, "status": {"allocation": {"devices": {"results": [result]}}}}


def test_the_delay_follows_the_tolerations_of_the_allocated_request() -> None:
    def taints(device: Any) -> list[Taint]:
        return [DOWN] if device == GPU else []

    assert eviction_delay([_claim("c")], taints) == 0
    assert eviction_delay([_claim("c")], lambda _: [Taint("example.com/down", "", "NoSchedule")]) is None
    exists = {"key": "example.com/down", "operator": "Exists", "effect": "NoExecute"}
    assert eviction_delay([_claim("c", [exists])], taints) is None  # tolerated for ever
    assert eviction_delay([_claim("c", [{**exists, "tolerationSeconds": 30}])], taints) == 30
    other = {"key": "example.com/other", "operator": "Exists"}
    assert eviction_delay([_claim("c", [other])], taints) == 0
    assert eviction_delay([{"metadata": {"name": "pending"}}], taints) is None  # not allocated: nothing to evict


def test_the_eviction_time_counts_from_each_taints_time_added() -> None:
    """`Controller.evictionTime`: per taint, when it was added plus the seconds its toleration allows; the earliest."""
    late = Taint("example.com/late", "", "NoExecute")
    added = {DOWN: 1000.0, late: 1010.0}

    def taints(device: Any) -> list[Taint]:
        return [DOWN, late] if device == GPU else []

    def added_at(device: Any, taint: Taint) -> float:
        return added[taint]

    patient = {"key": "example.com/down", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    forever = {"key": "example.com/late", "operator": "Exists", "effect": "NoExecute"}
    assert eviction_time([_claim("c")], taints, added_at) == 1000  # not tolerated: from the earlier taint
    assert eviction_time([_claim("c", [patient])], taints, added_at) == 1010  # the later one is not tolerated
    assert eviction_time([_claim("c", [patient, forever])], taints, added_at) == 1030
    assert eviction_time([_claim("c", [forever])], lambda _: [late], added_at) is None


def test_every_matching_toleration_counts_for_a_device_taint() -> None:
    """`claimEvictionTime`: the smallest `tolerationSeconds` of all the tolerations that match (the node taint manager
    uses the first), one without `tolerationSeconds` tolerates for ever, a negative one is 0."""
    key = {"key": "example.com/down", "operator": "Exists"}
    assert taint_delay([{**key, "tolerationSeconds": 60}, {**key, "tolerationSeconds": 20}], DOWN) == 20
    assert taint_delay([{**key, "tolerationSeconds": 60}, key], DOWN) is None
    assert taint_delay([{**key, "tolerationSeconds": -5}], DOWN) == 0
    assert taint_delay([{**key, "effect": "NoSchedule"}], DOWN) == 0  # matches another effect only
    assert taint_delay([], DOWN) == 0


@contextlib.asynccontextmanager
async def _controller(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[Any, DeviceTaintEvictionController]]:
    """A client of a fresh API server, and the controller running against it until the block ends."""
    with apiserver_in_thread(tmp_path, bookmark_interval=0.2) as api:
        http = async_http(api.kubeconfig)
        controller = DeviceTaintEvictionController(http, **options)
        task = asyncio.create_task(controller.run())
        try:
            yield http, controller
        finally:
            await cancel_and_wait([task])
            await http.aclose()


async def _pod_with_claim(http: Any, name: str, tolerations: list[dict[str, Any]] | None = None) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}],
        },
    }
    made = await http.post(f"{NS}/pods", json=pod)
    assert made.status_code == 201, made.text
    exactly: dict[str, Any] = {"deviceClassName": "gpus"}
    if tolerations:
        exactly["tolerations"] = tolerations
    request = {"name": "gpu", "exactly": exactly}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{name}-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }
    created = await http.post(f"{RES}/resourceclaims", json=claim)
    assert created.status_code == 201, created.text
    body = created.json()
    result: dict[str, Any] = {"request": "gpu", "driver": GPU[0], "pool": GPU[1], "device": GPU[2]}
    if tolerations:
        result["tolerations"] = tolerations
    body["status"] = {
        "allocation": {"devices": {"results": [result]}},
        "reservedFor": [{"resource": "pods", "name": name, "uid": made.json()["metadata"]["uid"]}],
    }
    written = await http.put(f"{RES}/resourceclaims/{name}-gpu/status", json=body)
    assert written.status_code == 200, written.text
    running = {"status": {"phase": "Running"}}
    (await http.patch(f"{NS}/pods/{name}/status", json=running, headers=MERGE)).raise_for_status()


async def test_a_no_execute_taint_rule_evicts_the_pods_using_the_device(tmp_path: Path) -> None:
    async with _controller(tmp_path) as (http, controller):
        await _gpus(http)
        tolerate = [{"key": "example.com/down", "operator": "Exists"}]
        await _pod_with_claim(http, "trainer")
        await _pod_with_claim(http, "tolerant", tolerate)
        await asyncio.sleep(1.5)  # no taint yet: nothing happens
        assert (await http.get(f"{NS}/pods/trainer")).json()["metadata"].get("deletionTimestamp") is None
        await _rule(http, "gpu-0-down", "NoExecute")
        pod = await _evicted(http, "trainer")
        if pod.get("status"):
            (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
            assert condition["reason"] == "DeletionByDeviceTaintManager"
        tolerant = (await http.get(f"{NS}/pods/tolerant")).json()
        assert tolerant["metadata"].get("deletionTimestamp") is None
        assert controller.evicted == 1


async def _evicted(http: Any, name: str) -> dict[str, Any]:
    """The pod once it is being deleted (or gone)."""

    async def deleted() -> Any:
        pod = (await http.get(f"{NS}/pods/{name}")).json()
        return pod if pod["metadata"].get("deletionTimestamp") or pod.get("code") == 404 else None

    found: dict[str, Any] = await _wait(deleted, timeout=20)
    return found


RULES = "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
DRY_RUN = (
    "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect "
    "was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
)


async def _gpus(http: Any) -> None:
    devices = [{"name": "gpu-0"}, {"name": "gpu-1"}]
    spec = {"driver": GPU[0], "nodeName": "node-1", "pool": {"name": GPU[1], "resourceSliceCount": 1}}
    body = {"metadata": {"name": "node-1-gpus"}, "spec": {**spec, "devices": devices}}
    (await http.post("/apis/resource.k8s.io/v1/resourceslices", json=body)).raise_for_status()


async def _rule(http: Any, name: str, effect: str, added: str | None = None) -> None:
    taint = {"key": "example.com/down", "effect": effect, **({"timeAdded": added} if added else {})}
    rule = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": {"driver": GPU[0], "pool": GPU[1], "device": GPU[2]}, "taint": taint},
    }
    (await http.post(RULES, json=rule)).raise_for_status()


async def _condition(
    http: Any, rule: str, reason: str, timeout: float = 10.0, seen: list[str] | None = None
) -> dict[str, Any]:
    """The rule's `EvictionInProgress` condition once it has `reason`; `seen` gets every reason polled on the way."""

    async def written() -> Any:
        conditions = (await http.get(f"{RULES}/{rule}")).json().get("status", {}).get("conditions") or []
        found = next((c for c in conditions if c["type"] == "EvictionInProgress"), None)
        if found is not None and seen is not None and (not seen or seen[-1] != found["reason"]):
            seen.append(found["reason"])
        return found if found is not None and found["reason"] == reason else None

    found: dict[str, Any] = await _wait(written, timeout=timeout)
    return found


async def test_a_none_rule_reports_what_no_execute_would_evict_and_evicts_nothing(tmp_path: Path) -> None:
    async with _controller(tmp_path) as (http, controller):
        await _gpus(http)
        await _pod_with_claim(http, "trainer")
        await _rule(http, "gpu-0-dry-run", "None")
        await _rule(http, "gpu-0-no-schedule", "NoSchedule")
        condition = await _condition(http, "gpu-0-dry-run", "NoEffect")
        assert (condition["status"], condition["message"], condition["observedGeneration"]) == (
            "False",
            DRY_RUN,
            1,
        )
        other = await _condition(http, "gpu-0-no-schedule", "OtherEffect")
        assert other["message"] == "Eviction only happens for the NoExecute effect."
        await asyncio.sleep(2.5)  # a dry run: the pod stays
        pod = (await http.get(f"{NS}/pods/trainer")).json()
        assert pod["metadata"].get("deletionTimestamp") is None
        assert controller.evicted == 0


async def test_a_no_execute_rule_reports_pods_pending_eviction_then_the_evicted_count(tmp_path: Path) -> None:
    async with _controller(tmp_path, rule_status_period=1.0) as (http, controller):
        await _gpus(http)
        patient = [{"key": "example.com/down", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 8}]
        await _rule(http, "gpu-0-down", "NoExecute")
        idle = await _condition(http, "gpu-0-down", "NotStarted")  # no pod uses gpu-0 yet
        assert (idle["status"], idle["message"]) == ("False", "")
        await _pod_with_claim(http, "trainer", patient)  # evicted 8 s after the rule's timeAdded
        pending = await _condition(http, "gpu-0-down", "PodsPendingEviction")
        assert (pending["status"], pending["message"]) == ("True", "1 pod needs to be evicted in 1 namespace.")
        assert (await http.get(f"{NS}/pods/trainer")).json()["metadata"].get("deletionTimestamp") is None
        done = await _condition(http, "gpu-0-down", "Completed", timeout=20)
        assert (done["status"], done["message"]) == ("False", "1 pod evicted since starting the controller.")
        assert controller.evicted == 1


async def test_a_rule_that_evicts_at_once_ends_completed_with_the_evicted_count(tmp_path: Path) -> None:
    """The pod is deleted in the check that first sees the rule, before the pods' informer sees the deletion: the
    condition must not stay at `PodsPendingEviction` (`kubectl wait --for=condition=EvictionInProgress=false`)."""
    async with _controller(tmp_path, rule_status_period=1.0) as (http, _):
        await _gpus(http)
        await _pod_with_claim(http, "trainer")
        await _rule(http, "gpu-0-down", "NoExecute")
        reasons: list[str] = []
        done = await _condition(http, "gpu-0-down", "Completed", timeout=20, seen=reasons)
        assert (done["status"], done["message"]) == ("False", "1 pod evicted since starting the controller.")
        assert reasons == ["Completed"]  # never a deleted pod counted as pending
        await asyncio.sleep(2.5)  # and it stays so
        (condition,) = (await http.get(f"{RULES}/gpu-0-down")).json()["status"]["conditions"]
        assert condition == done


async def test_a_changed_effect_shows_in_the_condition_even_without_pods(tmp_path: Path) -> None:
    """Not upstream, which looks again only for pods: a new generation makes the status due."""
    async with _controller(tmp_path) as (http, _):
        await _gpus(http)
        await _rule(http, "gpu-0-dry-run", "None")
        dry = await _condition(http, "gpu-0-dry-run", "NoEffect")
        assert dry["message"].startswith("1 published device selected. 0 allocated devices selected. 0 pods ")
        rule = (await http.get(f"{RULES}/gpu-0-dry-run")).json()
        rule["spec"]["taint"]["effect"] = "NoSchedule"
        (await http.put(f"{RULES}/gpu-0-dry-run", json=rule)).raise_for_status()
        other = await _condition(http, "gpu-0-dry-run", "OtherEffect")  # at once, not after the 10 s period
        assert other["observedGeneration"] == 2


async def test_tolerations_count_from_the_taints_time_added_not_from_when_the_controller_saw_it(tmp_path: Path) -> None:
    """A rule added 100 s ago (as a controller started again finds it): a pod tolerating it for 60 s is deleted at once,
    one tolerating it for an hour stays."""
    added = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=100)).strftime("%Y-%m-%dT%H:%M:%SZ")
    async with _controller(tmp_path) as (http, controller):
        await _gpus(http)
        await _rule(http, "gpu-0-down", "NoExecute", added)
        toleration = {"key": "example.com/down", "operator": "Exists", "effect": "NoExecute"}
        await _pod_with_claim(http, "minute", [{**toleration, "tolerationSeconds": 60}])
        await _pod_with_claim(http, "hour", [{**toleration, "tolerationSeconds": 3600}])
        await _evicted(http, "minute")
        assert (await http.get(f"{NS}/pods/hour")).json()["metadata"].get("deletionTimestamp") is None
        assert controller.evicted == 1
