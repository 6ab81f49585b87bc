"""NodeResourcesFit's score: kube-scheduler's LeastAllocated over non-zero cpu and memory requests."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from knuma.scheduler.fast.vectorized import VectorizedScheduler
from knuma.scheduler.framework.assume import assume
from knuma.scheduler.framework.interface import CycleState, NodeInfo, schedule_one
from knuma.scheduler.framework.profiles import default_profile
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_extended import ExtendedResourceMap
from knuma.scheduler.plugins.node_resources_fit import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NodeResourcesFit,
    least_allocated,
    non_zero_request,
)
from knuma.scheduler.plugins.node_resources_fit_args import NodeResourcesFitArgs, parse_node_resources_fit_args
from knuma.testbed.shapes import BUILTIN_SHAPES
from tests.scheduler.builders import container, device_state, guaranteed, pod

GI = 1 << 30
MI = 1 << 20


def score(p, node: NodeInfo) -> int:
    return NodeResourcesFit().score(CycleState(), p, node)


def test_least_allocated_is_the_weighted_mean_of_free_fractions() -> None:
    node = NodeInfo("n", allocatable={"cpu": 4000, "memory": 8 * GI}, requested={"cpu": 1000, "memory": 2 * GI})
    # cpu: (4000 - 2000) * 100 / 4000 = 50; memory: (8 - 3) * 100 / 8 = 62 (integer division); (50 + 62) / 2 = 56
    assert score(pod(guaranteed("app", "1", "1Gi")), node) == 56


def test_missing_requests_count_as_100m_and_200mi() -> None:
    defaults = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}
    assert non_zero_request(pod(container("app"))) == defaults
    # a request that is present, even 0, is not replaced
    assert non_zero_request(pod(container("app", requests={"cpu": "0", "memory": "1Gi"}))) == {"cpu": 0, "memory": GI}
    # per container, then kube's aggregation: the larger of the init container and the sum of app containers
    init = container("setup", requests={"memory": "1Gi"})
    two = pod(container("a", requests={"cpu": "50m"}), container("b", requests={"cpu": "20m"}), init=(init,))
    assert non_zero_request(two) == {"cpu": 100, "memory": max(GI, 2 * DEFAULT_MEMORY_REQUEST)}


def test_a_resource_the_node_does_not_have_is_left_out_and_overcommit_scores_zero() -> None:
    assert least_allocated({"cpu": 4000}, {"cpu": 1000, "memory": GI}) == 75
    assert least_allocated({"cpu": 4000, "memory": GI}, {"cpu": 5000, "memory": 0}) == 50
    assert least_allocated({}, {"cpu": 1}) == 0


def test_best_effort_pods_spread_instead_of_piling_on_the_first_node() -> None:
    profile = default_profile()
    nodes = [
        NodeInfo(f"n{i}", allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}, manifest={"kind": "Node"})
        for i in range(3)
    ]
    chosen = []
    for index in range(6):
        p = pod(container("app"), name=f"p{index}")
        result = schedule_one(profile, p, nodes, explain=False)
        assert result.selected is not None
        chosen.append(result.selected)
        row = next(i for i, n in enumerate(nodes) if n.name == result.selected)
        nodes[row] = assume(nodes[row], p, None)
    assert chosen == ["n0", "n1", "n2", "n0", "n1", "n2"]
    assert nodes[0].requested == {}  # BestEffort pods request nothing ...
    assert nodes[0].non_zero_requested == {"cpu": 200, "memory": 400 * MI}  # ... but count for scoring


def test_pod_level_requests_replace_the_containers_in_fit_and_score() -> None:
    """`PodRequests` with pod-level resources: the pod's CPU and memory are the pod-level ones, for the filter and
    for scoring (whose defaults for containers without requests they replace)."""
    from knuma.api.pod import Pod

    spec = {"containers": [{"name": "app"}], "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}
    whole = Pod.from_manifest({"metadata": {"name": "p"}, "spec": spec})
    assert non_zero_request(whole) == {"cpu": 3000, "memory": GI}
    node = NodeInfo("n", allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}, requested={"cpu": 2000})
    assert not NodeResourcesFit().filter(CycleState(), whole, node).ok  # 2 CPUs free, 3 asked at pod level
    assert NodeResourcesFit().filter(CycleState(), pod(container("app")), node).ok


# -- NodeResourcesFitArgs ------------------------------------------------------------------------------------------


def _args(raw: dict[str, Any]) -> NodeResourcesFitArgs:
    def fail(path: str, problem: str) -> NoReturn:
        raise ValueError(f"{path}: {problem}")

    return parse_node_resources_fit_args(raw, "args", fail)


def _fit(raw: dict[str, Any]) -> NodeResourcesFit:
    return NodeResourcesFit(_args(raw))


NODE = NodeInfo(
    "n",
    allocatable={"cpu": 8000, "memory": 16 * GI, "example.com/gpu": 4},
    requested={"cpu": 2000, "memory": 4 * GI, "example.com/gpu": 1},
)


def test_most_allocated_scores_the_weighted_share_in_use_with_the_pod() -> None:
    fit = _fit(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]}}
    )
    # cpu (2000 + 2000) * 100 / 8000 = 50, memory (4 + 4) * 100 / 16 = 50: (50 * 3 + 50) / 4 = 50
    assert fit.score(CycleState(), pod(guaranteed("app", "2", "4Gi")), NODE) == 50
    # cpu 6000 / 8000 = 75, memory 8 / 16 = 50: (75 * 3 + 50) / 4 = 68 (integer division)
    assert fit.score(CycleState(), pod(guaranteed("app", "4", "4Gi")), NODE) == 68


def test_an_extended_resource_counts_only_when_the_pod_requests_it_and_the_node_has_it() -> None:
    fit = _fit(
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 2}],
            }
        }
    )
    plain = pod(guaranteed("app", "2", "4Gi"))
    assert fit.score(CycleState(), plain, NODE) == 50  # cpu only: (8000 - 4000) * 100 / 8000
    gpu = pod(
        container(
            "app", requests={"cpu": "2", "memory": "4Gi", "example.com/gpu": "1"}, limits={"example.com/gpu": "1"}
        )
    )
    # cpu 50, gpu (4 - 2) * 100 / 4 = 50, weights 1 and 2: 50
    assert fit.score(CycleState(), gpu, NODE) == 50
    bare = NodeInfo("m", allocatable={"cpu": 8000, "memory": 16 * GI}, requested={"cpu": 2000})
    assert fit.score(CycleState(), gpu, bare) == 50  # no such resource on the node: left out


def test_requested_to_capacity_ratio_follows_the_shape_and_rounds_half_up() -> None:
    fit = _fit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu"}, {"name": "memory"}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        }
    )
    # cpu 4000 / 8000 = 50% -> 50, memory (4 + 5) / 16 = 56% -> 56: (50 + 56) / 2 = 53
    assert fit.score(CycleState(), pod(guaranteed("app", "2", "5Gi")), NODE) == 53
    # cpu 5000 / 8000 = 62% -> 62, memory 9 / 16 -> 56: 59
    assert fit.score(CycleState(), pod(guaranteed("app", "3", "5Gi")), NODE) == 59
    descending = _fit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 30, "score": 3}]
                },
            }
        }
    )
    # cpu 50% and memory 56%: past the last point, 3 * 10 = 30 each
    assert descending.score(CycleState(), pod(guaranteed("app", "2", "5Gi")), NODE) == 30
    empty = NodeInfo("e", allocatable={"cpu": 8000, "memory": 16 * GI})
    # cpu 10%: 100 + (30 - 100) * 10 / 30 = 100 - 23 (Go truncates -23.3 to -23); memory 25%: 100 - 58 = 42
    assert descending.score(CycleState(), pod(guaranteed("app", "800m", "4Gi")), empty) == 60


def test_ignored_extended_resources_leave_the_filter_native_ones_never_do() -> None:
    wants = pod(container("app", requests={"cpu": "1", "example.com/nic": "2"}, limits={"example.com/nic": "2"}))
    node = NodeInfo("n", allocatable={"cpu": 4000, "memory": GI}, manifest={"kind": "Node"})
    assert not NodeResourcesFit().filter(CycleState(), wants, node).ok
    assert _fit({"ignoredResources": ["example.com/nic"]}).filter(CycleState(), wants, node).ok
    assert _fit({"ignoredResourceGroups": ["example.com"]}).filter(CycleState(), wants, node).ok
    assert not _fit({"ignoredResourceGroups": ["example.org"]}).filter(CycleState(), wants, node).ok
    assert not _fit({"ignoredResources": ["cpu"]}).filter(CycleState(), pod(guaranteed("app", "8", "1Gi")), node).ok


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"ignoredResourceGroups": ["example.com/nic"]},
            "args.ignoredResourceGroups[0]: invalid value \"example.com/nic\": resource group name can't contain '/'",
        ),
        ({"ignoredResources": ["-bad"]}, 'args.ignoredResources[0]: invalid label key "-bad"'),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            'args.scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"type": "Spread"}},
            'args.scoringStrategy.type: Unsupported value: "Spread": supported values: "LeastAllocated"',
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            "args.scoringStrategy.resources[0].weight: invalid value 101: resource weight of cpu not in valid range "
            "(0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "args.scoringStrategy.shape: Required value: at least one point must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "args.scoringStrategy.shape[1].utilization: invalid value 50: values must be sorted in increasing order",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
                }
            },
            "args.scoringStrategy.shape[0].score: invalid value 11: not in valid range [0, 10]",
        ),
        ({"scoringStrategy": {"type": "LeastAllocated", "shape": []}}, "args.scoringStrategy.shape: unknown field"),
    ],
)
def test_bad_args_are_refused_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        _args(raw)
    assert str(caught.value).startswith(message), str(caught.value)


def test_defaults_and_a_weight_of_zero() -> None:
    assert _args({}).is_default
    assert _args({"scoringStrategy": {"type": "LeastAllocated"}}).is_default
    strategy = _args(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    ).strategy
    assert strategy.resources == (("cpu", 1),)  # SetDefaults_NodeResourcesFitArgs: 0 is 1


def test_other_strategies_read_requests_as_kube_scheduler_does() -> None:
    """`calculateResourceAllocatableRequest` for every strategy: cpu and memory are non-zero requests (100m / 200Mi for
    a container without them, on the node's NonZeroRequested), ephemeral-storage counts even when the pod asks for
    none, MostAllocated clamps at capacity, RequestedToCapacityRatio leaves resources scoring 0 out of the mean."""
    most_cpu = _fit({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}})
    node = NodeInfo("n", allocatable={"cpu": 1000, "memory": GI}, requested={"cpu": 0}, non_zero_requested={"cpu": 300})
    # the pod without requests counts 100m; the node's non-zero 300m: (300 + 100) * 100 / 1000 = 40
    assert most_cpu.score(CycleState(), pod(container("app")), node) == 40
    full = NodeInfo("f", allocatable={"cpu": 1000, "memory": GI}, requested={"cpu": 1500})
    assert most_cpu.score(CycleState(), pod(guaranteed("app", "1", "1Gi")), full) == 100  # clamped, not 250
    storage = _fit(
        {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu"}, {"name": "ephemeral-storage"}]}}
    )
    disk = NodeInfo(
        "d", allocatable={"cpu": 1000, "ephemeral-storage": 100 * GI}, requested={"ephemeral-storage": 75 * GI}
    )
    # cpu (1000 - 100) * 100 / 1000 = 90; ephemeral-storage (100 - 75) / 100 = 25, counted though not requested: 57
    assert storage.score(CycleState(), pod(container("app")), disk) == 57
    ratio = _fit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu"}, {"name": "memory", "weight": 3}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        }
    )
    empty = NodeInfo("e", allocatable={"cpu": 10000, "memory": 1024 * GI})
    # cpu 2000 / 10000 -> 20; memory 200Mi / 1Ti -> 0%, scores 0 and is left out of the weights: 20, not 5
    assert ratio.score(CycleState(), pod(container("app", requests={"cpu": "2"})), empty) == 20


def test_an_extended_resource_a_device_class_serves_is_left_to_dra_where_the_node_has_none() -> None:
    """`shouldDelegateResourceToDRA` (KEP-5004): a resource a DeviceClass maps is not checked on a node whose
    allocatable has none of it, absent or listed at 0 (a device plugin with no device left, kubernetes#133784: the
    DRA driver takes over); a node where a device plugin has some is checked as before, and ignored resources first."""
    mapping = ExtendedResourceMap()
    mapping.set_class("nics", "example.com/nic", "2026-11-29T10:00:00Z")
    fit = NodeResourcesFit(extended=mapping)
    wants = pod(container("app", requests={"cpu": "1", "example.com/nic": "2"}, limits={"example.com/nic": "2"}))
    for allocatable in ({"cpu": 4000}, {"cpu": 4000, "example.com/nic": 0}):
        node = NodeInfo("n", allocatable=allocatable, manifest={"kind": "Node"})
        assert fit.filter(CycleState(), wants, node).ok, allocatable
        assert not NodeResourcesFit().filter(CycleState(), wants, node).ok  # without DRA: insufficient
    plugin = NodeInfo("p", allocatable={"cpu": 4000, "example.com/nic": 1}, manifest={"kind": "Node"})
    assert fit.filter(CycleState(), wants, plugin).reason == "Insufficient example.com/nic"


def _nic_devices(allocated: int) -> DeviceState:
    """Node `dra`'s dgx slices (8 NICs, 8 GPUs), `allocated` of the NICs in an allocated claim, and a class `nics`
    serving `example.com/nic` with them."""
    state = device_state(BUILTIN_SHAPES["dgx"], ["dra"])
    state.set_class(
        {
            "metadata": {"name": "nics", "creationTimestamp": "2026-11-29T10:00:00Z"},
            "spec": {
                "selectors": [{"cel": {"expression": "device.driver == 'nic.sim.knuma.io'"}}],
                "extendedResourceName": "example.com/nic",
            },
        }
    )
    pool = next(s.pool.name for s in state.slices.values() if s.driver == "nic.sim.knuma.io")
    results = [
        {"request": "r", "driver": "nic.sim.knuma.io", "pool": pool, "device": f"nic-{i}"} for i in range(allocated)
    ]
    state.set_claim(
        {
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nics"}}]}},
            "status": {"allocation": {"devices": {"results": results}}},
        }
    )
    return state


def test_a_scoring_strategy_counts_the_devices_of_the_class_that_serves_an_extended_resource() -> None:
    """`DRAExtendedResource` in `calculateResourceAllocatableRequest`: on a node whose allocatable has none of
    `example.com/nic`, MostAllocated over it reads the class's devices there (`calculateDRAResourceTotals`: 8 NICs,
    3 allocated, `IsDeviceAllocated`), plus the pod's; the node scores as a device-plugin node with 8 NICs, 3
    requested, does. Without the devices, or a pod that does not ask for NICs, the resource is left out: only cpu
    counts. The class's selector decides which devices count (GPUs do not)."""
    state = _nic_devices(3)
    args = _args(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "example.com/nic", "weight": 1}]}}
    )
    fit = NodeResourcesFit(args, state.extended, state)
    wants = pod(guaranteed("app", "2", limits={"example.com/nic": "1"}))
    dra = NodeInfo("dra", allocatable={"cpu": 8000, "memory": 8 * GI, "pods": 110}, manifest={"kind": "Node"})
    plugin = NodeInfo(
        "dp",
        allocatable={"cpu": 8000, "memory": 8 * GI, "pods": 110, "example.com/nic": 8},
        requested={"example.com/nic": 3},
        manifest={"kind": "Node"},
    )
    assert state.class_devices("dra", {}, "nics") == (8, 3)
    assert fit.score(CycleState(), wants, dra) == (3 + 1) * 100 // 8 == fit.score(CycleState(), wants, plugin)
    assert NodeResourcesFit(args, state.extended).score(CycleState(), wants, dra) == 0  # no devices: left out
    assert fit.score(CycleState(), pod(guaranteed("app", "2")), dra) == 0  # not requested: left out
    listed_at_zero = NodeInfo("dra", allocatable={**dra.allocatable, "example.com/nic": 0}, manifest={"kind": "Node"})
    assert fit.score(CycleState(), wants, listed_at_zero) == 50  # a device plugin with none left: DRA's count
    # where a device plugin lists some, they are the resource's (`allocatable == 0` alone turns to DRA)
    listed = NodeInfo("dra", allocatable={**dra.allocatable, "example.com/nic": 4}, manifest={"kind": "Node"})
    assert fit.score(CycleState(), wants, listed) == 1 * 100 // 4
    both = _args(
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/nic", "weight": 3}],
            }
        }
    )
    # cpu 2000 / 8000 -> 25, NICs 4 / 8 -> 50: (25 + 3 * 50) / 4
    assert NodeResourcesFit(both, state.extended, state).score(CycleState(), wants, dra) == (25 + 3 * 50) // 4


