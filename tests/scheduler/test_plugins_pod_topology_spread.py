"""PodTopologySpread against kube-scheduler's behaviour: cases of upstream's
`pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go` (`TestSingleConstraint`,
`TestMultipleConstraints`, minDomains and node inclusion policies) and `scoring_test.go`
(`TestPodTopologySpreadScore`), with the modern messages and codes; and the fast path deciding as the exact path."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from knuma.api.pod import Pod
from knuma.scheduler.algorithm import decide
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Code, CycleState, NodeInfo, Profile, schedule_one
from knuma.scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS,
    ERR_REASON_MISSING_LABEL,
    PodTopologySpread,
)
from tests.scheduler.objects import node, taint

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def spread(key: str, max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": FOO, **extra}


def make_pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default", **spec: Any) -> Pod:
    full: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], **spec}
    meta = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"foo": ""}}
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": full})


def cluster(layout: dict[str, tuple[dict[str, str], int]], **node_extra: Any) -> list[NodeInfo]:
    """node name → (labels, matching pods on it)."""
    return [
        replace(node(name, labels, **node_extra.get(name, {})), pods=tuple(make_pod(f"{name}-{i}") for i in range(n)))
        for name, (labels, n) in layout.items()
    ]


def zones(a: int, b: int, x: int, y: int) -> list[NodeInfo]:
    """upstream's four nodes: node-a and node-b in zone1, node-x and node-y in zone2."""
    return cluster(
        {
            "node-a": ({"zone": "zone1", "node": "node-a"}, a),
            "node-b": ({"zone": "zone1", "node": "node-b"}, b),
            "node-x": ({"zone": "zone2", "node": "node-x"}, x),
            "node-y": ({"zone": "zone2", "node": "node-y"}, y),
        }
    )


def verdicts(incoming: Pod, nodes: list[NodeInfo]) -> dict[str, tuple[Code, str]]:
    plugin = PodTopologySpread()
    state = CycleState()
    state.nodes = nodes
    result = plugin.pre_filter(state, incoming)
    assert result.status.ok
    out = {}
    for n in nodes:
        status = plugin.filter(state, incoming, n)
        out[n.name] = (status.code, status.reason)
    return out


OK = (Code.SUCCESS, "")
SKEW = (Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS)
MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_MISSING_LABEL)


def test_no_existing_pods_every_node_fits() -> None:
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert verdicts(incoming, zones(0, 0, 0, 0)) == dict.fromkeys(("node-a", "node-b", "node-x", "node-y"), OK)


def test_pods_spread_across_zones_as_3_3_all_nodes_fit() -> None:
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert set(verdicts(incoming, zones(1, 2, 1, 2)).values()) == {OK}


def test_pods_spread_across_zones_as_2_1_only_the_emptier_zone_fits() -> None:
    """upstream "pods spread across zones as 3/1, all nodes in zone2 fit" with maxSkew 1."""
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert verdicts(incoming, zones(2, 1, 1, 0)) == {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}


def test_a_node_without_the_topology_key_is_unresolvable() -> None:
    """upstream "pods spread across zones as 1/2 due to absence of label 'zone' on node-b"."""
    nodes = zones(1, 0, 2, 0)
    nodes[1] = replace(node("node-b", {"node": "node-b"}), pods=nodes[1].pods)
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert verdicts(incoming, nodes) == {"node-a": OK, "node-b": MISSING, "node-x": SKEW, "node-y": SKEW}
    result = schedule_one(Profile("p", (PodTopologySpread(),), ()), incoming, nodes, explain=False)
    assert result.selected == "node-a"
    rack = make_pod("p", topologySpreadConstraints=[spread("rack")])
    result = schedule_one(Profile("p", (PodTopologySpread(),), ()), rack, nodes, explain=False)
    assert result.failure_summary() == f"0/4 nodes are available: 4 {ERR_REASON_MISSING_LABEL}."


@pytest.mark.parametrize(
    ("max_skew", "fitting"), [(1, {"node-x"}), (2, {"node-b", "node-x"}), (3, {"node-a", "node-b", "node-x"})]
)
def test_pods_spread_across_nodes_as_2_1_0_3(max_skew: int, fitting: set[str]) -> None:
    """upstream "pods spread across nodes as 2/1/0/3, only node-x fits" and "..., maxSkew is 2, node-b and node-x
    fit"."""
    incoming = make_pod("p", topologySpreadConstraints=[spread("node", max_skew)])
    result = verdicts(incoming, zones(2, 1, 0, 3))
    assert {name for name, v in result.items() if v == OK} == fitting


def test_pods_that_do_not_match_or_live_elsewhere_do_not_count() -> None:
    """A pod that does not match its own selector adds nothing to the skew; pods in other namespaces and pods the
    selector does not match are not counted (upstream "incoming pod doesn't match itself", namespace cases)."""
    nodes = zones(1, 0, 0, 0)
    nodes[2] = replace(nodes[2], pods=(make_pod("other-ns", namespace="ns2"), make_pod("bar", {"bar": ""})))
    not_self = make_pod("p", {"bar": ""}, topologySpreadConstraints=[spread("zone")])
    assert set(verdicts(not_self, nodes).values()) == {OK}  # zone1 1 + 0 - 0 = 1
    matching = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert verdicts(matching, nodes) == {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}


