"""InterPodAffinity against kube-scheduler's behaviour: the cases of upstream's
`pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go` (`TestRequiredAffinitySingleNode`,
`TestRequiredAffinityMultipleNodes`) and `scoring_test.go` (`TestPreferredAffinity`,
`TestPreferredAffinityWithHardPodAffinitySymmetricWeight`), with the modern messages and codes; and the daemon's fast
path deciding as the exact path when pods carry affinity terms."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from knuma.api.labelselector import LabelSelectorError, parse_label_selector
from knuma.api.pod import Pod
from knuma.scheduler.algorithm import decide
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, default_config
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import Code, CycleState, NodeInfo, Profile, schedule_one
from knuma.scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
)
from knuma.scheduler.plugins.inter_pod_affinity_args import InterPodAffinityArgs
from tests.scheduler.objects import node

SECURITY = {"service": "securityscan"}
SECURITY2 = {"security": "S1"}
REGION_ZONE = {"region": "r1", "zone": "z11"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(topology_key: str, *expressions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(expressions)}, "topologyKey": topology_key, **extra}


def make_pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    preferred_anti: list[dict[str, Any]] | None = None,
    namespace: str = "default",
) -> Pod:
    spec_affinity: dict[str, Any] = {}
    if affinity is not None or preferred is not None:
        spec_affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": affinity or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred or [],
        }
    if anti is not None or preferred_anti is not None:
        spec_affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_anti or [],
        }
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}]}
    if spec_affinity:
        spec["affinity"] = spec_affinity
    meta = {"name": name, "namespace": namespace, "labels": labels or {}}
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def with_pods(info: NodeInfo, *pods: Pod) -> NodeInfo:
    return replace(info, pods=tuple(pods), pod_count=len(pods))


def run_filter(plugin: InterPodAffinity, incoming: Pod, nodes: list[NodeInfo], target: str) -> tuple[Code, str]:
    state = CycleState()
    state.nodes = nodes
    result = plugin.pre_filter(state, incoming)
    if not result.status.ok:
        return result.status.code, result.status.reason
    if result.skip:
        return Code.SUCCESS, ""
    status = plugin.filter(state, incoming, next(n for n in nodes if n.name == target))
    return status.code, status.reason


IN_SECURITY = expr("service", "In", "securityscan", "value2")
IN_ANTIVIRUS = expr("service", "In", "antivirusscan", "value2")
ANTI_ON_ZONE = term("zone", expr("service", "In", "securityscan", "value2"))

SINGLE_NODE_CASES = [
    # (name, incoming pod, existing pods on machine1 (or machine2 when named so), expected)
    ("no required affinity, no pods", make_pod(), [], (Code.SUCCESS, "")),
    (
        "In operator matches the existing pod",
        make_pod(labels=SECURITY2, affinity=[term("region", IN_SECURITY)]),
        [make_pod("e", SECURITY)],
        (Code.SUCCESS, ""),
    ),
    (
        "NotIn operator matches the existing pod",
        make_pod(labels=SECURITY2, affinity=[term("region", expr("service", "NotIn", "securityscan3", "value3"))]),
        [make_pod("e", SECURITY)],
        (Code.SUCCESS, ""),
    ),
    (
        "different namespace",
        make_pod(labels=SECURITY2, affinity=[term("", IN_SECURITY, namespaces=["DiffNameSpace"])]),
        [make_pod("e", SECURITY, namespace="ns")],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY),
    ),
    (
        "unmatching label selector",
        make_pod(labels=SECURITY, affinity=[term("", IN_ANTIVIRUS)]),
        [make_pod("e", SECURITY)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY),
    ),
    (
        "different operators in several terms",
        make_pod(
            labels=SECURITY2,
            affinity=[
                term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                term("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
            ],
        ),
        [make_pod("e", SECURITY)],
        (Code.SUCCESS, ""),
    ),
    (
        "requirements are ANDed",
        make_pod(
            labels=SECURITY2,
            affinity=[
                term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                term("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
            ],
        ),
        [make_pod("e", SECURITY)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY),
    ),
    (
        "affinity and anti-affinity satisfied",
        make_pod(labels=SECURITY2, affinity=[term("region", IN_SECURITY)], anti=[term("node", IN_ANTIVIRUS)]),
        [make_pod("e", SECURITY)],
        (Code.SUCCESS, ""),
    ),
    (
        "affinity, anti-affinity and symmetry satisfied",
        make_pod(labels=SECURITY2, affinity=[term("region", IN_SECURITY)], anti=[term("node", IN_ANTIVIRUS)]),
        [make_pod("e", SECURITY, anti=[term("node", IN_ANTIVIRUS)])],
        (Code.SUCCESS, ""),
    ),
    (
        "anti-affinity not satisfied",
        make_pod(labels=SECURITY2, affinity=[term("region", IN_SECURITY)], anti=[ANTI_ON_ZONE]),
        [make_pod("e", SECURITY)],
        (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY),
    ),
    (
        "symmetry not satisfied",
        make_pod(labels=SECURITY, affinity=[term("region", IN_SECURITY)], anti=[term("node", IN_ANTIVIRUS)]),
        [make_pod("e", SECURITY, anti=[ANTI_ON_ZONE])],
        (Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY),
    ),
    (
        "pod does not match its own terms and the only matching pod is elsewhere",
        make_pod(labels=SECURITY, affinity=[term("region", expr("service", "NotIn", "securityscan", "value2"))]),
        [make_pod("machine2", SECURITY)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY),
    ),
    (
        "existing pod's anti-affinity respected by a pod without terms",
        make_pod(labels=SECURITY),
        [make_pod("e", SECURITY, anti=[ANTI_ON_ZONE])],
        (Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY),
    ),
    (
        "existing pod's anti-affinity does not select the pod",
        make_pod(labels=SECURITY),
        [make_pod("e", SECURITY, anti=[term("zone", expr("service", "NotIn", "securityscan", "value2"))])],
        (Code.SUCCESS, ""),
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "expected"), [c[1:] for c in SINGLE_NODE_CASES],
                         ids=[c[0] for c in SINGLE_NODE_CASES])  # fmt: skip
def test_required_affinity_single_node(incoming: Pod, existing: list[Pod], expected: tuple[Code, str]) -> None:
    """upstream `TestRequiredAffinitySingleNode`."""
    machine1 = node("machine1", REGION_ZONE)
    machine2 = node("machine2", {})
    on1 = [p for p in existing if p.name != "machine2"]
    on2 = [p for p in existing if p.name == "machine2"]
    nodes = [with_pods(machine1, *on1), with_pods(machine2, *on2)]
    assert run_filter(InterPodAffinity(), incoming, nodes, "machine1") == expected


def test_first_pod_of_a_group_matches_itself_only_when_no_pod_matches_anywhere() -> None:
    """`satisfyPodAffinity`'s exception: a pod whose affinity selects its own labels may go on any node with the
    topology keys while no pod matches; once one does, only its domain."""
    web = {"app": "web"}
    incoming = make_pod("w2", web, affinity=[term("zone", expr("app", "In", "web"))])
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"}), node("c", {})]
    plugin = InterPodAffinity()
    assert run_filter(plugin, incoming, nodes, "a") == (Code.SUCCESS, "")
    assert run_filter(plugin, incoming, nodes, "b") == (Code.SUCCESS, "")
    assert run_filter(plugin, incoming, nodes, "c") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY)
    nodes[0] = with_pods(nodes[0], make_pod("w1", web))
    assert run_filter(plugin, incoming, nodes, "a") == (Code.SUCCESS, "")
    assert run_filter(plugin, incoming, nodes, "b") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY)


def test_required_anti_affinity_over_zones_and_the_failure_message() -> None:
    """upstream `TestRequiredAffinityMultipleNodes` style: anti-affinity on a zone excludes every node of the zone;
    the FailedScheduling message counts each reason as kube-scheduler prints it."""
    db = {"app": "db"}
    nodes = [
        with_pods(node("n1", {"zone": "z1", "kubernetes.io/hostname": "n1"}), make_pod("db1", db)),
        node("n2", {"zone": "z1", "kubernetes.io/hostname": "n2"}),
        node("n3", {"zone": "z2", "kubernetes.io/hostname": "n3"}),
    ]
    plugin = InterPodAffinity()
    profile = Profile("p", (plugin,), ((plugin, 2),))
    incoming = make_pod("db2", db, anti=[term("zone", expr("app", "In", "db"))])
    assert schedule_one(profile, incoming, nodes, explain=False).selected == "n3"
    nodes[2] = with_pods(nodes[2], make_pod("db3", db))
    result = schedule_one(profile, incoming, nodes, explain=False)
    assert result.selected is None
    assert result.failure_summary() == f"0/3 nodes are available: 3 {ERR_REASON_ANTI_AFFINITY}."


def test_namespace_selector_reads_namespace_labels() -> None:
    """A term with `namespaceSelector` selects pods in namespaces whose labels match; `{}` selects every namespace."""
    existing = make_pod("e", SECURITY, namespace="team-a")
    nodes = [with_pods(node("n1", {"zone": "z1"}), existing), node("n2", {"zone": "z2"})]
    selected = make_pod(anti=[term("zone", IN_SECURITY, namespaceSelector={"matchLabels": {"team": "a"}})])
    every = make_pod(anti=[term("zone", IN_SECURITY, namespaceSelector={})])
    own = make_pod(anti=[term("zone", IN_SECURITY)])  # its own namespace only: default
    labels = {"team-a": {"team": "a"}}
    plugin = InterPodAffinity(namespace_labels=lambda ns: labels.get(ns, {}))
    assert run_filter(plugin, selected, nodes, "n1") == (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY)
    assert run_filter(plugin, every, nodes, "n1") == (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY)
    assert run_filter(plugin, own, nodes, "n1") == (Code.SUCCESS, "")
    assert run_filter(InterPodAffinity(), selected, nodes, "n1") == (Code.SUCCESS, "")  # no labels known


def test_match_label_keys_are_merged_into_the_selector() -> None:
    """`matchLabelKeys: [pod-template-hash]`: only pods of the same revision count (kube-apiserver's merge)."""
    old = make_pod("old", {"app": "web", "pod-template-hash": "1"})
    nodes = [with_pods(node("n1", {"kubernetes.io/hostname": "n1"}), old), node("n2", {"kubernetes.io/hostname": "n2"})]
    anti = [term("kubernetes.io/hostname", expr("app", "In", "web"), matchLabelKeys=["pod-template-hash"])]
    new = make_pod("new", {"app": "web", "pod-template-hash": "2"}, anti=anti)
    assert run_filter(InterPodAffinity(), new, nodes, "n1") == (Code.SUCCESS, "")
    same = make_pod("same", {"app": "web", "pod-template-hash": "1"}, anti=anti)
    assert run_filter(InterPodAffinity(), same, nodes, "n1") == (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY)


def test_invalid_selector_is_unresolvable_at_prefilter() -> None:
    bad = make_pod(anti=[term("zone", {"key": "a", "operator": "In"})])
    code, reason = run_filter(InterPodAffinity(), bad, [node("n1", {"zone": "z"})], "n1")
    assert code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reason.startswith(
        "parsing pod: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    )
    with pytest.raises(LabelSelectorError):
        parse_label_selector({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})
    assert not parse_label_selector(None).matches({})
    assert parse_label_selector({}).matches({"any": "thing"})


def scores(plugin: InterPodAffinity, incoming: Pod, nodes: list[NodeInfo]) -> dict[str, int]:
    state = CycleState()
    state.nodes = nodes
    plugin.pre_score(state, incoming, nodes)
    return plugin.normalize({n.name: plugin.score(state, incoming, n) for n in nodes})


def weighted(weight: int, topology_key: str, *expressions: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(topology_key, *expressions)}


def test_preferred_affinity_scores_as_upstream() -> None:
    """upstream `TestPreferredAffinity`: "Affinity: pod that matches topology key & pods in nodes will get high score
    comparing to others which doesn't match either pods in nodes or in topology key" (machine1 100, others 0), and
    anti-affinity symmetry: existing pods' preferred anti-affinity lowers the score of their nodes."""
    region1, region2 = {"region": "China"}, {"region": "India"}
    nodes = [
        with_pods(node("machine1", region1), make_pod("e1", SECURITY)),
        with_pods(node("machine2", region2), make_pod("e2", {"security": "S2"})),
        node("machine3", {"az": "az1"}),
    ]
    incoming = make_pod(labels=SECURITY2, preferred=[weighted(5, "region", expr("service", "In", "securityscan"))])
    assert scores(InterPodAffinity(), incoming, nodes) == {"machine1": 100, "machine2": 0, "machine3": 0}
    # "Anti Affinity: pod that does not match existing pods in node will get high score"
    anti = make_pod(labels=SECURITY2, preferred_anti=[weighted(5, "region", expr("service", "In", "securityscan"))])
    assert scores(InterPodAffinity(), anti, nodes) == {"machine1": 0, "machine2": 100, "machine3": 100}
    # symmetry: machine1's pod prefers to stay away from security=S1 pods in its region
    repel = make_pod("e1", SECURITY, preferred_anti=[weighted(5, "region", expr("security", "In", "S1"))])
    nodes[0] = with_pods(nodes[0], repel)
    assert scores(InterPodAffinity(), make_pod(labels=SECURITY2), nodes) == {
        "machine1": 0,
        "machine2": 100,
        "machine3": 100,
    }
    ignoring = InterPodAffinity(InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True))
    assert scores(ignoring, make_pod(labels=SECURITY2), nodes) == {"machine1": 0, "machine2": 0, "machine3": 0}


def test_hard_pod_affinity_weight_scores_existing_pods_required_affinity() -> None:
    """upstream `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`: an existing pod's required affinity that
    the incoming pod matches draws it to that pod's domain with `hardPodAffinityWeight`; 0 turns it off."""
    attracting = make_pod("e", {"app": "x"}, affinity=[term("region", expr("service", "In", "S1"))])
    nodes = [
        with_pods(node("machine1", {"region": "China"}), attracting),
        node("machine2", {"region": "India"}),
        node("machine3", {"az": "az1"}),
    ]
    incoming = make_pod(labels={"service": "S1"})
    assert scores(InterPodAffinity(), incoming, nodes) == {"machine1": 100, "machine2": 0, "machine3": 0}
    off = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=0))
    assert scores(off, incoming, nodes) == {"machine1": 0, "machine2": 0, "machine3": 0}


