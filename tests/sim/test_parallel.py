"""`knuma simulate --jobs`: the schedulers' simulations in worker processes give what one process gives, and a
failing worker stops the whole run at once, with a one-line error and no process left behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from knuma.bench.simulate import scenario as scaled
from knuma.errors import InvalidInput
from knuma.sim.comparison import compare
from knuma.sim.engine import RunResult
from knuma.sim.parallel import DISPATCH_ORDER, WorkerFailed, available_cpus
from knuma.sim.schedulers import PRODUCT
from knuma.sim.spec import Scenario, scenario_from_dict

from .conftest import small_scenario

TIMING = ("throughput_pods_per_s", "latency_ms")


def _children() -> list[int]:
    """PIDs of this process's live children (from /proc). Tests compare them with the children alive before they
    started: earlier tests of the same pytest run may still be reaping processes of their own."""
    me, out = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def _placements(result: RunResult) -> dict[str, tuple[object, ...]]:
    return {
        key: (r.node, r.failure, r.bound_at, r.admitted_at, r.finished_at, r.attempts, r.recreations)
        for key, r in result.pods.items()
    }


def test_jobs_give_the_same_results_as_one_process() -> None:
    before = set(_children())
    raw = small_scenario(duration=300, recreate={"enabled": True, "delay": 5, "maxPerPod": 2})
    raw["workload"]["arrival"] = {"process": "poisson", "rate": 1}
    raw["workload"]["pods"] = 150
    for template in raw["workload"]["templates"]:
        template["lifetime"] = {"distribution": "exponential", "mean": 40}
    chosen = scenario_from_dict(raw)
    one = compare(chosen, PRODUCT, seed=2, jobs=1)
    two = compare(chosen, PRODUCT, seed=2, jobs=2)
    assert list(two.results) == list(PRODUCT)
    for name in PRODUCT:
        drop = set(TIMING)
        assert {k: v for k, v in one.results[name].items() if k not in drop} == {
            k: v for k, v in two.results[name].items() if k not in drop
        }, name
        assert _placements(one.runs[name]) == _placements(two.runs[name]), name
        assert one.runs[name].samples == two.runs[name].samples
        assert one.runs[name].stats == two.runs[name].stats
        assert {n: k.running.keys() for n, k in one.runs[name].kubelets.items()} == {
            n: k.running.keys() for n, k in two.runs[name].kubelets.items()
        }
        assert two.cpu_seconds[name] > 0 and two.wall_seconds[name] > 0
    assert one.results["knuma"]["placed"] > 0
    assert set(_children()) <= before


def test_progress_reaches_every_scheduler_from_the_workers(tiny: Scenario) -> None:
    seen: dict[str, list[float]] = {}
    compare(tiny, ("nrt-passthrough", "knuma"), seed=0, jobs=2, progress=lambda n, f: seen.setdefault(n, []).append(f))
    assert set(seen) == {"nrt-passthrough", "knuma"}
    for fractions in seen.values():
        assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_a_failing_worker_stops_the_others_at_once() -> None:
    """The error from one worker is raised in the parent with the scheduler named, keeping its class (InvalidInput:
    the CLI exits 2 as with one process), while the other worker's long simulation is terminated, not awaited."""
    before = set(_children())
    long = scaled(nodes=2000, pods=40_000)  # over a minute of simulation for knuma
    started = time.monotonic()
    with pytest.raises(InvalidInput) as raised:
        compare(long, ("no-such-scheduler", "knuma"), seed=0, jobs=2)
    assert time.monotonic() - started < 30
    message = str(raised.value)
    assert message.startswith("simulating no-such-scheduler: unknown scheduler 'no-such-scheduler'")
    assert "\n" not in message
    assert set(_children()) <= before


def test_a_killed_worker_is_reported_and_the_rest_stopped() -> None:
    before = set(_children())
    long = scaled(nodes=2000, pods=40_000)
    killed: list[int] = []

    def kill_a_worker(name: str, fraction: float) -> None:
        if not killed:
            victim = next(pid for pid in _children() if pid not in before)  # a worker, not an earlier test's
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    with pytest.raises(WorkerFailed, match=r"^the worker process simulating \S+ exited without a result"):
        compare(long, ("nrt-passthrough", "knuma"), seed=0, jobs=2, progress=kill_a_worker)
    assert killed
    assert set(_children()) <= before


def test_available_cpus_is_the_affinity_mask() -> None:
    assert available_cpus() == len(os.sched_getaffinity(0))


def test_without_the_runs_only_the_metrics_come_back(tiny: Scenario) -> None:
    kept = compare(tiny, ("nrt-overreserve", "knuma"), seed=1, jobs=2)
    lean = compare(tiny, ("nrt-overreserve", "knuma"), seed=1, jobs=2, keep_runs=False)
    assert lean.runs == {} and set(kept.runs) == {"nrt-overreserve", "knuma"}
    for name in ("nrt-overreserve", "knuma"):
        assert {k: v for k, v in lean.results[name].items() if k not in TIMING} == {
            k: v for k, v in kept.results[name].items() if k not in TIMING
        }


def test_every_compared_scheduler_has_its_place_in_the_dispatch_order() -> None:
    assert sorted(DISPATCH_ORDER) == sorted(PRODUCT)
