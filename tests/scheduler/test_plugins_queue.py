"""PrioritySort, SchedulingGates and NodeName: the plugins that decide when and where a pod may go at all."""

from __future__ import annotations

from knuma.scheduler.framework.interface import Code, CycleState
from knuma.scheduler.plugins.node_name import NodeName
from knuma.scheduler.plugins.priority_sort import PrioritySort
from knuma.scheduler.plugins.scheduling_gates import SchedulingGates
from tests.scheduler.objects import node, pod


def test_priority_sort_orders_by_priority_then_queue_time() -> None:
    sort = PrioritySort()
    high, low, low_later = pod("high", priority=1000), pod("low", priority=10), pod("low2", priority=10)
    assert sort.less(high, 5.0, low, 1.0)
    assert not sort.less(low, 1.0, high, 5.0)
    assert sort.less(low, 1.0, low_later, 2.0)
    assert not sort.less(low_later, 2.0, low, 1.0)
    assert not sort.less(low, 1.0, low, 1.0)
    queued = [(low_later, 2.0), (high, 9.0), (low, 1.0), (pod("none"), 0.0)]
    ordered = sorted(queued, key=lambda item: sort.sort_key(*item))
    assert [p.name for p, _ in ordered] == ["high", "low", "low2", "none"]


def test_scheduling_gates() -> None:
    gates = SchedulingGates()
    assert gates.pre_enqueue(pod()).ok
    gated = pod(schedulingGates=[{"name": "example.com/quota"}, {"name": "example.com/image"}])
    status = gates.pre_enqueue(gated)
    assert (status.code, status.reason, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "waiting for scheduling gates: [example.com/quota example.com/image]",
        "SchedulingGates",
    )


def test_node_name() -> None:
    plugin = NodeName()
    assert plugin.filter(CycleState(), pod(), node("a")).ok
    assert plugin.filter(CycleState(), pod(nodeName="a"), node("a")).ok
    status = plugin.filter(CycleState(), pod(nodeName="a"), node("b"))
    assert (status.code, status.reason) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) didn't match the requested node name",
    )
