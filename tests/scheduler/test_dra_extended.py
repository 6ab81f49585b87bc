"""Extended resources backed by DRA (KEP-5004), the pure part: which DeviceClass serves a resource name, the device
requests and container mappings of the claim kube-scheduler creates (`createRequestsAndMappings`, cases of upstream's
`Test_createRequestsAndMappings_requests`), and the per-node split of `filterExtendedResources`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from knuma.api.dra.fields import FieldErrors
from knuma.api.dra.resourceclaim import AllocationResult
from knuma.api.pod import Pod
from knuma.scheduler.cache.reservation import apply_pod
from knuma.scheduler.config.load import build_nrt_cache, build_profiles, default_config
from knuma.scheduler.explain import explain
from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.interface import CycleState, NodeInfo, Profile, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_extended import (
    ExtendedResourceMap,
    NodeSplit,
    dra_requests,
    extended_claim,
    requests_and_mappings,
    split_for_node,
)
from knuma.scheduler.plugins.dynamic_resources import DynamicResources
from knuma.scheduler.plugins.node_resources_fit import NodeResourcesFit
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stable_under_release import StableUnderRelease
from knuma.scheduler.plugins.stranding import CPUDemand
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType
from knuma.scheduler.sequential import SequentialScheduler
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.topology.kubelet import admit, pinned_request
from knuma.topology.node import NodeTopology
from tests.scheduler.builders import device_state, guaranteed, node_info, nrt, pod

GI = 1 << 30
ER = "example.com/gpu"
INIT = "example.com/gpuinit"


def _container(name: str, requests: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "image": "x",
        "resources": {"requests": dict(requests), "limits": dict(requests)},
        **({"restartPolicy": "Always"} if sidecar else {}),
    }


def _pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": containers, **({"initContainers": init} if init else {})}
    return Pod.from_manifest({"metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}, "spec": spec})


def _map(**classes: str) -> ExtendedResourceMap:
    mapping = ExtendedResourceMap()
    for name, resource in classes.items():
        mapping.set_class(name, resource, "2026-11-29T10:00:00Z")
    return mapping


def _requests(pod: Pod, resources: list[str], mapping: ExtendedResourceMap) -> list[tuple[str, str, int]]:
    requests, _ = requests_and_mappings(pod, resources, mapping)
    return [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]


def test_every_class_has_its_implicit_name_and_the_newest_wins_an_explicit_one() -> None:
    mapping = ExtendedResourceMap()
    mapping.set_class("old", ER, "2026-11-01T00:00:00Z")
    mapping.set_class("new", ER, "2026-11-02T00:00:00Z")
    mapping.set_class("plain", "", "2026-11-03T00:00:00Z")
    assert mapping.class_for(ER) == "new"
    assert mapping.class_for("deviceclass.resource.kubernetes.io/plain") == "plain"
    assert mapping.class_for("deviceclass.resource.kubernetes.io/old") == "old"
    assert mapping.class_for("example.com/other") is None
    mapping.set_class("b-twin", ER, "2026-11-02T00:00:00Z")
    mapping.set_class("a-twin", ER, "2026-11-02T00:00:00Z")
    assert mapping.class_for(ER) == "a-twin"  # same age: the lower name
    version = mapping.version
    for name in ("a-twin", "b-twin", "new"):
        mapping.delete_class(name)
    assert mapping.class_for(ER) == "old"  # the next candidate is promoted
    mapping.delete_class("old")
    assert not mapping.maps(ER) and mapping.version > version


def test_one_container_two_resources_and_two_containers() -> None:
    mapping = _map(**{"class": ER, "class1": ER + "1"})
    one = _pod([_container("con0", {ER: "1", ER + "1": "2"})])
    assert _requests(one, [ER, ER + "1"], mapping) == [
        ("container-0-request-0", "class", 1),
        ("container-0-request-1", "class1", 2),
    ]
    assert _requests(one, [ER], mapping) == [("container-0-request-0", "class", 1)]
    two = _pod([_container("con0", {ER: "1"}), _container("con1", {ER + "1": "2"})])
    assert _requests(two, [ER, ER + "1"], mapping) == [
        ("container-0-request-0", "class", 1),
        ("container-1-request-0", "class1", 2),
    ]


def test_init_containers_share_the_largest_request() -> None:
    """Upstream's "two init containers, one regular container": the two init containers' requests collapse into the
    larger one, which both map to."""
    mapping = _map(**{"class": ER, "classInit": INIT})
    pod = _pod(
        [_container("con0", {ER: "1"})], [_container("init-con0", {INIT: "1"}), _container("init-con1", {INIT: "2"})]
    )
    assert _requests(pod, [ER, INIT], mapping) == [
        ("container-1-request-0", "classInit", 2),
        ("container-2-request-0", "class", 1),
    ]
    _, mappings = requests_and_mappings(pod, [ER, INIT], mapping)
    assert {(m["containerName"], m["requestName"]) for m in mappings} == {
        ("con0", "container-2-request-0"),
        ("init-con0", "container-1-request-0"),
        ("init-con1", "container-1-request-0"),
    }


def test_an_init_container_reuses_a_later_sidecars_request() -> None:
    """Upstream's "three init containers, one sidecar, one regular container"."""
    mapping = _map(**{"class": ER, "classInit": INIT})
    pod = _pod(
        [_container("con0", {ER: "1"})],
        [
            _container("init-con0", {INIT: "1"}),
            _container("sidecar-con1", {INIT: "1"}, sidecar=True),
            _container("init-con2", {INIT: "2"}),
        ],
    )
    assert _requests(pod, [ER, INIT], mapping) == [
        ("container-1-request-0", "classInit", 1),
        ("container-2-request-0", "classInit", 2),
        ("container-3-request-0", "class", 1),
    ]
    _, mappings = requests_and_mappings(pod, [ER, INIT], mapping)
    assert {"containerName": "init-con0", "resourceName": INIT, "requestName": "container-1-request-0"} in mappings


