"""How fast the node lifecycle controller taints failed nodes, per zone, and when it stops (`handleDisruption`).

kube-controller-manager does not taint every silent node at once: NoExecute taints (which make the taint eviction
controller delete pods) go through one rate-limited queue per zone (`zoneNoExecuteTainter`, a
`RateLimitedTimedQueue` with a token bucket of `--node-eviction-rate`, 0.1 per second, burst 1), and the rate follows
the zone's health (`ComputeZoneState`, `setLimiterInZone`):

- **Normal**: `--node-eviction-rate`.
- **PartialDisruption** (more than two nodes not Ready and at least `--unhealthy-zone-threshold`, 55%, of the zone):
  `--secondary-node-eviction-rate` (0.01) when the zone has more than `--large-cluster-size-threshold` (50) nodes,
  otherwise nothing is tainted (a small zone half down is more likely a network problem than fifty broken nodes).
- **FullDisruption** (no node Ready): `--node-eviction-rate`, unless *every* zone is fully disrupted: then the
  controller assumes it is the one cut off, removes the NoExecute taints of every node and stops tainting until a
  node is Ready again ("Entering master disruption mode"); leaving that mode gives every node a new grace period.

A zone is the node's region and zone labels (`GetZoneKey`); nodes labelled `node.kubernetes.io/exclude-disruption`
do not count. On `knuma up` the zone label is the node's pool, so a one-pool cluster whose every node stops keeps its
pods, as a real cluster would. Time is passed in (monotonic seconds); `knuma.local.controllers.manager` does the I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from knuma.kube.ratelimit import TokenBucket

__all__ = [
    "EVICTION_PERIOD",
    "EXCLUDE_DISRUPTION",
    "RETRY_WITHOUT_CONDITION",
    "EvictionRates",
    "RateLimitedTimedQueue",
    "Transition",
    "ZoneEvictions",
    "ZoneState",
    "compute_zone_state",
    "excluded",
    "zone_key",
]

EVICTION_PERIOD = 0.1
"""`NodeEvictionPeriod`: how often the tainting queues are tried."""
EVICTION_BURST = 1
"""`EvictionRateLimiterBurst`."""
RETRY_WITHOUT_CONDITION = 0.05
"""`doNoExecuteTaintingPass`: a queued node without a Ready condition is tried again 50 ms later."""
EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
"""A node with this label is left out of its zone's health (`isNodeExcludedFromDisruptionChecks`)."""


@dataclass(frozen=True)
class EvictionRates:
    """kube-controller-manager's flags, with their defaults
    (`RecommendedDefaultNodeLifecycleControllerConfiguration`)."""

    eviction_rate: float = 0.1
    """`--node-eviction-rate`: nodes tainted per second in a healthy zone."""
    secondary_eviction_rate: float = 0.01
    """`--secondary-node-eviction-rate`: in a partially disrupted zone larger than `large_cluster_size_threshold`."""
    large_cluster_size_threshold: int = 50
    """`--large-cluster-size-threshold`: a partially disrupted zone of at most this many nodes taints nothing."""
    unhealthy_zone_threshold: float = 0.55
    """`--unhealthy-zone-threshold`: the share of nodes not Ready (more than two) that makes a zone partially
    disrupted."""


class ZoneState(Enum):
    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


class Transition(Enum):
    """What `ZoneEvictions.handle` asks of the caller."""

    NONE = "none"
    ENTERED_MASTER_DISRUPTION = "entered"
    """Every zone is fully disrupted: remove the NoExecute unreachable / not-ready taints from every node."""
    EXITED_MASTER_DISRUPTION = "exited"
    """A node is Ready again: give every node a new grace period (probe timestamps to now)."""


def zone_key(node: Mapping[str, Any]) -> str:
    """`GetZoneKey`: region and zone labels (the deprecated failure-domain ones first); empty without either."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def excluded(node: Mapping[str, Any]) -> bool:
    return EXCLUDE_DISRUPTION in ((node.get("metadata") or {}).get("labels") or {})


def compute_zone_state(ready_statuses: Sequence[str], unhealthy_threshold: float) -> tuple[int, ZoneState]:
    """`ComputeZoneState`: (nodes not Ready, state) of a zone from its nodes' Ready condition statuses."""
    ready = sum(1 for status in ready_statuses if status == "True")
    not_ready = len(ready_statuses) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, ZoneState.FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_threshold:
        return not_ready, ZoneState.PARTIAL_DISRUPTION
    return not_ready, ZoneState.NORMAL


@dataclass(order=True)
class _Timed:
    process_at: float
    value: str = field(compare=False)


