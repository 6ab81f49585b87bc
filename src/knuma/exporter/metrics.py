"""Prometheus metrics of the exporter, on a registry of its own (several exporters can run in one test process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["ExporterMetrics"]

_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ExporterMetrics:
    def __init__(self, node: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.node = node
        self.updates = Counter(
            "knuma_exporter_updates",
            "NodeResourceTopology updates by outcome (create, update, unchanged) and trigger.",
            ["node", "operation", "trigger"],
            registry=self.registry,
        )
        self.update_duration = Histogram(
            "knuma_exporter_update_duration_seconds",
            "Time of one update: kubelet scan, build and publish.",
            ["node"],
            buckets=_FAST_BUCKETS,
            registry=self.registry,
        )
        self.podresources_duration = Histogram(
            "knuma_exporter_podresources_call_duration_seconds",
            "Latency of kubelet PodResources API calls.",
            ["node", "function"],
            buckets=_FAST_BUCKETS,
            registry=self.registry,
        )
        self.podresources_errors = Counter(
            "knuma_exporter_podresources_call_errors",
            "Failed kubelet PodResources API calls.",
            ["node", "function"],
            registry=self.registry,
        )
        self.publish_errors = Counter(
            "knuma_exporter_publish_errors",
            "Failed writes of the NodeResourceTopology object.",
            ["node"],
            registry=self.registry,
        )
        self.last_success = Gauge(
            "knuma_exporter_last_success_timestamp_seconds",
            "Unix time of the last update that reached the API server (or found it up to date).",
            ["node"],
            registry=self.registry,
        )

    def observe_call(self, function: str, seconds: float, ok: bool) -> None:
        """A `podresources.client.CallObserver`."""
        self.podresources_duration.labels(self.node, function).observe(seconds)
        if not ok:
            self.podresources_errors.labels(self.node, function).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
