from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import CycleState
from knuma.scheduler.plugins.stable_under_release import StableUnderRelease
from knuma.sim.engine import PodRecord, RunResult, snapshot
from knuma.sim.metrics import compute
from knuma.sim.schedulers import NodeSetup, ProductScheduler, make_scheduler
from knuma.testbed.shapes import BUILTIN_SHAPES
from knuma.testbed.simkubelet import SimKubelet
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR


def _guaranteed(name: str, cpu: int, init_cpu: int = 0) -> Pod:
    def resources(n: int) -> dict[str, Any]:
        return {"requests": {"cpu": str(n), "memory": "1Gi"}, "limits": {"cpu": str(n), "memory": "1Gi"}}

    spec: dict[str, Any] = {"containers": [{"name": "app", "resources": resources(cpu)}]}
    if init_cpu:
        spec["initContainers"] = [{"name": "init", "resources": resources(init_cpu)}]
    return Pod.from_manifest({"metadata": {"name": name}, "spec": spec})


def _node() -> SimKubelet:
    shape = BUILTIN_SHAPES["small"]  # 2 zones x 8 CPUs
    return SimKubelet("n0", shape.allocatable(), shape.topology("n0"))


def test_release_gives_zones_back() -> None:
    kubelet = _node()
    assert kubelet.admit(_guaranteed("a", 5)).admitted
    assert [z.available["cpu"] for z in kubelet.topology.zones] == [3000, 8000]
    kubelet.release("default/a")
    assert [z.available["cpu"] for z in kubelet.topology.zones] == [8000, 8000]
    assert kubelet.requested["cpu"] == 0
    kubelet.check()


def test_rejection_is_topology_affinity_error() -> None:
    kubelet = _node()
    result = kubelet.admit(_guaranteed("wide", 10))
    assert not result.admitted and result.reason == TOPOLOGY_AFFINITY_ERROR
    assert kubelet.running == {}


def test_an_extended_resource_the_node_does_not_list_is_not_checked_one_it_lists_is() -> None:
    """`removeMissingExtendedResources`: the kubelet drops requests of extended resources its node does not list
    before the fit check (a device plugin not registered yet, a DRA-backed extended resource); a listed one is
    checked, also at 0."""

    def pod(name: str, resource: str) -> Pod:
        limits = {"cpu": "1", "memory": "1Gi", resource: "2"}
        spec = {"containers": [{"name": "app", "resources": {"requests": dict(limits), "limits": limits}}]}
        return Pod.from_manifest({"metadata": {"name": name}, "spec": spec})

    kubelet = _node()
    assert kubelet.admit(pod("unlisted", "example.com/nic")).admitted
    shape = BUILTIN_SHAPES["small"]
    listed = SimKubelet("n1", {**shape.allocatable(), "example.com/nic": 0}, shape.topology("n1"))
    result = listed.admit(pod("listed", "example.com/nic"))
    assert not result.admitted and result.reason == "OutOfexample.com/nic"
    assert not _node().admit(pod("native", "hugepages-1Gi")).admitted  # native resources are always checked


def test_admission_is_not_monotonic_and_knuma_guards_against_it() -> None:
    """Freeing CPUs can turn an admission into a TopologyAffinityError: the init container moves to the lower zone
    and pins the app container there (reusable CPUs). knuma's StableUnderRelease filter refuses such a node."""
    kubelet = _node()
    assert kubelet.admit(_guaranteed("a", 5)).admitted  # zone 0: 3 free
    assert kubelet.admit(_guaranteed("b", 2)).admitted  # zone 0: 1 free
    fragile = _guaranteed("p", 4, init_cpu=2)
    assert kubelet.would_admit(fragile)  # init and app on zone 1
    after = SimKubelet(kubelet.name, kubelet.allocatable, kubelet.topology, dict(kubelet.requested))
    after.running = dict(kubelet.running)
    after.release("default/b")  # zone 0: 3 free -> init takes 2 there, app needs 4 on zone 0: 2 + 1
    assert not after.would_admit(fragile)

    scheduler = make_scheduler("knuma", [NodeSetup("n0", kubelet.allocatable, snapshot(_node(), 0.0))])
    assert isinstance(scheduler, ProductScheduler)
    stable = next(p for p in scheduler.profile.filters if isinstance(p, StableUnderRelease))
    for key in ("default/a", "default/b"):
        pod = kubelet.running[key].pod
        assert scheduler.schedule(pod, 0.0) == "n0"
        scheduler.pod_running(key, "n0", 1.0)
    info = scheduler.cache.node_info("n0")
    assert info is not None
    status = stable.filter(CycleState(), fragile, info)
    assert not status.ok and "default/b" in status.detail
    assert scheduler.schedule(fragile, 2.0) is None
    assert scheduler.schedule(_guaranteed("plain", 4), 2.0) == "n0"  # no init container: not fragile


_POD = st.tuples(
    st.integers(min_value=1, max_value=10),  # app CPUs
    st.integers(min_value=0, max_value=4),  # init CPUs (0: none)
    st.booleans(),  # Guaranteed?
)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(["small", "four-numa", "eight-numa"]),
    ops=st.lists(st.tuples(_POD, st.booleans()), max_size=40),
)
def test_ground_truth_is_conserved(shape: str, ops: list[tuple[tuple[int, int, bool], bool]]) -> None:
    """Any sequence of admissions and releases keeps every zone within [0, allocatable], and releasing everything
    gives the empty node back."""
    node_shape = BUILTIN_SHAPES[shape]
    kubelet = SimKubelet("n", node_shape.allocatable(), node_shape.topology("n"))
    empty = [dict(z.available) for z in kubelet.topology.zones]
    for index, ((cpu, init, guaranteed), release_one) in enumerate(ops):
        pod = _guaranteed(f"p{index}", cpu, init)
        if not guaranteed:
            pod = Pod.from_manifest(
                {
                    "metadata": {"name": f"p{index}"},
                    "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": f"{cpu}"}}}]},
                }
            )
        kubelet.admit(pod)
        kubelet.check()
        if release_one and kubelet.running:
            kubelet.release(next(iter(kubelet.running)))
            kubelet.check()
    for key in list(kubelet.running):
        kubelet.release(key)
    kubelet.check()
    assert [dict(z.available) for z in kubelet.topology.zones] == empty
    assert all(amount == 0 for amount in kubelet.requested.values())


def test_a_pod_bound_in_the_last_second_is_not_room_for_a_pending_one() -> None:
    """False-negative pending counts pods fresh data would place; a pod bound but not yet admitted when the run ends
    occupies its zone in a moment, so the pending pod that needs the same CPUs is not a false negative."""
    node = _node()
    node.admit(_guaranteed("resident", 8))  # zone 0 full; zone 1 has 8 CPUs
    bound = PodRecord(_guaranteed("bound", 8), "g8", arrived=99.0, lifetime=60.0, node="n0", bound_at=99.5)
    waiting = PodRecord(_guaranteed("waiting", 8), "g8", arrived=99.0, lifetime=60.0)
    result = RunResult("knuma", "t", 100.0, {"bound": bound, "waiting": waiting}, {"n0": node})
    assert compute(result, [])["false_negative_pending"] == 0
    del result.pods["bound"]  # without the pod in flight the zone is free: the pending pod is a false negative
    assert compute(result, [])["false_negative_pending"] == 1
