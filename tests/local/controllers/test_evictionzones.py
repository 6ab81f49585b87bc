"""Per-zone NoExecute tainting and master disruption mode (`knuma.local.controllers.evictionzones`), case by case
against kube-controller-manager's `GetZoneKey`, `ComputeZoneState`, `RateLimitedTimedQueue`, `SwapLimiter` and
`handleDisruption`."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.local.controllers.evictionzones import (
    EvictionRates,
    RateLimitedTimedQueue,
    Transition,
    ZoneEvictions,
    ZoneState,
    compute_zone_state,
    excluded,
    zone_key,
)


def labelled(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


def test_zone_key_reads_region_and_zone_labels_deprecated_first() -> None:
    assert zone_key(labelled()) == ""
    assert zone_key({"metadata": {"name": "n"}}) == ""
    assert zone_key(labelled(**{"topology.kubernetes.io/zone": "a"})) == ":\x00:a"
    both = {"topology.kubernetes.io/zone": "a", "failure-domain.beta.kubernetes.io/zone": "old"}
    assert zone_key(labelled(**both, **{"topology.kubernetes.io/region": "r"})) == "r:\x00:old"
    assert excluded(labelled(**{"node.kubernetes.io/exclude-disruption": ""}))
    assert not excluded(labelled())


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["Unknown"], (1, ZoneState.FULL_DISRUPTION)),
        (["False", "Unknown"], (2, ZoneState.FULL_DISRUPTION)),
        (["True", "Unknown", "Unknown"], (2, ZoneState.NORMAL)),  # more than two needed
        (["True", "Unknown", "Unknown", "False"], (3, ZoneState.PARTIAL_DISRUPTION)),  # 75% >= 55%
        (["True", "True", "True", "Unknown", "Unknown", "Unknown"], (3, ZoneState.NORMAL)),  # 50% < 55%
        (["True"], (0, ZoneState.NORMAL)),
    ],
)
def test_compute_zone_state(statuses: list[str], expected: tuple[int, ZoneState]) -> None:
    assert compute_zone_state(statuses, 0.55) == expected


def test_the_queue_hands_out_one_node_per_token_each_once_until_removed() -> None:
    queue = RateLimitedTimedQueue(qps=0.1, now=0.0)
    assert queue.add("a", 0.0) and queue.add("b", 0.5)
    assert not queue.add("a", 1.0)  # already there
    assert queue.due(1.0) == "a"
    queue.done("a")
    assert queue.due(1.1) is None  # the burst of 1 is spent: 10 s per node
    assert queue.due(10.9) is None
    assert queue.due(11.2) == "b"
    queue.retry("b", at=11.2)  # the write failed: again when a token comes
    assert queue.due(15.0) is None
    assert queue.due(21.3) == "b"
    queue.done("b")
    assert not queue.add("a", 30.0)  # done, not removed: not queued again
    assert queue.remove("a") and queue.add("a", 30.0)
    assert "a" in queue and "b" not in queue


def test_swapping_the_limiter_keeps_an_empty_bucket_empty() -> None:
    queue = RateLimitedTimedQueue(qps=0.1, now=0.0)
    queue.add("a", 0.0)
    queue.swap_limiter(0.1, 0.0)  # same rate: the same bucket
    queue.swap_limiter(0.0, 0.0)
    assert queue.due(100.0) is None  # stopped
    queue.swap_limiter(0.1, 100.0)  # the stopped limiter never has a token: the new bucket starts drained
    assert queue.due(100.0) is None
    assert queue.due(110.1) == "a"
    queue.retry("a", 110.1)
    queue.swap_limiter(0.2, 110.1)  # the old bucket was just spent: the new one is drained too
    assert queue.due(110.1) is None
    assert queue.due(115.2) == "a"


def test_a_new_rate_starts_full_when_the_old_bucket_had_a_token() -> None:
    queue = RateLimitedTimedQueue(qps=0.1, now=0.0)
    queue.add("a", 0.0)
    queue.swap_limiter(0.01, 0.0)  # the old bucket's token is spent by the check, the new one is full
    assert queue.due(0.0) == "a"


def test_every_zone_down_is_master_disruption_and_a_ready_node_ends_it() -> None:
    zones = ZoneEvictions(EvictionRates())
    assert zones.handle({"a": ["True", "True"], "b": ["True"]}, now=0.0) is Transition.NONE
    assert zones.states == {"a": ZoneState.NORMAL, "b": ZoneState.NORMAL}
    # one zone fully down: tainted at the normal rate (its nodes are broken, not the controller)
    assert zones.handle({"a": ["True", "True"], "b": ["Unknown"]}, now=5.0) is Transition.NONE
    assert zones.states["b"] is ZoneState.FULL_DISRUPTION and zones.tainters["b"].limiter.qps == 0.1
    # every zone down: stop tainting
    assert (
        zones.handle({"a": ["Unknown", "Unknown"], "b": ["Unknown"]}, now=10.0) is Transition.ENTERED_MASTER_DISRUPTION
    )
    assert zones.in_master_disruption()
    assert all(queue.limiter.qps == 0 for _, queue in zones.zones())
    assert zones.handle({"a": ["Unknown", "Unknown"], "b": ["Unknown"]}, now=15.0) is Transition.NONE
    # one node back: the rates follow each zone's state again
    assert zones.handle({"a": ["True", "Unknown"], "b": ["Unknown"]}, now=20.0) is Transition.EXITED_MASTER_DISRUPTION
    assert zones.states == {"a": ZoneState.NORMAL, "b": ZoneState.FULL_DISRUPTION}
    assert zones.tainters["a"].limiter.qps == 0.1 and zones.tainters["b"].limiter.qps == 0.1
    assert not zones.in_master_disruption()


def test_a_single_zone_cluster_that_loses_every_node_enters_master_disruption_at_once() -> None:
    zones = ZoneEvictions(EvictionRates())
    assert zones.handle({"": ["Unknown"]}, now=0.0) is Transition.ENTERED_MASTER_DISRUPTION
    assert zones.handle({}, now=5.0) is Transition.NONE  # no nodes: nothing to decide


def test_a_partially_disrupted_zone_taints_slowly_when_large_and_not_at_all_when_small() -> None:
    rates = EvictionRates(large_cluster_size_threshold=4)
    zones = ZoneEvictions(rates)
    small = ["True", "Unknown", "Unknown", "Unknown"]
    large = ["True", "True", "Unknown", "Unknown", "Unknown", "Unknown"]
    zones.handle({"small": ["True"] * 4, "large": ["True"] * 6}, now=0.0)
    zones.handle({"small": small, "large": large}, now=5.0)
    assert zones.states == {"small": ZoneState.PARTIAL_DISRUPTION, "large": ZoneState.PARTIAL_DISRUPTION}
    assert zones.tainters["small"].limiter.qps == 0.0
    assert zones.tainters["large"].limiter.qps == rates.secondary_eviction_rate
    zones.handle({"small": ["True"] * 4, "large": ["True"] * 6}, now=10.0)
    assert zones.tainters["small"].limiter.qps == rates.eviction_rate
