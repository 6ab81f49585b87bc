"""Metrics of one simulation run, computed from the ground truth at the end and from the samples taken on the way.

- `placed`: pods a kubelet admitted (at any time); `running`: pods running at the end.
- `topology_affinity_errors`: kubelet rejections with `TopologyAffinityError`; `smt_alignment_errors`: with
  `SMTAlignmentError` (the CPU manager's `full-pcpus-only`); `other_admission_errors`: the rest, e.g. the
  kubelet's node-level rejections (`OutOfcpu`, ...).
- `pending`: pods never bound at the end; `false_negative_pending`: how many of those fresh data would place now
  (admitted one after the other, first fit, by the kubelet model on the ground truth).
- `cpu_utilization` / `memory_utilization`: requests of running pods over node allocatable, averaged over the last
  quarter of the simulated time (the final packing for static workloads, the steady state when pods come and go);
  `mean_cpu_utilization` and `mean_running`: averaged over the whole run, fill-up included;
  `zone_cpu_utilization` / `zone_memory_utilization`: exclusive CPUs / memory pinned per NUMA zone at the end
  (p10, mean, p90 over all zones); `cpus_placed`: CPUs requested by the pods running at the end (what
  `optimal-cpus` maximises).
- `stranded_cpus`: free CPUs (whole, allocatable) on nodes that cannot admit a single pod of any Guaranteed template
  in the workload: capacity that exists but no NUMA-aligned pod can use.
- with pods of more than one priority: `preempted`, the pods preemption evicted (victims), and
  `top_priority_running` of the `top_priority_pods` pods of the highest priority run at the end (a pod and its
  replacements count as one).
- `throughput_pods_per_s`: scheduling attempts per second of scheduler (wall) time; `latency_ms`: p50/p90/p99 of
  one attempt (filter + score of every node + reserve), wall time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from knuma.api.pod import Pod
from knuma.api.resources import CPU, MEMORY
from knuma.sim.engine import PodRecord, RunResult
from knuma.testbed.simkubelet import SimKubelet
from knuma.topology.kubelet import SMT_ALIGNMENT_ERROR, TOPOLOGY_AFFINITY_ERROR

__all__ = ["JSON_KEYS", "PREEMPTION_KEYS", "compute", "percentiles"]

JSON_KEYS = (
    "placed",
    "running",
    "topology_affinity_errors",
    "pending",
    "false_negative_pending",
    "cpu_utilization",
    "cpus_placed",
    "throughput_pods_per_s",
)
"""The keys `knuma simulate -o json` promises for every scheduler, in order."""

PREEMPTION_KEYS = ("top_priority_running", "top_priority_pods", "preempted")
"""The keys `-o json` adds when the workload has pods of more than one priority."""


def percentiles(values: Sequence[float], points: Sequence[float] = (50, 90, 99)) -> list[float]:
    if not values:
        return [0.0 for _ in points]
    return [float(v) for v in np.percentile(np.asarray(values), points)]


def compute(result: RunResult, templates: Sequence[Pod]) -> dict[str, Any]:
    """All metrics of `result`; the JSON contract's keys first."""
    records = list(result.pods.values())
    kubelets = list(result.kubelets.values())
    pending = [r for r in records if r.bound_at is None]
    tae = sum(1 for r in records if r.failure == TOPOLOGY_AFFINITY_ERROR)
    smt = sum(1 for r in records if r.failure == SMT_ALIGNMENT_ERROR)
    other = sum(1 for r in records if r.failure and r.failure not in (TOPOLOGY_AFFINITY_ERROR, SMT_ALIGNMENT_ERROR))
    latencies = result.latencies
    spent = sum(latencies)
    p50, p90, p99 = percentiles([1000 * x for x in latencies])
    return {
        "placed": sum(1 for r in records if r.admitted_at is not None),
        "running": sum(len(k.running) for k in kubelets),
        "topology_affinity_errors": tae,
        "smt_alignment_errors": smt,
        "pending": len(pending),
        "false_negative_pending": _false_negatives(result, [r.pod for r in pending], _in_flight(records)),
        "cpu_utilization": _late_mean(result, "cpu_utilization"),
        "throughput_pods_per_s": round(len(latencies) / spent, 1) if spent else 0.0,
        "memory_utilization": _late_mean(result, "memory_utilization"),
        "mean_cpu_utilization": round(float(np.mean([x.cpu_utilization for x in result.samples])), 4)
        if result.samples
        else 0.0,
        "mean_running": round(float(np.mean([x.running for x in result.samples])), 1) if result.samples else 0.0,
        "zone_cpu_utilization": _zones(result, CPU),
        "cpus_placed": sum(k.requested.get(CPU, 0) for k in kubelets) / 1000,
        "zone_memory_utilization": _zones(result, MEMORY),
        "other_admission_errors": other,
        "created": len(records),
        "stranded_cpus": _stranded_cpus(result, templates),
        "scheduling_attempts": len(latencies),
        "latency_ms": {"p50": round(p50, 3), "p90": round(p90, 3), "p99": round(p99, 3)},
        **_preemption(records),
        **result.stats,
    }


