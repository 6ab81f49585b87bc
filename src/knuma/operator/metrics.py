"""Prometheus metrics of the operator, named as controller-runtime names them (numaresources-operator is a
controller-runtime manager, so its dashboards and alerts keep working): reconciles per controller and result, errors,
durations; plus whether this replica leads.

A "controller" is the custom resource kind a pass reconciled (`numaresourcesoperator`, `numaresourcesscheduler`, as
upstream's controller names); results are controller-runtime's: `success`, `error`, `requeue_after` (a workload is
still rolling out and the pass asked to look again).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["OperatorMetrics", "Result"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Result:
    SUCCESS = "success"
    ERROR = "error"
    REQUEUE_AFTER = "requeue_after"


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Reconciles per controller and result (success, error, requeue_after).",
            ["controller", "result"],
            registry=self.registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles that ended in an error (Degraded, or the pass failed), per controller.",
            ["controller"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time of one reconcile of one custom resource, per controller.",
            ["controller"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.passes_failed = Counter(
            "knuma_operator_pass_failures_total",
            "Reconcile passes that failed as a whole (API server unreachable, unexpected error); retried with backoff.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "1 while this replica holds the leader Lease (or runs without leader election), else 0.",
            ["name"],
            registry=self.registry,
        )

    def record(self, controller: str, result: str, seconds: float) -> None:
        self.reconciles.labels(controller, result).inc()
        if result == Result.ERROR:
            self.errors.labels(controller).inc()
        self.duration.labels(controller).observe(seconds)
