"""Prometheus metrics of the scheduler daemon, named as kube-scheduler names them where one exists, so existing
dashboards and alerts work; knuma's own (NRT freshness, reservations) are prefixed `knuma_scheduler_`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["SchedulerMetrics"]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096)
_E2E_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84)


class _Gauges(Collector):
    """Gauges computed at scrape time from the live queue and cache, never stale."""

    def __init__(
        self,
        pending: Callable[[], Mapping[str, int]],
        nrt_ages: Callable[[], Iterable[float]],
        reserved: Callable[[], int],
    ) -> None:
        self.pending, self.nrt_ages, self.reserved = pending, nrt_ages, reserved

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("scheduler_pending_pods", "Pending pods by queue.", labels=["queue"])
        for queue, count in self.pending().items():
            family.add_metric([queue], count)
        yield family
        ages = list(self.nrt_ages())
        yield GaugeMetricFamily(
            "knuma_scheduler_nrt_cache_age_seconds",
            "Age of the oldest NodeResourceTopology data the scheduler holds (0 without any).",
            value=max(ages, default=0.0),
        )
        yield GaugeMetricFamily(
            "knuma_scheduler_nrt_nodes", "Nodes with NodeResourceTopology data in the cache.", value=len(ages)
        )
        yield GaugeMetricFamily(
            "knuma_scheduler_reserved_pods",
            "Pods reserved on NUMA zones because no NRT accounts for them yet.",
            value=self.reserved(),
        )


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Scheduling attempts by result (scheduled, unschedulable, error) and profile.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency (filter, score, reserve; binding excluded).",
            ["result", "profile"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.e2e_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "From the pod entering the queue to its successful binding, over all attempts.",
            ["attempts"],
            buckets=_E2E_BUCKETS,
            registry=self.registry,
        )
        self.binding_duration = Histogram(
            "scheduler_binding_duration_seconds",
            "Latency of the binding API call.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Times DefaultPreemption ran for a pod no node fits (kube-scheduler's metric).",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Pods evicted by one preemption (kube-scheduler's metric and buckets).",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=self.registry,
        )
        self.nrt_reconciles = Counter(
            "knuma_scheduler_nrt_fingerprint_checks",
            "NRT updates checked against the pods the scheduler knows, by result (matched, unmatched).",
            ["result"],
            registry=self.registry,
        )

    def watch(
        self,
        pending: Callable[[], Mapping[str, int]],
        nrt_ages: Callable[[], Iterable[float]],
        reserved: Callable[[], int],
    ) -> None:
        self.registry.register(_Gauges(pending, nrt_ages, reserved))