def _preemption(records: Sequence[PodRecord]) -> dict[str, Any]:
    """What preemption did, when the workload has pods of more than one priority (else nothing: it never ran).
    A pod and its replacements (a recreated pod after a rejection or an eviction) count as one."""
    priorities = {r.pod.priority for r in records}
    if len(priorities) < 2:
        return {}
    top = max(priorities)
    wanted = {r.origin or r.pod.name for r in records if r.pod.priority == top}
    running = {
        r.origin or r.pod.name
        for r in records
        if r.pod.priority == top and r.admitted_at is not None and r.finished_at is None
    }
    return {
        "preempted": sum(1 for r in records if r.evicted_at is not None),
        "top_priority_running": len(running),
        "top_priority_pods": len(wanted),
    }


def _in_flight(records: Sequence[PodRecord]) -> list[PodRecord]:
    """Pods bound whose kubelet has not decided yet when the run ends (their admission is after the horizon)."""
    return [r for r in records if r.bound_at is not None and r.admitted_at is None and not r.failure]


def _false_negatives(result: RunResult, pending: Sequence[Pod], in_flight: Sequence[PodRecord] = ()) -> int:
    """How many pending pods fresh data would place: admit them in queue order, first fit, on a copy of the ground
    truth (so capacity is counted once) after the pods in flight to their node (fresh data would count them in a
    moment: a pod bound in the run's last second is not room for another), on nodes that list every resource the
    pod requests (where NodeResourcesFit would place it); identical pods that found no node are not tried again."""
    copies = {name: _copy(k) for name, k in result.kubelets.items()}
    for record in in_flight:
        copies[record.node].admit(record.pod)
    kubelets = list(copies.values())
    placed = 0
    hopeless: set[tuple[Any, ...]] = set()
    for pod in pending:
        key = _shape(pod)
        if key in hopeless:
            continue
        for kubelet in kubelets:
            if kubelet.lists_resources_of(pod) and kubelet.admit(pod).admitted:
                placed += 1
                break
        else:
            hopeless.add(key)
    return placed


def _copy(kubelet: SimKubelet) -> SimKubelet:
    return SimKubelet(
        kubelet.name, kubelet.allocatable, kubelet.topology, dict(kubelet.requested), dict(kubelet.running)
    )


def _late_mean(result: RunResult, attribute: str, start: float = 0.75) -> float:
    """The mean of a sampled value over the samples taken in the last quarter of the run."""
    values = [getattr(s, attribute) for s in result.samples if s.time >= start * result.horizon]
    return round(float(np.mean(values)), 4) if values else 0.0


def _zones(result: RunResult, name: str) -> dict[str, float]:
    """Exclusive `name` in use per NUMA zone at the end (what the CPU and memory managers pinned): p10/mean/p90."""
    shares = [
        (zone.allocatable[name] - zone.available.get(name, 0)) / zone.allocatable[name]
        for kubelet in result.kubelets.values()
        for zone in kubelet.topology.zones
        if zone.allocatable.get(name)
    ]
    if not shares:
        return {"p10": 0.0, "mean": 0.0, "p90": 0.0}
    p10, p90 = np.percentile(np.asarray(shares), [10, 90])
    return {"p10": round(float(p10), 3), "mean": round(float(np.mean(shares)), 3), "p90": round(float(p90), 3)}


def _stranded_cpus(result: RunResult, templates: Sequence[Pod]) -> int:
    """Free CPUs on nodes where no Guaranteed template (NUMA-aligned work) would be admitted any more."""
    aligned = [pod for pod in templates if pod.pinned_by_managers] or list(templates)
    stranded = 0
    for kubelet in result.kubelets.values():
        free = kubelet.allocatable.get(CPU, 0) - kubelet.requested.get(CPU, 0)
        if free >= 1000 and not any(kubelet.lists_resources_of(pod) and kubelet.would_admit(pod) for pod in aligned):
            stranded += free // 1000
    return stranded


def _shape(pod: Pod) -> tuple[Any, ...]:
    return (
        pod.qos,
        tuple(sorted(pod.pod_requests.items())),
        tuple((c.kind, tuple(sorted(c.requests.items()))) for c in pod.all_containers),
    )
