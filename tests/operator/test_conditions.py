"""The four base conditions: exactly one True (Available also makes Upgradeable True), transition times kept while
a status does not flip."""

from __future__ import annotations

from knuma.operator.conditions import available, degraded, find, progressing, update_conditions


def test_exactly_one_true_and_transition_times() -> None:
    first = update_conditions([], progressing("ds is updating"), 1, "t1")
    assert [(c["type"], c["status"]) for c in first] == [
        ("Available", "False"),
        ("Upgradeable", "False"),
        ("Progressing", "True"),
        ("Degraded", "False"),
    ]
    assert find(first, "Progressing") == {
        "type": "Progressing",
        "status": "True",
        "reason": "Progressing",
        "message": "ds is updating",
        "lastTransitionTime": "t1",
        "observedGeneration": 1,
    }
    second = update_conditions(first, available("ok"), 2, "t2")
    assert {c["type"] for c in second if c["status"] == "True"} == {"Available", "Upgradeable"}
    assert find(second, "Degraded")["lastTransitionTime"] == "t1"  # type: ignore[index]
    assert find(second, "Available")["lastTransitionTime"] == "t2"  # type: ignore[index]
    third = update_conditions(second, degraded("", "boom"), 2, "t3")
    assert find(third, "Degraded")["reason"] == "InternalError"  # type: ignore[index]


def test_other_condition_types_are_kept() -> None:
    extra = {"type": "DedicatedInformerActive", "status": "Unknown"}
    out = update_conditions([extra], available(), 1, "t")
    assert out[-1] == extra