def test_the_node_decides_what_dra_provides() -> None:
    mapping = _map(nics="example.com/nic")
    pod = _pod([_container("c", {"cpu": "2", "example.com/nic": "1", "example.com/fpga": "1"})])
    wanted = dra_requests(pod, mapping)
    assert wanted == {"example.com/nic": 1, "example.com/fpga": 1}
    assert split_for_node(wanted, mapping, {"cpu": 8000, "example.com/fpga": 2}) == NodeSplit(("example.com/nic",))
    # a device plugin serves both here: DRA plays no part
    assert split_for_node(wanted, mapping, {"example.com/nic": 4, "example.com/fpga": 2}) == NodeSplit()
    # the FPGA neither the node nor a class provides
    assert split_for_node(wanted, mapping, {"cpu": 8000}).unfit == "example.com/fpga"
    # a device plugin that has no NIC left (allocatable 0, kubernetes#133784): DRA provides them; an FPGA plugin
    # with none passes here and NodeResourcesFit finds it insufficient
    zero = {"example.com/nic": 0, "example.com/fpga": 0}
    assert split_for_node(wanted, mapping, zero) == NodeSplit(("example.com/nic",))
    assert dra_requests(_pod([_container("c", {"example.com/fpga": "1"})]), mapping) == {}  # nothing mapped


def test_the_claim_is_owned_by_the_pod_and_annotated() -> None:
    mapping = _map(nics="example.com/nic")
    pod = _pod([_container("c", {"example.com/nic": "2"})])
    claim = extended_claim(pod, ("example.com/nic",), mapping)
    metadata = claim.manifest["metadata"]
    assert metadata["generateName"] == "p-extended-resources-"
    assert metadata["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert metadata["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1", "controller": True}
    ]
    assert claim.key == "ns/<extended-resources of p>"
    assert [r.name for r in claim.claim.spec.requests] == ["container-0-request-0"]
    assert claim.mappings == (
        {"containerName": "c", "resourceName": "example.com/nic", "requestName": "container-0-request-0"},
    )