# -- the daemon path: assumed pods count, and the fast path decides as the exact path -------------------------

PROFILE = build_profiles(default_config())["topology-aware-scheduler"]


def node_object(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "16", "memory": "32Gi", "pods": "110"}},
    }


def replica(index: int, app: str, anti: bool) -> Pod:
    spec: dict[str, Any] = {
        "schedulerName": "topology-aware-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    if anti:
        hostname = term("kubernetes.io/hostname", expr("app", "In", app))
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [hostname]}}
    meta = {"name": f"{app}-{index}", "namespace": "default", "labels": {"app": app}}
    return Pod.from_manifest({"metadata": meta, "spec": spec})


def test_assumed_replicas_count_before_their_binding_is_seen() -> None:
    """Replicas with required anti-affinity scheduled back to back (assumed, not yet bound) land one per node; the
    extra one gets kube-scheduler's message. A plain pod of the same app keeps the fast path and still honours the
    replicas' anti-affinity (symmetry)."""
    cache = ClusterCache()
    for i in range(3):
        cache.upsert_node(node_object(f"n{i}", "z1"))
    fast = FastPath(cache)
    placed = []
    for index in range(3):
        outcome = fast.decide(PROFILE, replica(index, "web", anti=True))
        assert outcome.node is not None
        cache.assume(replica(index, "web", anti=True), outcome.node)
        placed.append(outcome.node)
    assert sorted(placed) == ["n0", "n1", "n2"]
    extra = fast.decide(PROFILE, replica(3, "web", anti=True))
    assert extra.node is None
    assert extra.message == f"0/3 nodes are available: 3 {ERR_REASON_ANTI_AFFINITY}."
    plain = fast.decide(PROFILE, replica(4, "web", anti=False))
    assert plain.message == f"0/3 nodes are available: 3 {ERR_REASON_EXISTING_ANTI_AFFINITY}."
    other = fast.decide(PROFILE, replica(0, "api", anti=False))
    assert other.node is not None


