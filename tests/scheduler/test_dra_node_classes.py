"""Nodes of one class share the allocator's outcome (`DeviceState.node_class`, `AllocationMemo.from_similar`): which
nodes are alike, and how an outcome is renamed for another node, case by case. The random streams of
`test_dra_memo.py` check that sharing never changes a decision."""

from __future__ import annotations

import copy
from typing import Any

from knuma.api.dra.fields import FieldErrors
from knuma.api.dra.resourceclaim import AllocationResult
from knuma.devices.allocator import ClaimAllocation, Outcome
from knuma.devices.memo import AllocationMemo, NodeState
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.testbed.dra import resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES

from .builders import device_state

GPU = "gpu.sim.knuma.io"
DGX = BUILTIN_SHAPES["dgx"]


def state(*nodes: str) -> DeviceState:
    return device_state(DGX, nodes)


def allocation(node: str, *gpus: int, selector: dict[str, Any] | None = None) -> AllocationResult:
    raw: dict[str, Any] = {
        "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": node, "device": f"gpu-{g}"} for g in gpus]}
    }
    if selector is not None:
        raw["nodeSelector"] = selector
    return AllocationResult.from_dict(raw, "allocation", FieldErrors())


def by_name(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def test_nodes_with_the_same_devices_free_are_one_class_and_their_own_pools_are_numbered_alike() -> None:
    devices = state("a", "b", "c")
    a, b = devices.node_class("a", None), devices.node_class("b", None)
    assert a is not None and b is not None
    assert a[0] == b[0]  # one class
    assert a[1] == ((GPU, "a"), ("nic.sim.knuma.io", "a")) and b[1] == ((GPU, "b"), ("nic.sim.knuma.io", "b"))
    # a GPU in use on c: another class until it is free again
    devices.set_claim(
        {
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
            "status": {"allocation": allocation("c", 3).to_dict()},
        }
    )
    c = devices.node_class("c", None)
    assert c is not None and c[0] != a[0]
    devices.delete_claim({"metadata": {"name": "held", "namespace": "default"}})
    c = devices.node_class("c", None)
    assert c is not None and c[0] == devices.node_class("a", None)[0]  # type: ignore[index]


def test_a_slice_that_selects_nodes_by_label_leaves_the_node_without_a_class() -> None:
    devices = state("a")
    selected = copy.deepcopy(resource_slices("shared", DGX)[0])
    selected["metadata"]["name"] = "by-label"
    del selected["spec"]["nodeName"]
    selected["spec"]["nodeSelector"] = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
    }
    devices.set_slice(selected)
    assert devices.node_class("a", None) is None


def test_an_outcome_is_renamed_for_a_node_of_the_same_class() -> None:
    memo = AllocationMemo()
    outcome = Outcome("a", True, (ClaimAllocation("default/c1", allocation("a", 2, selector=by_name("a"))),))
    entry = memo.put("a", "shape", ["default/c1"], NodeState(None, {}, ()), outcome)
    memo.share("class", "shape", "a", ((GPU, "a"),), entry)
    renamed = memo.from_similar("class", "shape", "b", ((GPU, "b"),), ["default/c2"])
    assert renamed is not None
    result = renamed[0]
    assert result.node == "b" and result.results[0].claim == "default/c2"
    assert [r.device_id for r in result.results[0].allocation.results] == [(GPU, "b", "gpu-2")]
    assert result.results[0].allocation.node_selector == by_name("b")
    assert memo.from_similar("other class", "shape", "b", ((GPU, "b"),), ["default/c2"]) is None
    assert memo.from_similar("class", "shape", "b", ((GPU, "b"),), ["default/c2", "default/c3"]) is None


def test_a_selector_naming_the_node_another_way_is_not_renamed() -> None:
    memo = AllocationMemo()
    odd = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "values": ["a"]}]}]}
    outcome = Outcome("a", True, (ClaimAllocation("default/c1", allocation("a", 2, selector=odd)),))
    entry = memo.put("a", "shape", ["default/c1"], NodeState(None, {}, ()), outcome)
    memo.share("class", "shape", "a", ((GPU, "a"),), entry)
    assert memo.from_similar("class", "shape", "b", ((GPU, "b"),), ["default/c2"]) is None


def test_a_failure_is_shared_only_when_it_names_neither_the_node_nor_its_pools() -> None:
    memo = AllocationMemo()
    plain = Outcome("a", False, reason="claim default/c1, request gpu: needs 1 device(s), 0 left", claim="default/c1")
    memo.share(
        "class", "plain", "a", ((GPU, "a"),), memo.put("a", "plain", ["default/c1"], NodeState(None, {}, ()), plain)
    )
    shared = memo.from_similar("class", "plain", "b", ((GPU, "b"),), ["default/c2"])
    assert shared is not None and shared[0].reason.startswith("claim default/c2,") and shared[0].node == "b"
    named = Outcome("a", False, reason=f"invalid resource pools were encountered ({GPU}/a: ...)")
    memo.share(
        "class", "named", "a", ((GPU, "a"),), memo.put("a", "named", ["default/c1"], NodeState(None, {}, ()), named)
    )
    assert memo.from_similar("class", "named", "b", ((GPU, "b"),), ["default/c2"]) is None
    assert memo.similar_failure("class", "named", ["default/c2"]) is not None  # still a verdict


def test_a_deleted_node_is_forgotten_and_answers_afresh_if_it_comes_back() -> None:
    devices = state("a", "b")
    assert devices.memo is not None
    before = devices.node_class("b", None)
    devices.memo.put("b", "shape", ["default/c1"], NodeState(None, {}, devices.node_devices("b")), Outcome("b", True))
    devices.forget_node("b")
    assert "b" not in devices.memo.entries
    assert devices.node_class("b", None) == before  # recomputed, the same