class RateLimitedTimedQueue:
    """`RateLimitedTimedQueue`: node names in the order they are due, each at most once until removed, handed out
    only while the token bucket allows (one token per item tried, whether it succeeds or is retried)."""

    def __init__(self, qps: float, now: float) -> None:
        self.limiter = TokenBucket(qps, EVICTION_BURST, now)
        self._heap: list[_Timed] = []
        self._set: set[str] = set()
        """Added and not removed: tried items that succeeded stay here, so they are not added again."""

    def add(self, value: str, now: float) -> bool:
        """`Add`: due now; False when already there (queued, or done and not removed since)."""
        if value in self._set:
            return False
        self._set.add(value)
        heapq.heappush(self._heap, _Timed(now, value))
        return True

    def remove(self, value: str) -> bool:
        """`Remove`: forget it, so it can be added again."""
        if value not in self._set:
            return False
        self._set.discard(value)
        self._drop(value)
        return True

    def due(self, now: float) -> str | None:
        """`Try`'s loop head: the next value to act on at `now`, taking a token; None when empty, rate limited or
        not yet due. The caller answers with `done` or `retry`."""
        if not self._heap or not self.limiter.try_accept(now):
            return None
        head = self._heap[0]
        return head.value if now >= head.process_at else None

    def done(self, value: str) -> None:
        """Acted on: out of the queue, kept in the set (`RemoveFromQueue`)."""
        self._drop(value)

    def retry(self, value: str, at: float) -> None:
        """Not acted on: try again at `at` (`Replace`)."""
        self._drop(value)
        heapq.heappush(self._heap, _Timed(at, value))

    def swap_limiter(self, qps: float, now: float) -> None:
        """`SwapLimiter`: a new bucket for a new rate, drained when the old one had no token (burst 1)."""
        if self.limiter.qps == qps:
            return
        if qps <= 0:
            self.limiter = TokenBucket.never(now)
            return
        replacement = TokenBucket(qps, EVICTION_BURST, now)
        if not self.limiter.try_accept(now):
            replacement.try_accept(now)
        self.limiter = replacement

    def __contains__(self, value: object) -> bool:
        return any(item.value == value for item in self._heap)

    def _drop(self, value: str) -> None:
        kept = [item for item in self._heap if item.value != value]
        if len(kept) != len(self._heap):
            self._heap = kept
            heapq.heapify(self._heap)


@dataclass
class ZoneEvictions:
    """The controller's zone states and NoExecute tainting queues (`zoneStates`, `zoneNoExecuteTainter`)."""

    rates: EvictionRates = field(default_factory=EvictionRates)
    states: dict[str, ZoneState] = field(default_factory=dict)
    tainters: dict[str, RateLimitedTimedQueue] = field(default_factory=dict)

    def tainter(self, zone: str, now: float) -> RateLimitedTimedQueue:
        """`addPodEvictorForNewZone`: the zone's queue, created (at the normal rate, state Initial) on first sight.
        Queues are never removed, as upstream's."""
        if zone not in self.tainters:
            self.tainters[zone] = RateLimitedTimedQueue(self.rates.eviction_rate, now)
        self.states.setdefault(zone, ZoneState.INITIAL)
        return self.tainters[zone]

    def handle(self, zone_statuses: Mapping[str, Sequence[str]], now: float) -> Transition:
        """`handleDisruption`, after a monitor pass: `zone_statuses` is each zone's Ready condition statuses (excluded
        nodes left out)."""
        new_states: dict[str, ZoneState] = {}
        all_are_fully_disrupted = True
        for zone, statuses in zone_statuses.items():
            _, state = compute_zone_state(statuses, self.rates.unhealthy_zone_threshold)
            if state is not ZoneState.FULL_DISRUPTION:
                all_are_fully_disrupted = False
            new_states[zone] = state
            self.tainter(zone, now)
        for zone in [z for z in self.states if z not in zone_statuses]:
            del self.states[zone]
        all_were_fully_disrupted = all(state is ZoneState.FULL_DISRUPTION for state in self.states.values())
        if all_are_fully_disrupted and all_were_fully_disrupted:
            return Transition.NONE
        if all_are_fully_disrupted:
            for zone in self.states:
                self.tainters[zone].swap_limiter(0, now)
                self.states[zone] = ZoneState.FULL_DISRUPTION
            return Transition.ENTERED_MASTER_DISRUPTION
        if all_were_fully_disrupted:
            for zone in self.states:
                self._set_limiter(zone, len(zone_statuses[zone]), new_states[zone], now)
                self.states[zone] = new_states[zone]
            return Transition.EXITED_MASTER_DISRUPTION
        for zone, state in list(self.states.items()):
            if state is not new_states[zone]:
                self._set_limiter(zone, len(zone_statuses[zone]), new_states[zone], now)
                self.states[zone] = new_states[zone]
        return Transition.NONE

    def in_master_disruption(self) -> bool:
        return bool(self.states) and all(s is ZoneState.FULL_DISRUPTION for s in self.states.values())

    def zones(self) -> Iterable[tuple[str, RateLimitedTimedQueue]]:
        return list(self.tainters.items())

    def _set_limiter(self, zone: str, size: int, state: ZoneState, now: float) -> None:
        """`setLimiterInZone` with `ReducedQPSFunc` for a partial disruption and `HealthyQPSFunc` for a full one."""
        if state is ZoneState.NORMAL or state is ZoneState.FULL_DISRUPTION:
            qps = self.rates.eviction_rate
        elif state is ZoneState.PARTIAL_DISRUPTION:
            qps = self.rates.secondary_eviction_rate if size > self.rates.large_cluster_size_threshold else 0.0
        else:
            return
        self.tainters[zone].swap_limiter(qps, now)
