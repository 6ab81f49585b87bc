"""The `EvictionInProgress` condition of a DeviceTaintRule (upstream's `maybeUpdateRuleStatus`, `countPendingPods`,
`countTaintedDevices`, `ruleStatusPeriod`), as pure functions: upstream's messages to the letter, when a rewrite is
due, and what the `None` effect's dry run counts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.local.controllers.device_taint_eviction import eviction_delay
from knuma.local.controllers.taint_rule_status import (
    RuleCounts,
    RuleQueue,
    allocated_devices,
    eviction_condition,
    pending_pods,
    published_devices,
    rule_selects,
    seconds_until_update,
    with_condition,
)

DRIVER = "gpu.example.com"
NOW = dt.datetime(2026, 11, 29, 12, 0, 10, tzinfo=dt.UTC)


def _rule(effect: str = "None", **selector: Any) -> DeviceTaintRule:
    spec = {"deviceSelector": selector, "taint": {"key": "example.com/down", "effect": effect}}
    return DeviceTaintRule.from_dict({"metadata": {"name": "down"}, "spec": spec})


def _slice(name: str, pool: str, generation: int, *devices: tuple[str, str]) -> ResourceSlice:
    listed = [{"name": d, "attributes": {"model": {"string": model}}} for d, model in devices]
    spec = {
        "driver": DRIVER,
        "nodeName": pool,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
        "devices": listed,
    }
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def _claim(name: str, *devices: str, namespace: str = "default", tolerations: Any = None) -> dict[str, Any]:
    results = [
        {
            "request": "gpu",
            "driver": DRIVER,
            "pool": "node-1",
            "device": d,
            **({"tolerations": tolerations} if tolerations else {}),
        }
        for d in devices
    ]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _pod(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, **meta}, "spec": {"nodeName": "node-1"}}


@pytest.mark.parametrize(
    ("effect", "counts", "evicted", "status", "reason", "message"),
    [
        ("NoExecute", RuleCounts(1, 1), 0, "True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace."),
        (
            "NoExecute",
            RuleCounts(3, 2),
            1,
            "True",
            "PodsPendingEviction",
            "3 pods need to be evicted in 2 different namespaces. 1 pod evicted since starting the controller.",
        ),
        ("NoExecute", RuleCounts(), 2, "False", "Completed", "2 pods evicted since starting the controller."),
        ("NoExecute", RuleCounts(), 0, "False", "NotStarted", ""),
        (
            "NoSchedule",
            RuleCounts(),
            0,
            "False",
            "OtherEffect",
            "Eviction only happens for the NoExecute effect.",
        ),
        (
            "None",
            RuleCounts(1, 1, 8, 1),
            0,
            "False",
            "NoEffect",
            "8 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
            "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
            "trigger an update.",
        ),
        (
            "None",
            RuleCounts(0, 0, 1, 0),
            0,
            "False",
            "NoEffect",
            "1 published device selected. 0 allocated devices selected. 0 pods would be evicted in 0 different "
            "namespaces if the effect was NoExecute. This information will not be updated again. Recreate the "
            "DeviceTaintRule to trigger an update.",
        ),
    ],
)
def test_the_condition_says_what_upstream_says(
    effect: str, counts: RuleCounts, evicted: int, status: str, reason: str, message: str
) -> None:
    assert eviction_condition(effect, 3, counts, evicted) == {
        "type": "EvictionInProgress",
        "status": status,
        "observedGeneration": 3,
        "reason": reason,
        "message": message,
    }


def test_a_rewrite_waits_for_the_status_period_unless_the_generation_changed() -> None:
    written = {"type": "EvictionInProgress", "observedGeneration": 2, "lastTransitionTime": "2026-11-29T12:00:06Z"}
    assert seconds_until_update(None, 2, NOW) == 0  # never written: at once
    assert seconds_until_update(written, 2, NOW) == pytest.approx(6.0)  # 4 s of upstream's 10 s passed
    assert seconds_until_update(written, 2, NOW, period=3.0) == 0
    assert seconds_until_update(written, 3, NOW) == 0  # the spec changed
    assert seconds_until_update({**written, "lastTransitionTime": "2026-11-29T11:59:00Z"}, 2, NOW) == 0


def test_the_condition_is_replaced_only_when_it_says_something_new() -> None:
    ready = {"type": "example.com/Audited", "status": "True", "reason": "Ok", "lastTransitionTime": "t0"}
    pending = eviction_condition("NoExecute", 1, RuleCounts(1, 1), 0)
    first = with_condition([ready], pending, "t1")
    assert first == [ready, {**pending, "lastTransitionTime": "t1"}]
    assert with_condition(first, pending, "t2") is None  # nothing new: no write
    done = eviction_condition("NoExecute", 1, RuleCounts(), 1)
    assert with_condition(first, done, "t3") == [ready, {**done, "lastTransitionTime": "t3"}]
    # A condition as the server returns it (an empty message may be absent) is the same condition.
    not_started = eviction_condition("NoExecute", 1, RuleCounts(), 0)
    served = {k: v for k, v in not_started.items() if k != "message"} | {"lastTransitionTime": "t4"}
    assert with_condition([served], not_started, "t5") is None


def test_published_devices_are_those_of_the_newest_pool_generation_the_rule_selects() -> None:
    stale = _slice("old", "node-1", 1, ("gpu-0", "a100"), ("gpu-9", "a100"))
    current = _slice("new", "node-1", 2, ("gpu-0", "a100"), ("gpu-1", "h100"))
    other = _slice("other", "node-2", 1, ("gpu-0", "a100"))
    slices = [stale, current, other]
    assert published_devices(_rule(pool="node-1"), slices, {}) == {
        (DRIVER, "node-1", "gpu-0"),
        (DRIVER, "node-1", "gpu-1"),
    }
    assert published_devices(_rule(device="gpu-0"), slices, {}) == {
        (DRIVER, "node-1", "gpu-0"),
        (DRIVER, "node-2", "gpu-0"),
    }
    h100 = DeviceClass.from_dict(
        {
            "metadata": {"name": "h100"},
            "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "h100"'}}]},
        }
    )
    assert published_devices(_rule(deviceClassName="h100"), slices, {"h100": h100}) == {(DRIVER, "node-1", "gpu-1")}
    no_selector = DeviceTaintRule.from_dict(
        {"metadata": {"name": "all"}, "spec": {"taint": {"key": "example.com/down", "effect": "None"}}}
    )
    assert published_devices(no_selector, slices, {}) == set()


def test_allocated_devices_are_the_allocation_results_the_rule_selects() -> None:
    slices = [_slice("s", "node-1", 1, ("gpu-0", "a100"), ("gpu-1", "h100"))]
    claims = [_claim("a", "gpu-0"), _claim("b", "gpu-0", "gpu-1"), _claim("gone", "gpu-7")]
    by_name = _rule(device="gpu-0")
    assert allocated_devices(by_name, published_devices(by_name, slices, {}), claims) == 2  # shared: counted twice
    by_pool = _rule(pool="node-1")
    # gpu-7 is published by no slice, but upstream's `ruleMatchesDevice` matches by names alone.
    assert allocated_devices(by_pool, published_devices(by_pool, slices, {}), claims) == 4
    cel = _rule(selectors=[{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "a100"'}}])
    assert allocated_devices(cel, published_devices(cel, slices, {}), claims) == 2


def test_pending_pods_are_those_the_taint_as_no_execute_evicts() -> None:
    rule = _rule(device="gpu-0")
    selects = rule_selects(rule, {(DRIVER, "node-1", "gpu-0")})
    exists = {"key": "example.com/down", "operator": "Exists", "effect": "NoExecute"}
    claims = {
        "default/trainer": _claim("trainer", "gpu-0"),
        "default/tolerant": _claim("tolerant", "gpu-0", tolerations=[exists]),
        "default/patient": _claim("patient", "gpu-0", tolerations=[{**exists, "tolerationSeconds": 60}]),
        "team-b/other": _claim("other", "gpu-0", namespace="team-b"),
        "default/elsewhere": _claim("elsewhere", "gpu-1"),
        "default/leaving": _claim("leaving", "gpu-0"),
    }
    pods = [
        _pod("trainer"),
        _pod("tolerant"),  # tolerates it for ever: never evicted
        _pod("patient"),  # evicted after 60 s: pending
        _pod("other", "team-b"),
        _pod("elsewhere"),  # another device
        _pod("leaving", deletionTimestamp="2026-11-29T12:00:00Z"),  # already being deleted
    ]

    def claims_of(pod: Any) -> list[Any]:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        return [claims[key]]

    assert pending_pods(rule, selects, pods, claims_of, eviction_delay) == (3, 2)
    # The effect does not matter: `None` is counted as if it were `NoExecute`.
    assert pending_pods(_rule("NoSchedule", device="gpu-0"), selects, pods, claims_of, eviction_delay) == (3, 2)


def test_a_look_queued_for_later_survives_one_done_now() -> None:
    queue = RuleQueue()
    queue.add("evicting", 10.0)  # after an eviction: `AddAfter(ruleStatusPeriod)`
    queue.add("evicting", 0.0)  # and at once, the rule being new
    queue.add("other", 5.0)
    assert queue.take(1.0) == ["evicting"]
    assert queue.take(1.0) == []
    assert queue.take(10.0) == ["other", "evicting"]  # earliest first, each once
    assert "evicting" not in queue
    queue.add("gone", 1.0)
    queue.drop("gone")
    assert queue.take(2.0) == []