def test_the_vectorised_path_rescores_when_the_devices_a_strategy_counts_change() -> None:
    """Rows whose DRA devices change keep their version where the zone overlay does not follow them (devices without
    a NUMA node, slices not bound to one node): a pod shape whose NodeResourcesFit score counts a class's devices is
    re-scored on every row once the devices change (`DRADevices.version`), as the plugin scores it afresh."""
    state = _nic_devices(0)
    args = _args(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "example.com/nic", "weight": 1}]}}
    )
    fit = NodeResourcesFit(args, state.extended, state)
    nodes = [
        NodeInfo(name, allocatable={"cpu": 8000, "memory": 8 * GI, "pods": 110}, manifest={"kind": "Node"})
        for name in ("dra", "other")
    ]
    fast = VectorizedScheduler(nodes, numa=False, fit=fit, fit_weight=1, numa_weight=0, balanced_weight=0)
    wants = pod(guaranteed("app", "2", limits={"example.com/nic": "1"}))
    assert fast.filter_and_score(wants)[1].tolist() == [1 * 100 // 8, 0]
    fresh = _nic_devices(4)
    state.set_claim(fresh.claims["default/held"])
    assert state.class_devices("dra", {}, "nics") == (8, 4)
    assert fast.filter_and_score(wants)[1].tolist() == [5 * 100 // 8, 0]