def random_pod(index: int, rng: random.Random) -> Pod:
    app = rng.choice(("web", "db", "cache"))
    spec: dict[str, Any] = {
        "schedulerName": "topology-aware-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(("1", "2"))}}}],
    }
    affinity: dict[str, Any] = {}
    roll = rng.random()
    key = rng.choice(("zone", "kubernetes.io/hostname"))
    other = rng.choice(("web", "db", "cache"))
    if roll < 0.15:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(key, expr("app", "In", app))]
        }
    elif roll < 0.25:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(key, expr("app", "In", other))]
        }
    elif roll < 0.35:
        pref = [weighted(rng.randint(1, 100), key, expr("app", "In", other))]
        affinity["podAntiAffinity" if rng.random() < 0.5 else "podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": pref
        }
    if affinity:
        spec["affinity"] = affinity
    meta = {"name": f"p{index}", "namespace": "default", "labels": {"app": app}}
    return Pod.from_manifest({"metadata": meta, "spec": spec})


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_decides_as_the_exact_path_with_pod_affinity(seed: int) -> None:
    """Pods with and without terms, among placed pods with terms: the fast path (which keeps pods no placed term
    concerns) gives the exact path's node and message every time."""
    rng = random.Random(seed)
    cache = ClusterCache()
    for i in range(rng.randint(4, 9)):
        cache.upsert_node(node_object(f"n{i}", rng.choice(("z1", "z2", "z3"))))
    fast = FastPath(cache)
    for index in range(50):
        candidate = random_pod(index, rng)
        exact = decide(PROFILE, candidate, cache.node_infos())
        quick = fast.decide(PROFILE, candidate)
        assert (quick.node, quick.message) == (exact.node, exact.message), f"pod {index}"
        if exact.node is not None:
            cache.assume(candidate, exact.node)