def test_min_domains_treats_the_global_minimum_as_zero() -> None:
    """With fewer eligible domains than minDomains the global minimum is 0 (upstream "minDomains" cases): 2 zones
    with 1 pod each and minDomains 3 leave no node with skew <= 1."""
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone", minDomains=3)])
    assert set(verdicts(incoming, zones(1, 0, 1, 0)).values()) == {SKEW}
    two = make_pod("p", topologySpreadConstraints=[spread("zone", minDomains=2)])
    assert set(verdicts(two, zones(1, 0, 1, 0)).values()) == {OK}


def test_node_inclusion_policies() -> None:
    """nodeAffinityPolicy Honor (the default) leaves out nodes the pod's nodeSelector excludes; Ignore counts them.
    nodeTaintsPolicy Honor leaves out nodes with taints the pod does not tolerate (default Ignore counts them)."""
    nodes = zones(0, 0, 3, 0)
    selector = {"zone": "zone1"}
    honored = make_pod("p", nodeSelector=selector, topologySpreadConstraints=[spread("zone")])
    assert verdicts(honored, nodes)["node-a"] == OK  # zone2 is not a domain: min is zone1's 0
    ignored = make_pod(
        "p", nodeSelector=selector, topologySpreadConstraints=[spread("zone", nodeAffinityPolicy="Ignore")]
    )
    assert verdicts(ignored, nodes)["node-a"] == OK  # zone1 0 + 1 - min(0, 3) = 1
    tainted = cluster(
        {"node-a": ({"zone": "zone1"}, 1), "node-x": ({"zone": "zone2"}, 0)},
        **{"node-x": {"taints": [taint("dedicated", "NoSchedule")]}},
    )
    counted = make_pod("p", topologySpreadConstraints=[spread("zone")])
    assert verdicts(counted, tainted)["node-a"] == SKEW  # zone2 (0) counts: 1 + 1 - 0 = 2
    honor_taints = make_pod("p", topologySpreadConstraints=[spread("zone", nodeTaintsPolicy="Honor")])
    assert verdicts(honor_taints, tainted)["node-a"] == OK  # only zone1: 1 + 1 - 1 = 1


def test_match_label_keys_split_revisions() -> None:
    """matchLabelKeys [pod-template-hash]: pods of another revision do not count."""
    nodes = [
        replace(node("node-a", {"zone": "zone1"}), pods=(make_pod("old", {"foo": "", "pod-template-hash": "1"}),)),
        node("node-x", {"zone": "zone2"}),
    ]
    constraint = spread("zone", matchLabelKeys=["pod-template-hash"])
    new = make_pod("p", {"foo": "", "pod-template-hash": "2"}, topologySpreadConstraints=[constraint])
    assert verdicts(new, nodes)["node-a"] == OK
    same = make_pod("p", {"foo": "", "pod-template-hash": "1"}, topologySpreadConstraints=[constraint])
    assert verdicts(same, nodes)["node-a"] == SKEW


def test_multiple_constraints_must_all_hold() -> None:
    """upstream `TestMultipleConstraints`: zone and node constraints both apply."""
    incoming = make_pod("p", topologySpreadConstraints=[spread("zone"), spread("node")])
    result = verdicts(incoming, zones(0, 1, 1, 1))  # zones 1/2; nodes 0/1/1/1
    assert result == {"node-a": OK, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW}


def scores(incoming: Pod, nodes: list[NodeInfo], feasible: list[NodeInfo] | None = None) -> dict[str, int]:
    plugin = PodTopologySpread()
    profile = Profile("p", (), ((plugin, 1),))
    result = schedule_one(profile, incoming, feasible if feasible is not None else nodes, explain=True)
    return {n.name: n.plugins[plugin.name].score or 0 for n in result.nodes}


def test_schedule_anyway_scores_as_upstream() -> None:
    """upstream `TestPodTopologySpreadScore`: "one constraint on node, no existing pods" gives 100 everywhere; with
    3/1 pods in two zones the fuller zone's nodes score lower: raw round(count * log(2 + 2)) = 4 and 1 (min 1, max 4),
    normalized 100 * (4 + 1 - raw) / 4 = 25 and 100."""
    soft = make_pod("p", topologySpreadConstraints=[spread("zone", when="ScheduleAnyway")])
    assert set(scores(soft, zones(0, 0, 0, 0)).values()) == {100}
    assert scores(soft, zones(2, 1, 1, 0)) == {"node-a": 25, "node-b": 25, "node-x": 100, "node-y": 100}
    by_node = make_pod("p", topologySpreadConstraints=[spread("node", 1, "ScheduleAnyway")])
    # per-node counts 2/1/0/3, weight log(4 + 2): raw 4, 2, 0, 5 (rounded); max 5, min 0
    assert scores(by_node, zones(2, 1, 0, 3)) == {"node-a": 20, "node-b": 60, "node-x": 100, "node-y": 0}


