"""The framework's optional extension points: PreFilter (reject, narrow, skip) and NormalizeScore."""

from __future__ import annotations

from collections.abc import Mapping

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    NodeInfo,
    PreFilterResult,
    Profile,
    Status,
    schedule_one,
)
from tests.scheduler.objects import node, pod


class Fixed:
    """Scores from a table; no normalize."""

    def __init__(self, name: str, scores: Mapping[str, int]) -> None:
        self.name, self.scores = name, scores

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.scores[node.name]


class Normalized(Fixed):
    """Scores from a table, normalized to a share of their sum (to check that only feasible nodes are seen)."""

    seen: list[dict[str, int]]

    def __init__(self, name: str, scores: Mapping[str, int]) -> None:
        super().__init__(name, scores)
        self.seen = []

    def normalize(self, scores: Mapping[str, int]) -> dict[str, int]:
        self.seen.append(dict(scores))
        total = sum(scores.values()) or 1
        return {n: 100 * s // total for n, s in scores.items()}


class Reject:
    name = "Reject"

    def __init__(self, *names: str) -> None:
        self.names = names

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, "rejected", self.name) if node.name in self.names else SUCCESS


class Pre:
    """A filter with a PreFilter that returns a fixed result; its Filter counts calls."""

    def __init__(self, name: str, result: PreFilterResult) -> None:
        self.name, self.result, self.calls = name, result, 0

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult:
        return self.result

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        self.calls += 1
        return SUCCESS


NODES = [node("a"), node("b"), node("c")]


def test_without_normalize_totals_are_weighted_raw_scores() -> None:
    profile = Profile("p", (Reject("c"),), ((Fixed("x", {"a": 10, "b": 30, "c": 90}), 2),))
    result = schedule_one(profile, pod(), NODES)
    assert result.selected == "b"
    assert [r.score for r in result.nodes] == [20, 60, None]


def test_normalize_sees_feasible_nodes_only_and_applies_before_weights() -> None:
    normalized = Normalized("n", {"a": 1, "b": 3, "c": 1000})
    profile = Profile("p", (Reject("c"),), ((normalized, 3), (Fixed("x", {"a": 50, "b": 0, "c": 0}), 1)))
    for explain in (True, False):
        normalized.seen.clear()
        result = schedule_one(profile, pod(), NODES, explain=explain)
        assert normalized.seen == [{"a": 1, "b": 3}]
        assert [r.score for r in result.nodes] == [25 * 3 + 50, 75 * 3, None]
        assert result.selected == "b"
        assert (result.nodes[0].plugins["n"].score == 25) if explain else not result.nodes[0].plugins
    explained = schedule_one(profile, pod(), NODES, explain=True)
    assert explained.nodes[2].plugins["n"].score == 1000  # raw on the infeasible node


def test_normalize_ties_go_to_the_first_node() -> None:
    profile = Profile("p", (), ((Normalized("n", {"a": 2, "b": 2, "c": 2}), 1),))
    assert schedule_one(profile, pod(), NODES).selected == "a"


def test_normalize_with_no_feasible_node() -> None:
    normalized = Normalized("n", {"a": 1, "b": 1, "c": 1})
    profile = Profile("p", (Reject("a", "b", "c"),), ((normalized, 1),))
    result = schedule_one(profile, pod(), NODES)
    assert result.selected is None
    assert result.failure_summary() == "0/3 nodes are available: 3 rejected."


def test_pre_filter_skip_and_narrowing() -> None:
    skipped = Pre("Skipped", PreFilterResult(skip=True))
    narrow = Pre("Narrow", PreFilterResult(node_names=frozenset({"b", "c", "zz"})))
    narrower = Pre("Narrower", PreFilterResult(node_names=frozenset({"c", "a"})))
    result = schedule_one(Profile("p", (skipped, narrow, narrower), ()), pod(), NODES, explain=False)
    assert skipped.calls == 0
    assert result.selected == "c"
    assert [r.filter.reason for r in result.nodes] == [
        "node(s) didn't satisfy plugin(s) [Narrow Narrower]",
        "node(s) didn't satisfy plugin(s) [Narrow Narrower]",
        "",
    ]
    assert narrow.calls == 1  # only the node left runs the filters


def test_pre_filter_narrowing_to_nothing_and_rejections() -> None:
    one = Pre("One", PreFilterResult(node_names=frozenset({"a"})))
    other = Pre("Other", PreFilterResult(node_names=frozenset({"b"})))
    result = schedule_one(Profile("p", (one, other), ()), pod(), NODES)
    assert result.failure_summary() == (
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [One Other] simultaneously."
    )
    unresolvable = Pre("Gate", PreFilterResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no way")))
    later = Pre("Later", PreFilterResult())
    result = schedule_one(Profile("p", (unresolvable, later), ()), pod(), NODES)
    assert result.failure_summary() == "0/3 nodes are available: no way."
    assert {r.filter.plugin for r in result.nodes} == {"Gate"}
    assert later.calls == 0
    unschedulable = Pre("Soft", PreFilterResult(Status(Code.UNSCHEDULABLE, "not now")))
    result = schedule_one(Profile("p", (unschedulable, later), ()), pod(), NODES)
    assert result.pre_filter is not None and result.pre_filter.plugin == "Soft"
    assert result.failure_summary() == "0/3 nodes are available: not now."
