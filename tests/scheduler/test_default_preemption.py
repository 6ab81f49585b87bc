"""DefaultPreemption's pure parts: victim selection on the cache's node-without-victims (NUMA-aware with knuma's
cache), the candidate order of `pickOneNodeForPreemption`, the candidate count, the arguments, and the nominations
the cluster cache holds room for."""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any

import pytest

from knuma.api.disruption import DisruptionBudget
from knuma.api.pod import Pod
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, parse_config
from knuma.scheduler.config.model import SchedulerConfigError
from knuma.scheduler.framework.interface import Code, NodeInfo, Profile, Status, schedule_one
from knuma.scheduler.framework.postfilter import Candidate
from knuma.scheduler.plugins.default_preemption import (
    NO_VICTIMS,
    DefaultPreemption,
    pick_one_node,
    split_by_budget_violation,
)
from knuma.scheduler.plugins.default_preemption_args import DefaultPreemptionArgs

from .builders import nrt

ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}


def _pod(name: str, cpu: str, priority: int = 0, node: str = "", started: str = "", **spec: Any) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "1Gi"}
    status: dict[str, Any] = {"phase": "Running" if started else "Pending"}
    if started:
        status["startTime"] = started
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}],
            "priority": priority,
            **({"nodeName": node} if node else {}),
            **spec,
        },
        "status": status,
    }


def _config(**numa_args: Any) -> Any:
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "s",
                    "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
                    "pluginConfig": [{"name": "NodeResourceTopologyMatch", "args": numa_args}] if numa_args else [],
                }
            ],
        }
    )


def _cluster(nodes: Collection[str] = ("n1",)) -> ClusterCache:
    cache = ClusterCache()
    cache.nrt.informers_synced()
    for name in nodes:
        cache.upsert_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
            }
        )
        cache.upsert_nrt(nrt(name, ZONES))
    return cache


def _run(cache: ClusterCache, profile: Profile, pod: Pod, plugin: DefaultPreemption) -> Any:
    nodes = cache.node_infos()
    result = schedule_one(profile, pod, nodes, explain=False)
    assert result.selected is None
    statuses = {r.name: r.filter for r in result.nodes}
    return plugin.post_filter(profile, pod, statuses, nodes, cache.node_info_without)


def _profile(**numa_args: Any) -> tuple[Profile, DefaultPreemption]:
    profile = build_profiles(_config(**numa_args))["s"]
    (plugin,) = profile.post_filter
    assert isinstance(plugin, DefaultPreemption)
    return profile, plugin


@pytest.mark.parametrize("started", [True, False], ids=["admitted", "bound-not-admitted"])
def test_the_victim_is_the_pod_whose_zone_the_preemptor_needs_and_the_other_is_reprieved(started: bool) -> None:
    """3 + 3 CPUs in two 4-CPU zones: the 4-CPU preemptor needs one zone empty. The more important pod (priority 20)
    is reprieved first and keeps its zone; the other (10) is the only victim. Holds both for pods the kubelet admitted
    (the shadow knows their zones) and for pods bound and not admitted yet (replayed without the victim)."""
    cache = _cluster()
    cache.upsert_pod(_pod("mid", "3", 20, "n1", "2026-01-01T00:00:00Z" if started else ""))
    cache.upsert_pod(_pod("low", "3", 10, "n1", "2026-01-01T00:00:01Z" if started else ""))
    profile, plugin = _profile()
    answer = _run(cache, profile, Pod.from_manifest(_pod("urgent", "4", 1000)), plugin)
    assert answer.candidate == Candidate("n1", (cache.pods["default/low"].pod,))
    without = cache.node_info_without("n1", ["default/low"], True)
    assert without is not None and without.topology is not None
    assert sorted(z.available["cpu"] for z in without.topology.zones) == [1000, 4000]
    assert without.requested["cpu"] == 3000 and without.pod_count == 1