def test_nodes_without_the_key_are_ignored_by_the_score() -> None:
    nodes = zones(1, 0, 0, 0)
    nodes[3] = node("node-y", {"node": "node-y"})
    soft = make_pod("p", topologySpreadConstraints=[spread("zone", when="ScheduleAnyway")])
    assert scores(soft, nodes)["node-y"] == 0


# -- the daemon path ----------------------------------------------------------------------------------------

PROFILE = build_profiles(default_config())["topology-aware-scheduler"]


def node_object(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}},
    }


def random_pod(index: int, rng: random.Random) -> Pod:
    app = rng.choice(("web", "db"))
    spec: dict[str, Any] = {
        "schedulerName": "topology-aware-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(("1", "2"))}}}],
    }
    if rng.random() < 0.5:
        key = rng.choice(("zone", "kubernetes.io/hostname"))
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        selector = {"matchLabels": {"app": app}}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": rng.randint(1, 2), "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}
        ]
    meta = {"name": f"p{index}", "namespace": "default", "labels": {"app": app}}
    return Pod.from_manifest({"metadata": meta, "spec": spec})


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_decides_as_the_exact_path_with_spread_constraints(seed: int) -> None:
    rng = random.Random(seed)
    cache = ClusterCache()
    for i in range(rng.randint(3, 8)):
        cache.upsert_node(node_object(f"n{i}", rng.choice(("z1", "z2", "z3"))))
    fast = FastPath(cache)
    for index in range(60):
        candidate = random_pod(index, rng)
        exact = decide(PROFILE, candidate, cache.node_infos())
        quick = fast.decide(PROFILE, candidate)
        assert (quick.node, quick.message) == (exact.node, exact.message), f"pod {index}"
        if exact.node is not None:
            cache.assume(candidate, exact.node)


WEB_ZONE_SPREAD: dict[str, Any] = {
    "schedulerName": "topology-aware-scheduler",
    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
}
"""A replica of app `web` that keeps the zones' skew at most 1."""


def test_zone_spread_keeps_skew_at_most_one_through_assumed_pods() -> None:
    cache = ClusterCache()
    for name, zone in (("a1", "z1"), ("a2", "z1"), ("b1", "z2"), ("c1", "z3")):
        cache.upsert_node(node_object(name, zone))
    fast = FastPath(cache)
    per_zone = {"z1": 0, "z2": 0, "z3": 0}
    zone_of = {"a1": "z1", "a2": "z1", "b1": "z2", "c1": "z3"}
    for index in range(12):
        pod = Pod.from_manifest({"metadata": {"name": f"w{index}", "labels": {"app": "web"}}, "spec": WEB_ZONE_SPREAD})
        outcome = fast.decide(PROFILE, pod)
        assert outcome.node is not None
        cache.assume(pod, outcome.node)
        per_zone[zone_of[outcome.node]] += 1
        assert max(per_zone.values()) - min(per_zone.values()) <= 1
    assert per_zone == {"z1": 4, "z2": 4, "z3": 4}


def test_a_terminating_replica_is_not_counted_once_the_informer_shows_its_deletion() -> None:
    """Upstream's `countPodsMatchSelector` skips pods with a `deletionTimestamp` (kubernetes#87621): during a rolling
    update the new replica may take the zone of the one being deleted. The cache's pod update carries it."""
    cache = ClusterCache()
    for name, zone in (("a1", "z1"), ("b1", "z2")):
        cache.upsert_node(node_object(name, zone))
    spec = WEB_ZONE_SPREAD

    def bound(name: str, on: str, **meta: Any) -> dict[str, Any]:
        metadata = {"name": name, "namespace": "default", "labels": {"app": "web"}, **meta}
        return {"metadata": metadata, "spec": {**spec, "nodeName": on}, "status": {"phase": "Running"}}

    for name, on in (("old-0", "a1"), ("old-1", "a1"), ("old-2", "b1")):
        cache.upsert_pod(bound(name, on))
    incoming = Pod.from_manifest({"metadata": {"name": "new", "labels": {"app": "web"}}, "spec": spec})
    fast = FastPath(cache)
    assert fast.decide(PROFILE, incoming).node == "b1"  # z1 holds 2, z2 1: only z2 keeps the skew at 1
    cache.upsert_pod(bound("old-0", "a1", deletionTimestamp="2026-11-24T00:00:00Z"))
    cache.upsert_pod(bound("old-1", "a1", deletionTimestamp="2026-11-24T00:00:00Z"))
    # z1 now counts 0 and z2 1: only z1 keeps the skew at 1
    assert fast.decide(PROFILE, incoming).node == "a1"
    assert decide(PROFILE, incoming, cache.node_infos()).node == "a1"
