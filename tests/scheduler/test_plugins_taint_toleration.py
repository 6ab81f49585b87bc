"""TaintToleration and NodeUnschedulable: kube-scheduler's toleration matching, messages and codes."""

from __future__ import annotations

import pytest

from knuma.api.taints import Taint, Toleration
from knuma.scheduler.framework.interface import Code, CycleState, Profile, schedule_one
from knuma.scheduler.plugins.node_unschedulable import NodeUnschedulable
from knuma.scheduler.plugins.taint_toleration import TaintToleration
from tests.scheduler.objects import node, pod, taint

GPU = taint("nvidia.com/gpu", "NoSchedule", "present")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "", "present", "NoSchedule"), True),  # empty operator means Equal
        (Toleration("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), False),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Exists", "", ""), True),  # empty effect: every effect
        (Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), False),
        (Toleration("", "Exists", "", ""), True),  # empty key + Exists: everything
        (Toleration("", "Exists", "", "PreferNoSchedule"), False),
        (Toleration("other", "Exists", "", ""), False),
        (Toleration("nvidia.com/gpu", "Gt", "1", "NoSchedule"), False),  # unknown operators tolerate nothing
    ],
)
def test_toleration_matching(toleration: Toleration, tolerated: bool) -> None:
    assert toleration.tolerates(Taint("nvidia.com/gpu", "present", "NoSchedule")) is tolerated


def test_untolerated_noschedule_and_noexecute_taints_reject_with_the_first_one_named() -> None:
    plugin = TaintToleration()
    tainted = node("n", taints=[taint("soft", "PreferNoSchedule"), taint("a", "NoExecute", "x"), GPU])
    status = plugin.filter(CycleState(), pod(), tainted)
    assert (status.code, status.reason, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) had untolerated taint {a: x}",
        "TaintToleration",
    )
    tolerant = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    assert (
        plugin.filter(CycleState(), tolerant, tainted).reason
        == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    )
    empty_value = node("m", taints=[taint("dedicated", "NoSchedule")])
    assert plugin.filter(CycleState(), pod(), empty_value).reason == "node(s) had untolerated taint {dedicated: }"


def test_tolerated_and_prefer_no_schedule_taints_pass_the_filter() -> None:
    plugin = TaintToleration()
    tolerant = pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}])
    assert plugin.filter(CycleState(), tolerant, node("n", taints=[GPU])).ok
    assert plugin.filter(CycleState(), pod(), node("n", taints=[taint("soft", "PreferNoSchedule")])).ok
    assert plugin.filter(CycleState(), pod(), node("n")).ok


def test_score_counts_intolerable_prefer_no_schedule_taints_and_normalizes_reversed() -> None:
    plugin = TaintToleration()
    nodes = [
        node("clean"),
        node("one", taints=[taint("a", "PreferNoSchedule")]),
        node("two", taints=[taint("a", "PreferNoSchedule"), taint("b", "PreferNoSchedule"), GPU]),
        node("tolerated", taints=[taint("c", "PreferNoSchedule")]),
    ]
    # a toleration with effect NoSchedule does not count for PreferNoSchedule; an empty effect does
    p = pod(
        tolerations=[{"key": "c", "operator": "Exists"}, {"key": "a", "operator": "Exists", "effect": "NoSchedule"}]
    )
    raw = {n.name: plugin.score(CycleState(), p, n) for n in nodes}
    assert raw == {"clean": 0, "one": 1, "two": 2, "tolerated": 0}
    assert plugin.normalize(raw) == {"clean": 100, "one": 50, "two": 0, "tolerated": 100}
    assert plugin.normalize({"a": 0, "b": 0}) == {"a": 100, "b": 100}
    assert plugin.normalize({"a": 3, "b": 1, "c": 2}) == {"a": 0, "b": 67, "c": 34}  # 100 - 100*1//3 = 67


def test_schedule_one_prefers_nodes_without_prefer_no_schedule_taints() -> None:
    profile = Profile("p", (TaintToleration(),), ((TaintToleration(), 3),))
    nodes = [node("soft", taints=[taint("a", "PreferNoSchedule")]), node("hard", taints=[GPU]), node("clean")]
    result = schedule_one(profile, pod(), nodes)
    assert result.selected == "clean"
    assert {r.name: r.score for r in result.nodes} == {"soft": 0, "hard": None, "clean": 300}
    # the infeasible node's raw score is shown; it does not take part in normalization
    assert result.nodes[1].plugins["TaintToleration"].score == 0


def test_node_unschedulable() -> None:
    plugin = NodeUnschedulable()
    cordoned = node("n", unschedulable=True)
    status = plugin.filter(CycleState(), pod(), cordoned)
    assert (status.code, status.reason) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable")
    assert plugin.filter(CycleState(), pod(), node("n")).ok
    for tolerations in (
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
        [{"operator": "Exists"}],
    ):
        assert plugin.filter(CycleState(), pod(tolerations=tolerations), cordoned).ok, tolerations
    for tolerations in (
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "true"}],
    ):
        assert not plugin.filter(CycleState(), pod(tolerations=tolerations), cordoned).ok, tolerations
