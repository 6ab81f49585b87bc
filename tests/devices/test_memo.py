"""`knuma.devices.memo`: outcomes come back only for the same node state, re-labelled with the current claims."""

from __future__ import annotations

from knuma.devices.allocator import Outcome
from knuma.devices.memo import AllocationMemo, NodeState


def _state(in_use: frozenset[str] = frozenset()) -> NodeState:
    return NodeState(None, {}, (1, 1, in_use))


def test_a_failure_is_relabelled_claim_by_claim_even_when_one_key_prefixes_another() -> None:
    memo = AllocationMemo()
    failed = Outcome(
        "n1",
        False,
        reason="claim default/ab: constraint matchAttribute x: no single value; claim default/a, request gpu: needs 2",
        stage="constraint",
        claim="default/ab",
        stages={"default/a/gpu": (("class", 4),), "default/ab/nic": (("class", 2),)},
    )
    memo.put("n1", "shape", ("default/a", "default/ab"), _state(), failed)
    got = memo.get("n1", "shape", ("default/x", "default/y"), _state())
    assert got is not None
    assert got.reason == (
        "claim default/y: constraint matchAttribute x: no single value; claim default/x, request gpu: needs 2"
    )
    assert got.claim == "default/y"
    assert got.stages == {"default/x/gpu": (("class", 4),), "default/y/nic": (("class", 2),)}


def test_a_failure_naming_a_claim_elsewhere_is_recomputed_and_a_changed_node_misses() -> None:
    memo = AllocationMemo()
    odd = Outcome("n1", False, reason="device of default/a is odd", stage="class")
    memo.put("n1", "shape", ("default/a",), _state(), odd)
    assert memo.get("n1", "shape", ("default/b",), _state()) is None
    assert memo.get("n1", "shape", ("default/a",), _state()) is odd
    assert memo.get("n1", "shape", ("default/a",), _state(frozenset({"gpu-0"}))) is None
    assert memo.get("n2", "shape", ("default/a",), _state()) is None