def test_the_allocation_in_flight_follows_the_claim_to_its_name() -> None:
    """Reserve holds the extended resource claim's devices under its in-memory key; once PreBind has created the
    claim (`DeviceState.created`), the informer's copy with the allocation ends the hold, and deleting the claim
    frees the devices, while the pod itself is still there (a completed pod)."""
    state = DeviceState()
    pod = _pod([_container("c", {"example.com/nic": "1"})])
    allocation = {"devices": {"results": [{"request": "r", "driver": "nic", "pool": "n1", "device": "nic-0"}]}}
    parsed = AllocationResult.from_dict(allocation, "status.allocation", FieldErrors())
    state.reserve(pod, {"ns/<extended-resources of p>": parsed})
    assert state.inventory().in_use == {("nic", "n1", "nic-0")}
    state.created("ns/<extended-resources of p>", "ns/p-extended-resources-x1")
    assert set(state.in_flight) == {"ns/p-extended-resources-x1"}
    claim = {
        "metadata": {
            "name": "p-extended-resources-x1",
            "namespace": "ns",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "u-1", "controller": True}],
        },
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nics"}}]}},
        "status": {"allocation": allocation},
    }
    state.set_claim(claim)
    assert not state.in_flight and state.extended_claims == {"u-1": "ns/p-extended-resources-x1"}
    assert state.inventory().in_use == {("nic", "n1", "nic-0")}
    state.delete_claim(claim)
    assert not state.inventory().in_use and not state.extended_claims


