"""The throughput benchmark's worst-case workload really never repeats a pod shape."""

from __future__ import annotations

from collections.abc import Hashable

from knuma.api.pod import Pod, QOSClass
from knuma.bench.throughput import cluster, measure, new_shape_workload, workload
from knuma.scheduler.fast.vectorized import VectorizedScheduler


def shape(pod: Pod) -> Hashable:
    """What the vectorised path's per-shape results depend on (QoS and each container's requests)."""
    return pod.qos, tuple(tuple(sorted(c.requests.items())) for c in pod.containers)


def test_every_pod_of_the_worst_case_is_a_new_shape() -> None:
    pods = new_shape_workload(3000)
    assert len({shape(p) for p in pods}) == len(pods)
    assert {p.qos for p in pods} == {QOSClass.GUARANTEED, QOSClass.BURSTABLE}  # the usual mix's classes
    assert len({shape(p) for p in workload(3000)}) <= 1 + 12 + 12 * 12  # the usual mix: at most 157 shapes


def test_the_worst_case_workload_schedules_on_a_small_cluster() -> None:
    result = measure(VectorizedScheduler(cluster(30, (2, 4))).schedule, new_shape_workload(40))
    assert result.pods == 40 and result.scheduled == 40
