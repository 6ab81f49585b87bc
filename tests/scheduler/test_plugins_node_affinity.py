"""NodeAffinity: nodeSelector, required and preferred node affinity, addedAffinity, PreFilter on metadata.name."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.nodeaffinity import RequiredNodeAffinity, parse_node_selector, parse_preferred_terms
from knuma.scheduler.framework.interface import Code, CycleState, Profile, schedule_one
from knuma.scheduler.plugins.node_affinity import NodeAffinity
from knuma.scheduler.plugins.node_name import NodeName
from knuma.scheduler.plugins.taint_toleration import TaintToleration
from tests.scheduler.objects import node, pod, taint

LABELS = {"zone": "a", "disk": "ssd", "cores": "64", "kubernetes.io/hostname": "n1"}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def fits(
    affinity: dict[str, Any] | None = None, labels: dict[str, str] = LABELS, name: str = "n1", **spec: Any
) -> bool:
    p = pod(affinity=affinity, **spec) if affinity else pod(**spec)
    return NodeAffinity().filter(CycleState(), p, node(name, labels)).ok


@pytest.mark.parametrize(
    ("expression", "match"),
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "b"), False),
        (expr("missing", "In", "a"), False),
        (expr("zone", "NotIn", "b"), True),
        (expr("zone", "NotIn", "a"), False),
        (expr("missing", "NotIn", "a"), True),  # NotIn matches nodes without the label
        (expr("disk", "Exists"), True),
        (expr("missing", "Exists"), False),
        (expr("missing", "DoesNotExist"), True),
        (expr("disk", "DoesNotExist"), False),
        (expr("cores", "Gt", "32"), True),
        (expr("cores", "Gt", "64"), False),
        (expr("cores", "Lt", "65"), True),
        (expr("cores", "Lt", "+64"), False),  # Go ParseInt accepts a sign
        (expr("zone", "Gt", "1"), False),  # a label that is not an integer never matches Gt/Lt
        (expr("missing", "Lt", "1"), False),
        (expr("cores", "Gt", "x"), False),  # invalid requirement: the term selects nothing
        (expr("zone", "In"), False),  # In needs values
        (expr("disk", "Exists", "ssd"), False),  # Exists takes none
        (expr("zone", "Matches", "a"), False),  # unknown operator
    ],
)
def test_match_expressions(expression: dict[str, Any], match: bool) -> None:
    assert fits(required({"matchExpressions": [expression]})) is match


def test_terms_are_ored_and_requirements_anded() -> None:
    both = {"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "hdd")]}
    assert not fits(required(both))
    assert fits(required(both, {"matchExpressions": [expr("disk", "In", "ssd")]}))
    # an empty term selects nothing, and so does a term with an invalid requirement, even next to valid ones
    assert not fits(required({}))
    assert not fits(required({"matchExpressions": []}))
    bad_then_good = {"matchExpressions": [expr("zone", "Bogus", "a"), expr("disk", "Exists")]}
    assert not fits(required(bad_then_good))
    assert fits(required(bad_then_good, {"matchExpressions": [expr("disk", "Exists")]}))


def test_match_fields_on_metadata_name() -> None:
    assert fits(required({"matchFields": [expr("metadata.name", "In", "n1")]}))
    assert not fits(required({"matchFields": [expr("metadata.name", "In", "n2")]}))
    assert fits(required({"matchFields": [expr("metadata.name", "NotIn", "n2")]}))
    assert not fits(required({"matchFields": [expr("metadata.name", "In", "n1", "n2")]}))  # exactly one value
    assert not fits(required({"matchFields": [expr("metadata.name", "Exists")]}))
    labels_and_name = {
        "matchFields": [expr("metadata.name", "In", "n1")],
        "matchExpressions": [expr("zone", "In", "b")],
    }
    assert not fits(required(labels_and_name))


def test_node_selector_and_required_affinity_must_both_match() -> None:
    assert fits(nodeSelector={"zone": "a", "disk": "ssd"})
    assert not fits(nodeSelector={"zone": "a", "disk": "hdd"})
    assert not fits(nodeSelector={"gpu": "true"})
    assert not fits(required({"matchExpressions": [expr("zone", "In", "a")]}), nodeSelector={"disk": "hdd"})
    assert fits(required({"matchExpressions": [expr("zone", "In", "a")]}), nodeSelector={"disk": "ssd"})


def test_filter_status_and_message() -> None:
    status = NodeAffinity().filter(CycleState(), pod(nodeSelector={"zone": "b"}), node("n1", LABELS))
    assert (status.code, status.reason, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) didn't match Pod's node affinity/selector",
        "NodeAffinity",
    )


def test_added_affinity_is_enforced_first_with_its_own_message() -> None:
    selector, errors = parse_node_selector({"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "b")]}]})
    assert not errors
    plugin = NodeAffinity(added_required=selector)
    status = plugin.filter(CycleState(), pod(nodeSelector={"zone": "c"}), node("n1", LABELS))
    assert status.reason == "node(s) didn't match scheduler-enforced node affinity"
    assert plugin.filter(CycleState(), pod(), node("n2", {"zone": "b"})).ok


def test_pre_filter_skips_pods_without_constraints_and_narrows_to_named_nodes() -> None:
    plugin = NodeAffinity()
    assert plugin.pre_filter(CycleState(), pod()).skip
    assert not plugin.pre_filter(CycleState(), pod(nodeSelector={"zone": "a"})).skip
    daemonset_pod = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "n2")]}))
    assert plugin.pre_filter(CycleState(), daemonset_pod).node_names == frozenset({"n2"})
    # terms are ORed: a term without metadata.name allows every node
    mixed = required({"matchFields": [expr("metadata.name", "In", "n2")]}, {"matchExpressions": [expr("a", "Exists")]})
    assert plugin.pre_filter(CycleState(), pod(affinity=mixed)).node_names is None
    union = required(
        {"matchFields": [expr("metadata.name", "In", "n1")]}, {"matchFields": [expr("metadata.name", "In", "n3")]}
    )
    assert plugin.pre_filter(CycleState(), pod(affinity=union)).node_names == frozenset({"n1", "n3"})
    conflict = required(
        {"matchFields": [expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n2")]},
    )
    status = plugin.pre_filter(CycleState(), pod(affinity=conflict)).status
    assert (status.code, status.reason) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod affinity terms conflict")


def test_schedule_one_with_a_daemonset_pod_reports_the_other_nodes_as_kube_scheduler_does() -> None:
    profile = Profile("p", (NodeName(), TaintToleration(), NodeAffinity()), ())
    nodes = [node("n1"), node("n2", taints=[taint("x", "NoSchedule")]), node("n3")]
    daemonset_pod = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "n2")]}))
    for explain in (False, True):
        result = schedule_one(profile, daemonset_pod, nodes, explain=explain)
        assert result.selected is None
        assert result.failure_summary() == (
            "0/3 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity], "
            "1 node(s) had untolerated taint {x: }."
        )
        assert result.nodes[0].filter.plugin == "NodeAffinity"
    ok = schedule_one(profile, pod(affinity=required({"matchFields": [expr("metadata.name", "In", "n3")]})), nodes)
    assert ok.selected == "n3"
    conflict = required({"matchFields": [expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n3")]})
    result = schedule_one(profile, pod(affinity=conflict), nodes)
    assert result.failure_summary() == "0/3 nodes are available: pod affinity terms conflict."
    assert all(r.filter.reason == "pod affinity terms conflict" for r in result.nodes)


def preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": weight, "preference": term} for weight, term in terms
            ]
        }
    }


def test_score_sums_matching_preferred_weights_and_normalizes_to_the_best_node() -> None:
    plugin = NodeAffinity()
    p = pod(
        affinity=preferred(
            (10, {"matchExpressions": [expr("zone", "In", "a")]}),
            (30, {"matchExpressions": [expr("disk", "In", "ssd")]}),
            (0, {"matchExpressions": [expr("zone", "Exists")]}),  # weight 0: left out
            (50, {}),  # empty term: left out
            (70, {"matchExpressions": [expr("zone", "Bogus", "a")]}),  # invalid: left out
        )
    )
    nodes = [node("both", {"zone": "a", "disk": "ssd"}), node("zone", {"zone": "a"}), node("none")]
    raw = {n.name: plugin.score(CycleState(), p, n) for n in nodes}
    assert raw == {"both": 40, "zone": 10, "none": 0}
    assert plugin.normalize(raw) == {"both": 100, "zone": 25, "none": 0}
    assert plugin.normalize({"a": 0, "b": 0}) == {"a": 0, "b": 0}
    profile = Profile("p", (NodeAffinity(),), ((plugin, 2),))
    result = schedule_one(profile, p, [nodes[2], nodes[1], nodes[0]])
    assert result.selected == "both"
    assert [r.score for r in result.nodes] == [0, 50, 200]


def test_added_preferred_terms_count_for_every_pod() -> None:
    terms, errors = parse_preferred_terms([{"weight": 5, "preference": {"matchExpressions": [expr("disk", "Exists")]}}])
    assert not errors
    plugin = NodeAffinity(added_preferred=terms)
    assert plugin.score(CycleState(), pod(), node("n", {"disk": "ssd"})) == 5
    assert plugin.score(CycleState(), pod(), node("n", {})) == 0


def test_parse_errors_carry_field_paths() -> None:
    raw = {
        "nodeSelectorTerms": [
            {"matchExpressions": [expr("zone", "In")]},
            {"matchExpressions": [expr("bad key!", "Exists")]},
            {"matchExpressions": [expr("n", "Gt", "1", "2")]},
            {"matchFields": [expr("metadata.name", "Exists")]},
        ]
    }
    _, errors = parse_node_selector(raw, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    prefix = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    assert errors == [
        f"{prefix}[0].matchExpressions[0].values: for 'In', 'NotIn' operators, values set can't be empty",
        f'{prefix}[1].matchExpressions[0].key: invalid label key "bad key!": the name must be 1-63 alphanumeric '
        "characters, '-', '_' or '.', starting and ending with an alphanumeric character",
        f"{prefix}[2].matchExpressions[0].values: for 'Gt', 'Lt' operators, exactly one value is required",
        f'{prefix}[3].matchFields[0].operator: unsupported value "Exists"; expected one of In, NotIn',
    ]


def test_required_node_affinity_reads_the_pod_spec() -> None:
    assert RequiredNodeAffinity.from_pod_spec({}).empty
    assert not RequiredNodeAffinity.from_pod_spec({"nodeSelector": {"a": "b"}}).empty
    assert RequiredNodeAffinity.from_pod_spec({"nodeSelector": {}}).empty