def test_without_numa_awareness_the_published_zones_stay_and_no_candidate_is_found() -> None:
    cache = _cluster()
    cache.upsert_pod(_pod("a", "3", 10, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("b", "3", 10, "n1", "2026-01-01T00:00:00Z"))
    profile, plugin = _profile(preemptionMode="Disabled")
    assert not plugin.numa_aware
    answer = _run(cache, profile, Pod.from_manifest(_pod("urgent", "4", 1000)), plugin)
    assert answer.candidate is None and answer.clear_nomination
    assert answer.message == "preemption: 0/1 nodes are available: 1 cannot align container."


def test_the_dry_run_does_not_count_the_preemptor_into_the_bin_packing_demand_again() -> None:
    cache = _cluster()
    cache.upsert_pod(_pod("low", "3", 10, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("low2", "3", 10, "n1", "2026-01-01T00:00:00Z"))
    profile, plugin = _profile(scoringStrategy={"type": "KnumaBinPacking"})
    numa = next(p for p in profile.filters if p.name == "NodeResourceTopologyMatch")
    pod = Pod.from_manifest(_pod("urgent", "4", 1000))
    nodes = cache.node_infos()
    result = schedule_one(profile, pod, nodes, explain=False)
    version = numa.demand.version  # type: ignore[attr-defined]
    sizes = numa.demand.sizes  # type: ignore[attr-defined]
    answer = plugin.post_filter(profile, pod, {r.name: r.filter for r in result.nodes}, nodes, cache.node_info_without)
    assert answer.candidate is not None
    assert (numa.demand.version, numa.demand.sizes) == (version, sizes)  # type: ignore[attr-defined]


def test_nodes_where_no_eviction_helps_are_not_tried_and_equal_priority_is_no_victim() -> None:
    cache = _cluster(("n1", "n2"))
    cache.upsert_pod(_pod("same", "4", 1000, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("same2", "4", 1000, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n2"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
    )
    profile, plugin = _profile()
    answer = _run(cache, profile, Pod.from_manifest(_pod("urgent", "4", 1000)), plugin)
    assert answer.candidate is None
    assert answer.message == (
        f"preemption: 0/2 nodes are available: 1 {NO_VICTIMS}, 1 Preemption is not helpful for scheduling."
    )


def test_the_dry_run_stops_once_it_has_the_candidates_it_wants() -> None:
    cache = _cluster(("n1", "n2", "n3"))
    for node in ("n1", "n2", "n3"):
        cache.upsert_pod(_pod(f"low-{node}", "4", 10, node, "2026-01-01T00:00:00Z"))
        cache.upsert_pod(_pod(f"low2-{node}", "4", 10, node, "2026-01-01T00:00:00Z"))
    profile, _ = _profile()
    tried: list[str] = []

    def without(name: str, keys: Collection[str], numa: bool) -> NodeInfo | None:
        tried.append(name)
        return cache.node_info_without(name, keys, numa)

    pod = Pod.from_manifest(_pod("urgent", "4", 1000))
    nodes = cache.node_infos()
    statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
    one = DefaultPreemption(DefaultPreemptionArgs(0, 1), rng=random.Random(1))
    answer = one.post_filter(profile, pod, statuses, nodes, without)
    assert answer.candidate is not None and len(set(tried)) == 1 and answer.candidate.node == tried[0]
    tried.clear()
    every = DefaultPreemption(DefaultPreemptionArgs(10, 100), rng=random.Random(1))
    answer = every.post_filter(profile, pod, statuses, nodes, without)
    assert set(tried) == {"n1", "n2", "n3"} and answer.candidate is not None


def _victim(priority: int, started: str = "2026-01-01T00:00:00Z", name: str = "v") -> Pod:
    return Pod.from_manifest(_pod(name, "1", priority, "n", started))


@pytest.mark.parametrize(
    ("first", "second", "chosen"),
    [
        ((Candidate("a", (_victim(5),), pdb_violations=1)), Candidate("b", (_victim(9),)), "b"),
        (Candidate("a", (_victim(9),)), Candidate("b", (_victim(5), _victim(5))), "b"),  # lowest highest priority
        (Candidate("a", (_victim(5), _victim(4))), Candidate("b", (_victim(5), _victim(1))), "b"),  # lowest sum
        (Candidate("a", (_victim(5), _victim(-5))), Candidate("b", (_victim(5),)), "b"),  # sum offset: fewer pods
        (
            Candidate("a", (_victim(5, "2026-01-01T00:00:00Z"),)),
            Candidate("b", (_victim(5, "2026-06-01T00:00:00Z"),)),
            "b",  # latest start of the highest-priority victims
        ),
        (Candidate("a", (_victim(5),)), Candidate("b", (_victim(5),)), "a"),  # all tied: the first
    ],
)
def test_pick_one_node_applies_each_criterion_to_the_ties_of_the_previous(
    first: Candidate, second: Candidate, chosen: str
) -> None:
    assert (picked := pick_one_node([first, second])) is not None and picked.node == chosen


def test_policy_never_and_a_victim_terminating_by_preemption_on_the_nominated_node_make_a_pod_ineligible() -> None:
    plugin = DefaultPreemption()
    never = Pod.from_manifest(_pod("p", "1", 100, preemptionPolicy="Never"))
    assert plugin.ineligible(never, None, None) == "not eligible due to preemptionPolicy=Never."
    pod = Pod.from_manifest(_pod("p", "1", 100))
    leaving = _pod("old", "1", 10, "n1")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    # deleted by someone else (a rollout, kubectl delete): no reason to wait for it (`podTerminatingByPreemption`)
    assert plugin.ineligible(pod, NodeInfo("n1", pods=(Pod.from_manifest(leaving),)), None) == ""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    leaving["status"] = {"conditions": [{"type": "Ready", "status": "True"}, condition]}
    node = NodeInfo("n1", pods=(Pod.from_manifest(leaving),))
    assert plugin.ineligible(pod, node, None) == "not eligible due to a terminating pod on the nominated node."
    evicted = {**condition, "reason": "EvictionByEvictionAPI"}
    leaving["status"] = {"conditions": [evicted, condition]}  # the first DisruptionTarget condition decides
    assert plugin.ineligible(pod, NodeInfo("n1", pods=(Pod.from_manifest(leaving),)), None) == ""
    gone_bad = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint")
    assert plugin.ineligible(pod, node, gone_bad) == ""  # the nominated node no longer fits at all: try again


def test_arguments_are_validated_as_upstream() -> None:
    assert DefaultPreemptionArgs().candidates(5000) == 500 and DefaultPreemptionArgs().candidates(50) == 50
    assert DefaultPreemptionArgs(10, 100).candidates(300) == 100
    for args, message in (
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage: not in valid range [0, 100], got 101"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: not in valid range [0, inf), got -1"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage: cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
    ):
        document = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": args}]}],
        }
        with pytest.raises(SchedulerConfigError) as raised:
            parse_config(document, "s.yaml")
        assert str(raised.value) == f"s.yaml: profiles[0].pluginConfig[0].args.{message}"


def test_the_lowest_priority_on_the_nodes_spares_the_dry_run_the_same_answer() -> None:
    """With the cache's lowest priority, a pod of no higher priority gets `No preemption victims found` on every
    potential node without any node being looked at: the answer the dry run gives."""
    cache = _cluster(("n1", "n2"))
    assert cache.lowest_priority() is None
    cache.upsert_pod(_pod("a", "4", 50, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("b", "4", 50, "n1", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("c", "4", 70, "n2", "2026-01-01T00:00:00Z"))
    cache.upsert_pod(_pod("d", "4", 70, "n2", "2026-01-01T00:00:00Z"))
    assert cache.lowest_priority() == 50
    profile, plugin = _profile()
    pod = Pod.from_manifest(_pod("p", "5", 50))
    nodes = cache.node_infos()
    statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
    tried: list[str] = []

    def without(name: str, keys: Collection[str], numa: bool) -> NodeInfo | None:
        tried.append(name)
        return cache.node_info_without(name, keys, numa)

    quick = plugin.post_filter(profile, pod, statuses, nodes, without, lowest_priority=cache.lowest_priority())
    slow = plugin.post_filter(profile, pod, statuses, nodes, without)
    assert quick == slow and not tried
    assert quick.message == f"preemption: 0/2 nodes are available: 2 {NO_VICTIMS}."
    cache.delete_pod(_pod("a", "4", 50, "n1"))
    cache.delete_pod(_pod("b", "4", 50, "n1"))
    assert cache.lowest_priority() == 70


def test_a_nominated_pod_holds_its_room_until_it_binds_or_goes() -> None:
    cache = _cluster()
    pod = Pod.from_manifest(_pod("urgent", "4", 1000))
    cache.nominate(pod, "n1")
    info = cache.node_info("n1")
    assert info is not None and info.requested["cpu"] == 4000 and info.topology is not None
    assert sorted(z.available["cpu"] for z in info.topology.zones) == [0, 4000]
    assert not cache.is_assumed(pod.key) and cache.nominated_node(pod.key) == "n1"
    assert cache.nominations_below(1001) == [pod.key] and cache.nominations_below(1000) == []
    cache.upsert_pod(_pod("urgent", "4", 1000, "n1"))  # bound (by us after its cycle, or by anyone)
    assert cache.nominated_node(pod.key) == "" and cache.pods[pod.key].node == "n1"
    cache.nominate(Pod.from_manifest(_pod("other", "2", 5)), "n1")
    cache.delete_pod(_pod("other", "2", 5))
    assert cache.nominated_node("default/other") == ""
    info = cache.node_info("n1")
    assert info is not None and info.requested["cpu"] == 4000


def test_a_host_port_held_by_a_lower_priority_pod_is_freed_by_evicting_only_that_pod() -> None:
    cache = _cluster()
    port = [{"containerPort": 80, "hostPort": 8080}]
    web = _pod("web", "1", 10, "n1", "2026-01-01T00:00:00Z")
    web["spec"]["containers"][0]["ports"] = port
    cache.upsert_pod(web)
    cache.upsert_pod(_pod("other", "1", 5, "n1", "2026-01-01T00:00:00Z"))
    profile, plugin = _profile()
    proxy = _pod("proxy", "1", 1000)
    proxy["spec"]["containers"][0]["ports"] = port
    answer = _run(cache, profile, Pod.from_manifest(proxy), plugin)
    assert answer.candidate is not None and [v.name for v in answer.candidate.victims] == ["web"]
    without = cache.node_info_without("n1", ["default/web"], True)
    assert without is not None and not without.used_ports


def _budget(name: str, labels: dict[str, str], allowed: int, disrupted: tuple[str, ...] = ()) -> DisruptionBudget:
    return DisruptionBudget.from_manifest(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}},
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": dict.fromkeys(disrupted, "2026-01-01T00:00:00Z"),
            },
        }
    )


def _labelled(name: str, app: str, priority: int = 10, node: str = "n1", cpu: str = "3") -> dict[str, Any]:
    manifest = _pod(name, cpu, priority, node, "2026-01-01T00:00:00Z")
    manifest["metadata"]["labels"] = {"app": app}
    return manifest


def test_budgets_are_spent_in_order_and_skip_what_they_do_not_cover() -> None:
    """`filterPodsWithPDBViolation`: with one disruption allowed the first covered pod is not violating and the next
    is; other namespaces, missing or empty selectors, pods already counted as disrupted and pods without labels do
    not spend the budget."""
    pods = [Pod.from_manifest(_labelled(n, "db")) for n in ("db-0", "db-1", "db-2")]
    assert [[p.name for p in group] for group in split_by_budget_violation(pods, [_budget("b", {"app": "db"}, 1)])] == [
        ["db-1", "db-2"],
        ["db-0"],
    ]
    already = _budget("b", {"app": "db"}, 1, disrupted=("db-0",))
    assert [p.name for p in split_by_budget_violation(pods, [already])[0]] == ["db-2"]
    empty = DisruptionBudget.from_manifest(
        {"metadata": {"name": "e", "namespace": "default"}, "spec": {"selector": {}}}
    )
    missing = DisruptionBudget.from_manifest({"metadata": {"name": "m", "namespace": "default"}, "spec": {}})
    elsewhere = DisruptionBudget.from_manifest(
        {"metadata": {"name": "o", "namespace": "other"}, "spec": {"selector": {"matchLabels": {"app": "db"}}}}
    )
    assert split_by_budget_violation(pods, [empty, missing, elsewhere])[0] == []
    bad = DisruptionBudget.from_manifest(
        {"metadata": {"name": "x"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}}
    )
    assert bad.selector.nothing and split_by_budget_violation(pods, [bad])[0] == []


def test_a_budget_moves_preemption_to_the_pod_and_the_node_it_does_not_protect() -> None:
    """Two nodes, each with two 3-CPU pods in its two 4-CPU zones; a 4-CPU pod needs one of them gone. On n1 both
    pods are protected by a budget that allows no disruption, on n2 neither: n2 is chosen (fewest violations). On
    one node, the unprotected pod is the victim even though it is the more important one."""
    cache = _cluster(("n1", "n2"))
    cache.upsert_pod(_labelled("db-0", "db", node="n1"))
    cache.upsert_pod(_labelled("db-1", "db", node="n1"))
    cache.upsert_pod(_labelled("web-0", "web", priority=20, node="n2"))
    cache.upsert_pod(_labelled("web-1", "web", priority=20, node="n2"))
    profile, plugin = _profile()
    pod = Pod.from_manifest(_pod("urgent", "4", 1000))
    nodes = cache.node_infos()
    statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
    strict = [_budget("db", {"app": "db"}, 0)]
    answer = plugin.post_filter(profile, pod, statuses, nodes, cache.node_info_without, budgets=strict)
    assert answer.candidate is not None and answer.candidate.node == "n2" and answer.candidate.pdb_violations == 0
    assert plugin.post_filter(profile, pod, statuses, nodes, cache.node_info_without).candidate is not None

    one = _cluster()
    one.upsert_pod(_labelled("db-0", "db", priority=5))  # less important, protected
    one.upsert_pod(_labelled("web-0", "web", priority=20))  # more important, unprotected
    nodes = one.node_infos()
    statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
    answer = plugin.post_filter(profile, pod, statuses, nodes, one.node_info_without, budgets=strict)
    assert answer.candidate is not None and [v.name for v in answer.candidate.victims] == ["web-0"]
    unprotected = plugin.post_filter(profile, pod, statuses, nodes, one.node_info_without)
    assert unprotected.candidate is not None and [v.name for v in unprotected.candidate.victims] == ["db-0"]
    only = _cluster()
    only.upsert_pod(_labelled("db-0", "db", node="n1"))
    only.upsert_pod(_labelled("db-1", "db", node="n1"))
    nodes = only.node_infos()
    statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
    answer = plugin.post_filter(profile, pod, statuses, nodes, only.node_info_without, budgets=strict)
    assert answer.candidate is not None and answer.candidate.pdb_violations == 1  # still preempts, as upstream
