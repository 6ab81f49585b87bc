from __future__ import annotations

from knuma.bench.exporter import bench_build, synthetic_kubelet, synthetic_machine
from knuma.exporter.builder import BuildOptions, build


def test_synthetic_node_shape() -> None:
    machine = synthetic_machine()
    assert len(machine.nodes) == 8
    assert len(machine.cpu_to_node) == 256
    state = synthetic_kubelet(machine, 500)
    assert len(state.pods) == 500
    result = build(machine, state, BuildOptions("bench"))
    pinned = [p for p in state.pods if p.containers[0].cpu_ids]
    assert 100 <= len(pinned) <= 200
    assert result.pods == len(pinned)  # the fingerprint counts the pods with exclusive resources
    cpu = [r for z in result.nrt.zones for r in z.resources if r.name == "cpu"]
    assert sum(r.allocatable for r in cpu) == (256 - 16) * 1000
    assert sum(r.allocatable - r.available for r in cpu) == 2 * len(pinned) * 1000


def test_bench_build_runs() -> None:
    timing = bench_build(runs=5)
    assert timing.runs == 5
    assert 0 < timing.min_ms <= timing.median_ms <= timing.p95_ms


def test_bench_scan_build_publish_runs_against_a_real_api_server() -> None:
    """The API server path of `make bench` (a CRD the server accepts, real gRPC scans, real publishes)."""
    from knuma.bench.exporter import bench_scan_build_publish

    timings = bench_scan_build_publish(runs=2, pods=20)
    assert timings and all(t.runs >= 2 and 0 < t.min_ms <= t.median_ms for t in timings)
