"""In-place resize (KEP-1287): what the scheduler counts of a pod whose spec changed before its kubelet accepted it
(`resourcehelper.PodRequests` with `UseStatusResources`), and what the kubelet's admission sees of it
(`UpdatePodFromAllocation`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from knuma.api.nrt import Policy, Scope, TopologyManagerConfig
from knuma.api.pod import Pod
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.plugins.node_resources_fit import non_zero_request
from knuma.topology import NodeTopology, NUMAZone, admit

Gi = 1024**3


def _guaranteed(cpu: str, memory: str = "2Gi") -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory}
    return {"requests": amounts, "limits": amounts}


def _status(
    allocated: dict[str, dict[str, str]] | None = None,
    actuated: dict[str, dict[str, str]] | None = None,
    pending: str = "",
) -> dict[str, Any]:
    names = {*(allocated or {}), *(actuated or {})}
    statuses = []
    for name in sorted(names):
        entry: dict[str, Any] = {"name": name, "ready": True, "state": {"running": {}}}
        if allocated and name in allocated:
            entry["allocatedResources"] = allocated[name]
        if actuated and name in actuated:
            entry["resources"] = {"requests": actuated[name], "limits": actuated[name]}
        statuses.append(entry)
    status: dict[str, Any] = {"phase": "Running", "startTime": "2026-11-29T00:00:00Z", "containerStatuses": statuses}
    if pending:
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": pending}]
    return status


def _pod(cpu: str, status: dict[str, Any] | None = None, node: str = "") -> Pod:
    return Pod.from_manifest(_manifest(cpu, status, node))


def _manifest(cpu: str, status: dict[str, Any] | None = None, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "x", "resources": _guaranteed(cpu)}]}
    if node:
        spec["nodeName"] = node
    manifest: dict[str, Any] = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    if status is not None:
        manifest["status"] = status
    return manifest


def test_a_pod_the_kubelet_has_not_reported_on_counts_its_spec() -> None:
    pod = _pod("4", {"phase": "Pending"})
    assert not pod.resizing
    assert pod.effective_request == {"cpu": 4000, "memory": 2 * Gi}
    assert pod.as_allocated is pod


def test_a_pod_running_as_specified_counts_its_spec_and_keys_as_one_without_status() -> None:
    """What a 1.33+ kubelet reports for nearly every pod (allocated and applied = spec, `1000m` written `1`) is no
    resize: the same request and admission key as the pod without status, and the cluster cache keeps the node."""
    reported = _pod("1", _status(allocated={"app": {"cpu": "1000m", "memory": "2Gi"}}, actuated={"app": {"cpu": "1"}}))
    plain = _pod("1")
    assert not reported.resizing and reported.resize_state == ()
    assert reported.effective_request == plain.effective_request and reported.admission_key == plain.admission_key


def test_a_pending_resize_counts_the_larger_of_spec_and_allocation() -> None:
    """Down from 6 to 2 CPUs, not yet accepted: the node still holds 6 for it. Up from 2 to 6: 6 is reserved at
    once, so nothing else is placed into room the resize is about to take."""
    shrinking = _pod("2", _status(allocated={"app": {"cpu": "6", "memory": "2Gi"}}))
    assert shrinking.effective_request["cpu"] == 6000
    growing = _pod("6", _status(allocated={"app": {"cpu": "2", "memory": "2Gi"}}))
    assert growing.effective_request["cpu"] == 6000


def test_an_infeasible_resize_counts_what_the_kubelet_holds_not_the_spec() -> None:
    """`IsPodResizeInfeasible`: the spec is left out. Up from 4 to 8 refused (a Guaranteed pod under the static CPU
    manager): the node holds 4, and a pod that fits beside 4 must not be kept out by the 8 the spec says."""
    refused = _pod("8", _status(allocated={"app": {"cpu": "4", "memory": "2Gi"}}, pending="Infeasible"))
    assert refused.resize_infeasible
    assert refused.effective_request == {"cpu": 4000, "memory": 2 * Gi}
    deferred = _pod("8", _status(allocated={"app": {"cpu": "4", "memory": "2Gi"}}, pending="Deferred"))
    assert not deferred.resize_infeasible and deferred.effective_request["cpu"] == 8000


def test_actuated_resources_count_until_the_runtime_applied_the_new_allocation() -> None:
    """Accepted down to 2 (allocated 2) while the runtime still applies 6 (`resources`): 6 counts."""
    pod = _pod("2", _status(allocated={"app": {"cpu": "2", "memory": "2Gi"}}, actuated={"app": {"cpu": "6"}}))
    assert pod.effective_request["cpu"] == 6000
    infeasible = _pod(
        "8",
        _status(allocated={"app": {"cpu": "4", "memory": "2Gi"}}, actuated={"app": {"cpu": "4"}}, pending="Infeasible"),
    )
    assert infeasible.effective_request["cpu"] == 4000


def test_each_source_is_aggregated_with_init_containers_before_the_maximum() -> None:
    """`max(spec, actuated, allocated)` of aggregates, not of containers: an init container of 5 CPUs and an app
    container resized from 3 (allocated) to 1 (spec): spec aggregate max(1, 5) = 5, allocated max(3, 5) = 5."""
    manifest = _manifest("1", _status(allocated={"app": {"cpu": "3", "memory": "2Gi"}}))
    manifest["spec"]["initContainers"] = [{"name": "init", "image": "x", "resources": _guaranteed("5")}]
    assert Pod.from_manifest(manifest).effective_request["cpu"] == 5000
    manifest["spec"]["initContainers"][0]["resources"] = _guaranteed("2")
    assert Pod.from_manifest(manifest).effective_request["cpu"] == 3000


def test_scoring_defaults_apply_to_every_source() -> None:
    """`NonMissingContainerRequests` rewrites each container's list of each source: an infeasible resize of a pod
    whose status has no cpu still scores the default 100m, and its memory is the allocated one."""
    manifest = _manifest("1", _status(allocated={"app": {"memory": "3Gi"}}, pending="Infeasible"))
    manifest["spec"]["containers"][0]["resources"] = {"requests": {"memory": "1Gi"}}
    assert non_zero_request(Pod.from_manifest(manifest)) == {"cpu": 100, "memory": 3 * Gi}


def test_status_entries_are_read_leniently() -> None:
    status = _status(allocated={"app": {"cpu": "lots"}})
    pod = _pod("2", status)
    assert pod.allocated == {} and pod.effective_request["cpu"] == 2000


def test_the_kubelet_admits_and_aligns_a_running_pod_by_its_allocation() -> None:
    """A Guaranteed pod of 6 CPUs whose spec was cut to 2 (infeasible under the static CPU manager) still holds 6
    exclusive CPUs: replayed on a node of two 4-CPU zones, it is rejected as it would have been at 6, and two pods
    with equal specs but other allocations are not the same admission question."""
    zones = tuple(NUMAZone(i, {"cpu": 4000, "memory": 8 * Gi}, {"cpu": 4000, "memory": 8 * Gi}, {}) for i in (0, 1))
    ready = tuple(replace(z, available=dict(z.allocatable)) for z in zones)
    node = NodeTopology("n", ready, TopologyManagerConfig(Policy.SINGLE_NUMA_NODE, Scope.CONTAINER))
    resized = _pod("2", _status(allocated={"app": {"cpu": "6", "memory": "2Gi"}}, pending="Infeasible"))
    plain = _pod("2")
    assert admit(plain, node).admitted
    verdict = admit(resized, node)
    assert not verdict.admitted and verdict.reason == "TopologyAffinityError"
    assert resized.admission_key != plain.admission_key
    assert resized.as_allocated.containers[0].requests["cpu"] == 6000


def test_the_scheduler_cache_counts_a_resize_the_kubelet_reports() -> None:
    """The cluster cache rebuilds a node when only the status of a pod on it changed (allocation reported,
    resize found infeasible): the node's requested cpu follows."""
    cache = ClusterCache()
    cache.upsert_node(
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    )
    cache.upsert_pod(_manifest("2", _status(allocated={"app": {"cpu": "2", "memory": "2Gi"}}), node="n"))
    info = cache.node_info("n")
    assert info is not None and info.requested["cpu"] == 2000
    cache.take_dirty()
    grown = _manifest("6", _status(allocated={"app": {"cpu": "2", "memory": "2Gi"}}), node="n")
    cache.upsert_pod(grown)
    assert cache.take_dirty()[0] == {"n"}
    info = cache.node_info("n")
    assert info is not None and info.requested["cpu"] == 6000
    refused = _manifest("6", _status(allocated={"app": {"cpu": "2", "memory": "2Gi"}}, pending="Infeasible"), node="n")
    cache.upsert_pod(refused)
    assert cache.take_dirty()[0] == {"n"}
    info = cache.node_info("n")
    assert info is not None and info.requested["cpu"] == 2000