def test_a_node_whose_device_plugin_serves_the_resources_gets_no_extended_claim() -> None:
    """`filterExtendedResources` per node, in DynamicResources: where DRA serves the NIC the pod's own claim gets the
    extended resource claim beside it; where a device plugin serves it there is none (an empty claim would be
    created with no request and no mapping, which kube-apiserver refuses to record in the pod's status), and a pod
    without claims of its own has nothing to allocate there."""
    state = DeviceState()
    state.set_class(
        {
            "metadata": {"name": "nics", "creationTimestamp": "2026-11-29T10:00:00Z"},
            "spec": {"extendedResourceName": "example.com/nic"},
        }
    )
    state.set_claim(
        {
            "metadata": {"name": "gpu", "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "nics"}}]}},
        }
    )
    plugin = DynamicResources(state)
    nic = _container("c", {"cpu": "1", "example.com/nic": "1"})
    spec = {"containers": [nic], "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}
    with_claim = Pod.from_manifest({"metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}, "spec": spec})
    alone = _pod([nic])
    dra, plugin_node = NodeInfo("dra", {"cpu": 8000}), NodeInfo("dp", {"cpu": 8000, "example.com/nic": 2})
    served = plugin.node_claims(CycleState(), with_claim, dra)
    assert served.extended is not None and [c.key for c in served.claims] == ["ns/gpu", served.extended.key]
    assert served.extended.resources == ("example.com/nic",)
    device_plugin = plugin.node_claims(CycleState(), with_claim, plugin_node)
    assert device_plugin.extended is None and [c.key for c in device_plugin.claims] == ["ns/gpu"]
    nothing = plugin.node_claims(CycleState(), alone, plugin_node)
    assert (nothing.claims, nothing.extended, nothing.unfit) == ((), None, "")
    assert plugin.filter(CycleState(), alone, plugin_node).ok


# -- a node mid-migration from a device plugin to DRA: its NRT zones still list the resource ----------------------

NIC = "example.com/nic"
STRATEGIES = [ScoringStrategy(t) for t in StrategyType]


def _nic_pod(name: str = "p", cpus: str = "4", nics: str = "1") -> Pod:
    return pod(guaranteed("app", cpus, "8Gi", limits={NIC: nics}), name=name)


def _nic_node(name: str, nics: tuple[tuple[str, str], ...] | None, allocatable_nics: int | None) -> NodeInfo:
    """Two zones of 16 CPUs; `nics`: each zone's (allocatable, available) NICs in the NRT, None: not listed;
    `allocatable_nics`: the Node object's allocatable, None: not listed."""
    zones: dict[int, dict[str, tuple[str, str] | str]] = {}
    for z in (0, 1):
        zones[z] = {"cpu": "16", "memory": "64Gi", **({NIC: nics[z]} if nics is not None else {})}
    info = node_info(nrt(name, zones))
    allocatable = {k: v for k, v in info.allocatable.items() if k != NIC}
    allocatable["pods"] = 110
    if allocatable_nics is not None:
        allocatable[NIC] = allocatable_nics
    return replace(info, allocatable=allocatable, manifest={"kind": "Node", "metadata": {"name": name}})


def _profile(scoring: ScoringStrategy, mapping: ExtendedResourceMap) -> Profile:
    profile = default_profile(scoring)
    for plugin in profile.filters:
        if isinstance(plugin, NodeResourcesFit | NodeResourceTopologyMatch):
            plugin.extended = mapping
    return profile


def test_stale_zones_do_not_hold_a_resource_dra_serves() -> None:
    """The NRT zones still list `example.com/nic` (the exporter has not caught up), the Node's allocatable has none:
    a DeviceClass serves it there (KEP-5004), and the kubelet does not count it against the zones: its admission
    drops requests that the pod's extended resource claim maps (`removeMissingExtendedResources`), and the device
    manager aligns and allocates only device-plugin resources (`isDevicePluginResource`, false once the plugin is
    gone). So the node admits the pod where a node whose zones never listed the NIC does, the pod's CPUs go where
    they would there, and its score is the same."""
    mapping = _map(nics=NIC)
    numa = NodeResourceTopologyMatch(extended=mapping)
    stale = _nic_node("stale", (("2", "0"), ("2", "0")), 0)
    clean = _nic_node("clean", None, None)
    p = _nic_pod()
    assert numa.filter(CycleState(), p, clean).ok
    assert numa.filter(CycleState(), p, stale).ok
    assert not NodeResourceTopologyMatch().filter(CycleState(), p, stale).ok  # without DRA: the zones have none
    # half the zone's CPUs taken on NUMA 0: where the NICs are still listed free, a NIC would pull the pod to NUMA 1
    listed = _nic_node("listed", (("2", "0"), ("2", "2")), 0)
    state = CycleState()
    assert numa.filter(state, p, listed).ok
    placement = numa.admission(state, "listed")
    assert placement is not None and placement.placement("app") is not None
    assert placement.placement("app").numa_ids == (0,)  # type: ignore[union-attr]
    assert placement.node.zones[1].available[NIC] == 2  # nothing taken from the stale zones
    free = _nic_node("free", (("2", "2"), ("2", "2")), 0)  # the zones' stale NICs would raise its score
    for scoring in STRATEGIES:
        scorer = NodeResourceTopologyMatch(scoring, extended=mapping)
        for node in (listed, free):
            assert scorer.score(CycleState(), p, node) == scorer.score(CycleState(), p, replace(clean, name=node.name))


@pytest.mark.parametrize("scoring", STRATEGIES, ids=lambda s: s.type.value)
def test_the_fast_path_agrees_where_stale_zones_list_a_resource_dra_serves(scoring: ScoringStrategy) -> None:
    """Both paths on nodes mid-migration (zones listing the NIC, none or some free, allocatable 0), a DRA node,
    and a device-plugin node; then again after each placement (Reserve as each path predicts the kubelet)."""
    mapping = _map(nics=NIC)
    nodes = [
        _nic_node("stale-none", (("2", "0"), ("2", "0")), 0),
        _nic_node("stale-one", (("2", "0"), ("2", "1")), 0),
        _nic_node("stale-free", (("2", "2"), ("2", "2")), 0),
        _nic_node("dra", None, None),
        _nic_node("plugin", (("2", "2"), ("2", "2")), 4),
    ]
    pods = [_nic_pod(f"p{i}", cpus) for i, cpus in enumerate(["4", "8", "2", "12", "6", "4", "16", "1"])]
    fast = VectorizedScheduler(nodes, scoring, fit=NodeResourcesFit(extended=mapping))
    exact = SequentialScheduler(nodes, scoring)
    exact.profile = _profile(scoring, mapping)
    for p in pods:
        feasible, scores = fast.filter_and_score(p)
        result = schedule_one(exact.profile, p, exact.nodes, explain=False)
        assert feasible.tolist() == [r.filter.ok for r in result.nodes], p.name
        assert scores.tolist() == [r.score or 0 for r in result.nodes], p.name
        picked, reference = fast.schedule(p), exact.schedule(p)
        assert (picked.node, picked.score) == (reference.node, reference.score), p.name
    assert {info.name: info.topology for info in fast._infos} == {n.name: n.topology for n in exact.nodes}


# -- DynamicResources' score: DRA nodes against device-plugin nodes ------------------------------------------------


def _nic_state(*dra_nodes: str) -> DeviceState:
    """The dgx shape's slices on `dra_nodes` (4 NICs per NUMA node, each with its NUMA node and PCIe root), and a
    class `nics` serving `example.com/nic` with them."""
    state = device_state(BUILTIN_SHAPES["dgx"], dra_nodes)
    state.set_class(
        {
            "metadata": {"name": "nics", "creationTimestamp": "2026-11-29T10:00:00Z"},
            "spec": {
                "selectors": [{"cel": {"expression": "device.driver == 'nic.sim.knuma.io'"}}],
                "extendedResourceName": NIC,
            },
        }
    )
    return state


def _dgx_node(name: str, nics: tuple[tuple[str, str], ...] | None, policy: str = "single-numa-node") -> NodeInfo:
    """A dgx node's NRT (55 free CPUs per NUMA node); `nics`: a device plugin's NICs per zone, beside its 4 GPUs
    (as many devices per NUMA node as the DRA node has), None: DRA's."""
    zones: dict[int, dict[str, tuple[str, str] | str]] = {}
    for z in (0, 1):
        plugins: dict[str, tuple[str, str] | str] = {NIC: nics[z], "example.com/gpu": "4"} if nics is not None else {}
        zones[z] = {"cpu": "55", "memory": "1020Gi", **plugins}
    info = node_info(nrt(name, zones, policy=policy))
    allocatable = {**info.allocatable, "pods": 110}
    if nics is not None:
        allocatable[NIC] = sum(int(a) for a, _ in nics)
    return replace(info, allocatable=allocatable, manifest={"kind": "Node", "metadata": {"name": name}})


def _cpus_free(node: NodeInfo, free: dict[int, int]) -> NodeTopology:
    assert node.topology is not None
    available = {z.id: {**z.available, "cpu": free[z.id] * 1000} for z in node.topology.zones}
    return node.topology.with_available(available)


def test_a_device_plugin_node_that_aligns_the_device_scores_as_a_dra_node_does() -> None:
    """A pod asking `example.com/nic: 1` gets its NIC from DRA on one node and from a device plugin on the other.
    Upstream's DynamicResources scores neither (its Score counts only which `firstAvailable` subrequest was taken,
    `computeScore`; an `exactly` request adds nothing). knuma's locality ladder is meant to rank DRA placements; it
    must not prefer a DRA node over a device-plugin node whose NIC the kubelet's Topology Manager aligns with the
    pod's CPUs just as well (the device manager's hints, `GetTopologyHints`): both score the NUMA node's rung and how
    full they leave the NUMA node's NICs. A device plugin whose devices carry no NUMA node (the zones do not list
    them: no topology hints) scores the node's rung, as DRA devices without NUMA information would."""
    state = _nic_state("dra")
    plugin = DynamicResources(state)
    p = _nic_pod(cpus="8")
    dra = _dgx_node("dra", None)
    aligned = _dgx_node("dp", (("4", "4"), ("4", "4")))
    half_full = _dgx_node("dp", (("4", "2"), ("4", "4")))  # NUMA 0's NICs half in use: the pod fills it up
    unknown = replace(_dgx_node("dp", None), allocatable={**aligned.allocatable})
    on_dra = plugin.score(CycleState(), p, dra)
    assert on_dra > 0
    assert plugin.score(CycleState(), p, aligned) == on_dra
    assert plugin.score(CycleState(), p, half_full) > on_dra  # packs the partly used NUMA node, as for DRA devices
    assert 0 < plugin.score(CycleState(), p, unknown) < on_dra
    # best-effort, the CPUs fit only on NUMA 0 and the free NICs are on NUMA 1: admitted apart, the node's rung
    apart = _dgx_node("dp", (("4", "0"), ("4", "4")), policy="best-effort")
    apart = replace(apart, topology=_cpus_free(apart, {0: 55, 1: 4}))
    assert plugin.score(CycleState(), p, apart) == (3 * 25 + 100 * 1 // 8) // 4  # packing: NUMA 1's 8 devices
    # the `none` policy aligns nothing: the node's rung
    unaligned = _dgx_node("dp", (("4", "4"), ("4", "4")), policy="none")
    assert 0 < plugin.score(CycleState(), p, unaligned) < plugin.score(CycleState(), p, aligned)
    # two NICs on one NUMA node, on two PCIe roots for DRA: the NUMA node's rung on both
    two = _nic_pod(cpus="8", nics="2")
    assert plugin.score(CycleState(), two, aligned) == plugin.score(CycleState(), two, dra) < on_dra


def test_a_bound_pod_whose_extended_resource_claim_maps_a_resource_is_admitted_without_it() -> None:
    """The cache predicts a bound pod's zones with the kubelet model (`reservation.apply_pod`); the pod's
    `status.extendedResourceClaimStatus` says which containers' resources DRA backs, and the kubelet leaves those
    requests out (`removeMissingExtendedResources`' `isResourceBackedByDRA`, per container and resource): zones
    that still list the NIC neither refuse it (which made the cache take its CPUs from every zone) nor give it one.
    The daemon's assumed pod carries the mappings its PreBind writes (`Pod.dra_backed`)."""
    manifest = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [guaranteed("app", "4", "8Gi", limits={NIC: "1"})]},
        "status": {
            "extendedResourceClaimStatus": {
                "resourceClaimName": "p-extended-resources-x1",
                "requestMappings": [
                    {"containerName": "app", "resourceName": NIC, "requestName": "container-0-request-1"}
                ],
            }
        },
    }
    bound = Pod.from_manifest(manifest)
    assert bound.dra_backed == frozenset({("app", NIC)})
    stale = _nic_node("stale", (("2", "0"), ("2", "0")), 0).topology
    assert stale is not None
    after = apply_pod(bound, stale)
    assert [z.available["cpu"] for z in after.zones] == [12000, 16000]  # NUMA 0 only, not every zone
    assert [z.available[NIC] for z in after.zones] == [0, 0]
    plain = replace(bound, dra_backed=frozenset())
    assert not admit(plain, stale).admitted  # a device-plugin pod: the zones have no NIC left
    assert admit(bound, stale).admitted
    assert pinned_request(bound, stale) == {"cpu": 4000, "memory": 8 * GI}
    # one the model still refuses (20 CPUs, 16 per zone): its request is taken from every zone, without the NIC
    free = _nic_node("free", (("2", "2"), ("2", "2")), 0).topology
    assert free is not None
    too_big = Pod.from_manifest(
        {**manifest, "spec": {"containers": [guaranteed("app", "20", "8Gi", limits={NIC: "1"})]}}
    )
    assert [z.available[NIC] for z in apply_pod(too_big, free).zones] == [2, 2]


def test_dynamic_resources_aligns_and_charges_as_the_kubelet_admits_on_stale_zones() -> None:
    """DynamicResources on a node whose zones still list the NIC DRA serves there: the allocator aligns the claim
    with the pod as the kubelet admits it (without the NIC), and the device stranding charge reads the zones after
    that admission, so the node scores as one whose zones never listed the NIC (the charge is not dropped because
    the kubelet model, counting the stale NICs, would not admit the pod)."""
    state = _nic_state("stale")
    demand = CPUDemand()
    demand.observe(_nic_pod("seen", cpus="8"), {"nic.sim.knuma.io/devices": 1}, served=(NIC,))
    plugin = DynamicResources(state, demand)
    big = _nic_pod("big", cpus="40")  # 15 CPUs left beside 3 NICs: one more 8-CPU NIC pod fits there, not three
    stale = _dgx_node("stale", None)
    zones = {z.id: {**z.available, NIC: 0} for z in stale.topology.zones}  # type: ignore[union-attr]
    listed = replace(stale, topology=stale.topology.with_available(zones))  # type: ignore[union-attr]
    listed = replace(listed, allocatable={**listed.allocatable, NIC: 0})
    clean, stale_view = state.with_zone_devices(stale), state.with_zone_devices(listed)
    assert NIC in stale_view.topology.numa_managed  # type: ignore[union-attr]
    assert plugin.filter(CycleState(), big, stale_view).ok
    charged = plugin.score(CycleState(), big, clean)
    assert charged < DynamicResources(state).score(CycleState(), big, clean)  # the charge is there
    assert plugin.score(CycleState(), big, stale_view) == charged


def test_the_hint_trace_shows_the_pod_the_numa_plugin_asked_about() -> None:
    """`knuma schedule --hints` traces the kubelet model with the pod NodeResourceTopologyMatch asked about: on zones
    that still list the NIC DRA serves, no device manager hints for it, and admitted, as Filter found."""
    stale = _nic_node("stale", (("2", "0"), ("2", "0")), 0)
    doc = explain(_profile(ScoringStrategy(), _map(nics=NIC)), _nic_pod(), [stale], hints=True)
    (entry,) = doc["nodes"]
    assert entry["hints"]["result"]["admitted"] is True
    assert [p["resource"] for s in entry["hints"]["steps"] for p in s["providers"]] == ["cpu", "memory"]


class _Releases:
    """One pod's release, leaving the zones as `after`, on a node whose zones are known."""

    def __init__(self, after: NodeTopology) -> None:
        self.after = after

    def single_releases(self, node: str) -> Iterator[tuple[str, NodeTopology]]:
        yield "default/gone", self.after

    def exact(self, node: str) -> bool:
        return True


def test_stable_under_release_checks_the_pod_as_the_kubelet_admits_it() -> None:
    """StableUnderRelease asks whether the pod would still be admitted after a release, of the pod as the kubelet
    admits it: without the NIC DRA serves on a node whose zones still list it (none free), as the NUMA plugin's
    Filter asks."""
    stale = _nic_node("stale", (("2", "0"), ("2", "0")), 0)
    assert stale.topology is not None
    init = guaranteed("init", "2", "1Gi", limits={NIC: "1"})
    p = pod(guaranteed("app", "4", "8Gi", limits={NIC: "1"}), init=(init,), name="p")
    releases = _Releases(stale.topology)
    assert StableUnderRelease(releases, _map(nics=NIC)).filter(CycleState(), p, stale).ok
    assert not StableUnderRelease(releases).filter(CycleState(), p, stale).ok  # without DRA: no NIC left
    # the daemon's profile (knuma's cache) gives it the DeviceClasses' extended resources
    config, devices = default_config(), DeviceState()
    profile = build_profiles(config, build_nrt_cache(config), devices)["topology-aware-scheduler"]
    (plugin,) = [f for f in profile.filters if isinstance(f, StableUnderRelease)]
    assert plugin.extended is devices.extended
