"""`ValidatePodUpdate`: what an update of a pod may change in its spec, with kube-apiserver's fields and messages."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from knuma.api.podupdate import pod_update_errors
from knuma.api.podvalidation import FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_REQUIRED, FieldError

PREFIX = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"


def _spec() -> dict[str, Any]:
    return {
        "schedulerName": "default-scheduler",
        "nodeName": "node-1",
        "containers": [
            {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}
        ],
        "initContainers": [{"name": "init", "image": "init:1"}],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}],
        "terminationGracePeriodSeconds": 30,
    }


def _updated(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(_spec())
    spec.update(changes)
    return spec


@pytest.mark.parametrize(
    "new",
    [
        _spec(),
        _updated(containers=[{**_spec()["containers"][0], "image": "app:2"}]),
        _updated(initContainers=[{"name": "init", "image": "init:2"}]),
        _updated(activeDeadlineSeconds=60),
        _updated(
            tolerations=[{**_spec()["tolerations"][0], "tolerationSeconds": 10}, {"key": "x", "operator": "Exists"}]
        ),
        # the same spec as the Go struct holds it: quantities by value, zero values and absent fields alike
        _updated(
            containers=[
                {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "1000m"}, "limits": {"cpu": 1}}}
            ],
            hostNetwork=False,
            volumes=[],
            affinity=None,
        ),
    ],
)
def test_what_an_update_may_change(new: dict[str, Any]) -> None:
    assert pod_update_errors(_spec(), new) == []


@pytest.mark.parametrize(
    ("change", "changed_line"),
    [
        ({"nodeName": "node-2"}, 'spec.nodeName: "node-1" -> "node-2"'),
        (
            {"schedulerName": "topology-aware-scheduler"},
            'spec.schedulerName: "default-scheduler" -> "topology-aware-scheduler"',
        ),
        ({"hostNetwork": True}, "spec.hostNetwork: null -> true"),
        ({"priorityClassName": "high"}, 'spec.priorityClassName: null -> "high"'),
        # pointer fields: nil is not a pointer to a zero value (`Semantic.DeepEqual` on the Go structs)
        ({"automountServiceAccountToken": False}, "spec.automountServiceAccountToken: null -> false"),
        ({"securityContext": {"runAsUser": 0}}, 'spec.securityContext: null -> {"runAsUser": 0}'),
        (
            {"containers": [{**_spec()["containers"][0], "securityContext": {}}]},
            "spec.containers[0].securityContext: null -> {}",
        ),
        (
            {"containers": [{**_spec()["containers"][0], "securityContext": {"privileged": False}}]},
            'spec.containers[0].securityContext: null -> {"privileged": false}',
        ),
    ],
)
def test_any_other_field_is_forbidden_naming_what_changed(change: dict[str, Any], changed_line: str) -> None:
    errors = pod_update_errors(_spec(), _updated(**change))
    assert [(e.reason, e.field) for e in errors] == [(FIELD_VALUE_FORBIDDEN, "spec")]
    assert errors[0].message.startswith(PREFIX)
    assert errors[0].message.endswith("\n" + changed_line)


def test_a_container_command_is_immutable_though_its_image_is_not() -> None:
    container = {**_spec()["containers"][0], "image": "app:2", "command": ["sleep", "1"]}
    errors = pod_update_errors(_spec(), _updated(containers=[container]))
    assert errors[0].message.endswith('\nspec.containers[0].command: null -> ["sleep", "1"]')


def test_containers_may_not_be_added_or_removed() -> None:
    more = _updated(containers=[*_spec()["containers"], {"name": "sidecar", "image": "s:1"}])
    assert pod_update_errors(_spec(), more) == [
        FieldError(FIELD_VALUE_FORBIDDEN, "spec.containers", "Forbidden: pod updates may not add or remove containers")
    ]


def test_an_image_must_be_set_and_unpadded() -> None:
    blank = _updated(containers=[{**_spec()["containers"][0], "image": ""}])
    assert pod_update_errors(_spec(), blank) == [
        FieldError(FIELD_VALUE_REQUIRED, "spec.containers[0].image", "Required value")
    ]
    padded = _updated(containers=[{**_spec()["containers"][0], "image": " app:2"}])
    assert pod_update_errors(_spec(), padded) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.containers[0].image",
            'Invalid value: " app:2": must not have leading or trailing whitespace',
        )
    ]


def test_active_deadline_seconds_may_be_set_or_lowered_only() -> None:
    old = _updated(activeDeadlineSeconds=60)
    assert pod_update_errors(old, _updated(activeDeadlineSeconds=30)) == []
    assert pod_update_errors(old, _updated(activeDeadlineSeconds=61)) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.activeDeadlineSeconds",
            "Invalid value: 61: must be less than or equal to previous value",
        )
    ]
    assert pod_update_errors(old, _spec()) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.activeDeadlineSeconds",
            "Invalid value: null: must not update from a positive integer to nil value",
        )
    ]
    assert pod_update_errors(_spec(), _updated(activeDeadlineSeconds=2**31))[0].message == (
        "Invalid value: 2147483648: must be between 0 and 2147483647, inclusive"
    )


def test_tolerations_may_only_be_added() -> None:
    assert pod_update_errors(_spec(), _updated(tolerations=[])) == [
        FieldError(
            FIELD_VALUE_FORBIDDEN,
            "spec.tolerations",
            "Forbidden: existing toleration can not be modified except its tolerationSeconds",
        )
    ]


def test_scheduling_gates_may_only_be_removed_and_a_gated_pods_node_selector_may_change() -> None:
    gated = _updated(schedulingGates=[{"name": "a"}, {"name": "b"}], nodeName=None)
    released = _updated(schedulingGates=[{"name": "b"}], nodeName=None, nodeSelector={"zone": "a"})
    assert pod_update_errors(gated, released) == []
    added = _updated(schedulingGates=[{"name": "a"}, {"name": "b"}, {"name": "c"}], nodeName=None)
    assert pod_update_errors(gated, added) == [
        FieldError(
            FIELD_VALUE_FORBIDDEN,
            "spec.schedulingGates[2].name",
            "Forbidden: only deletion is allowed, but found new scheduling gate 'c'",
        )
    ]
    narrowed = _updated(schedulingGates=[{"name": "b"}], nodeName=None, nodeSelector={"zone": "b"})
    assert pod_update_errors(released, narrowed) == [
        FieldError(
            FIELD_VALUE_INVALID,
            "spec.nodeSelector",
            'Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',
        )
    ]
    ungated = _updated(nodeSelector={"zone": "a"})
    assert pod_update_errors(_spec(), ungated)[0].message.endswith('\nspec.nodeSelector: null -> {"zone": "a"}')


def test_a_negative_grace_period_may_become_one() -> None:
    negative = _updated(terminationGracePeriodSeconds=-1)
    assert pod_update_errors(negative, _updated(terminationGracePeriodSeconds=1)) == []
    assert pod_update_errors(_spec(), _updated(terminationGracePeriodSeconds=1)) != []


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


ZONE = {"key": "zone", "operator": "In", "values": ["a"]}
RACK = {"key": "rack", "operator": "Exists"}


def test_a_gated_pods_required_node_affinity_terms_may_only_gain_requirements() -> None:
    """`validateNodeAffinityMutation` / `validateNodeSelectorTermHasOnlyAdditions`."""
    gated = {"schedulingGates": [{"name": "q"}], "nodeName": None}
    none = _updated(**gated)
    one = _updated(**gated, affinity=_required({"matchExpressions": [ZONE]}))
    assert pod_update_errors(none, one) == []  # no required affinity before: anything may be set
    narrower = _updated(**gated, affinity=_required({"matchExpressions": [ZONE, RACK]}))
    assert pod_update_errors(one, narrower) == []
    changed = _updated(**gated, affinity=_required({"matchExpressions": [RACK]}))
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    assert pod_update_errors(one, changed) == [
        FieldError(
            FIELD_VALUE_INVALID,
            f"{path}[0]",
            'Invalid value: {"matchExpressions":[{"key":"rack","operator":"Exists"}]}: only additions are allowed '
            "(no mutations or deletions)",
        )
    ]
    another_term = _updated(**gated, affinity=_required({"matchExpressions": [ZONE]}, {"matchFields": [RACK]}))
    assert [(e.field, e.message.split(": ")[-1]) for e in pod_update_errors(one, another_term)] == [
        (path, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")
    ]
    assert pod_update_errors(
        _updated(affinity=_required({"matchExpressions": [ZONE]})),
        _updated(affinity=_required({"matchExpressions": [ZONE, RACK]})),
    )[0].message.startswith(PREFIX)  # an ungated pod's affinity is immutable


def test_a_gated_pods_node_affinity_is_set_beside_its_pod_affinity_but_no_pod_affinity_comes_with_it() -> None:
    """`ValidatePodUpdate`'s munging of a gated pod's `affinity` (a pointer): the node affinity is taken from the old
    spec, and an `affinity` that held nothing else before goes back to none, so setting a node affinity is no
    change; a pod affinity that comes with it is one."""
    gated = {"schedulingGates": [{"name": "q"}], "nodeName": None}
    pod_affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    with_pod_affinity = _updated(**gated, affinity=pod_affinity)
    both = _updated(**gated, affinity={**pod_affinity, **_required({"matchExpressions": [ZONE]})})
    assert pod_update_errors(with_pod_affinity, both) == []
    errors = pod_update_errors(_updated(**gated), both)
    assert [(e.reason, e.field) for e in errors] == [(FIELD_VALUE_FORBIDDEN, "spec")]
    assert errors[0].message.endswith("\nspec.affinity: null -> " + json.dumps(pod_affinity, sort_keys=True))
