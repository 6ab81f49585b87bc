"""Scheduler restarts in the simulator (`schedulerRestarts`): every compared scheduler loses what it held in memory
and starts again, through the daemon's start-up path, from the published NRTs and the bound pods."""

from __future__ import annotations

import dataclasses

import pytest

from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.cache.overreserve import OverReserve
from knuma.scheduler.framework.interface import CycleState
from knuma.scheduler.plugins.stable_under_release import StableUnderRelease
from knuma.sim.engine import RunResult, build_kubelets, run, snapshot
from knuma.sim.exporter import fingerprint
from knuma.sim.scenarios import builtin_scenario
from knuma.sim.schedulers import ListedPod, NodeSetup, make_scheduler
from knuma.sim.spec import scenario_from_dict
from knuma.testbed.cluster import SpecError
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR

from .conftest import small_scenario
from .test_kubelet import _guaranteed


def test_restarts_are_parsed_sorted_and_checked() -> None:
    scenario = scenario_from_dict({**small_scenario(), "schedulerRestarts": [90, 30.5]})
    assert scenario.scheduler_restarts == (30.5, 90.0)
    assert scenario_from_dict(small_scenario()).scheduler_restarts == ()
    with pytest.raises(SpecError, match=r"scenario\.schedulerRestarts\[1\]: expected a number >= 0"):
        scenario_from_dict({**small_scenario(), "schedulerRestarts": [10, -1]})
    with pytest.raises(SpecError, match=r"scenario\.schedulerRestarts: expected a list"):
        scenario_from_dict({**small_scenario(), "schedulerRestarts": 10})


def test_a_restarted_scheduler_lists_the_bound_pods_and_forgets_its_reservations() -> None:
    """Restarted right after a burst, before any NRT shows the pods: overreserve forgets the reservations that kept
    it from overbooking zones and places more (upstream's behaviour: its start-up NRT list is all it has); knuma
    seeds its shadows from the pods bound and places exactly what it placed without the restart."""
    scenario = scenario_from_dict(small_scenario(nrtPeriod=600, duration=100, schedulerRestarts=[1.5]))
    steady = dataclasses.replace(scenario, scheduler_restarts=())
    results = {
        (name, restarted): run(scenario if restarted else steady, name, seed=0, check_conservation=True)
        for name in ("nrt-overreserve", "knuma")
        for restarted in (True, False)
    }
    assert results["nrt-overreserve", True].stats["scheduler_restarts"] == 1
    assert results["knuma", True].stats["scheduler_restarts"] == 1

    def placed(result: RunResult) -> dict[str, str]:
        return {key: r.node for key, r in result.pods.items() if r.admitted_at is not None}

    assert len(placed(results["nrt-overreserve", True])) > len(placed(results["nrt-overreserve", False]))
    assert placed(results["knuma", True]) == placed(results["knuma", False])
    assert not any(r.failure for r in results["knuma", True].pods.values())


def test_the_restart_scenario_gives_knuma_no_topology_affinity_error() -> None:
    result = run(builtin_scenario("restart"), "knuma", seed=0)
    assert result.stats["scheduler_restarts"] == 5
    assert not any(r.failure == TOPOLOGY_AFFINITY_ERROR for r in result.pods.values())


def test_after_a_restart_knuma_keeps_pods_with_init_containers_off_nodes_it_cannot_know_exactly() -> None:
    """The NRT counts a pod that has terminated since (its fingerprint matches no set of listed pods): the running
    pod's zone is unknown, so it is held on every zone, and a pod whose init container could land elsewhere than
    predicted waits for the next NRT; a plain pod does not."""
    kubelets = build_kubelets(scenario_from_dict(small_scenario()))
    name, kubelet = next(iter(kubelets.items()))
    running, gone = _guaranteed("a", 2), _guaranteed("gone", 2)
    assert kubelet.admit(running).admitted and kubelet.admit(gone).admitted
    published = snapshot(kubelet, 0.0)
    kubelet.release(gone.key)
    setups = [NodeSetup(name, kubelet.allocatable, published)]
    scheduler = make_scheduler("knuma", setups, pods=[ListedPod(running, name, started=True)])
    assert isinstance(scheduler.nrt, KnumaCache) and not scheduler.nrt.exact(name)
    stable = next(p for p in scheduler.profile.filters if isinstance(p, StableUnderRelease))
    info = scheduler.cache.node_info(name)
    assert info is not None
    status = stable.filter(CycleState(), _guaranteed("fragile", 4, init_cpu=2), info)
    assert not status.ok and "not known exactly" in status.detail
    assert scheduler.schedule(_guaranteed("plain", 2), 1.0) == name
    # The next NRT counts exactly the pods the scheduler sees: the zones are known again.
    scheduler.pod_running("default/plain", name, 2.0)
    assert kubelet.admit(_guaranteed("plain", 2)).admitted
    assert scheduler.nrt_published(snapshot(kubelet, 3.0), 3.0)
    assert scheduler.nrt.exact(name)
    assert snapshot(kubelet, 3.0).fingerprint == fingerprint(["default/a", "default/plain"])


def test_overreserve_restarts_from_the_last_published_nrt() -> None:
    kubelets = build_kubelets(scenario_from_dict(small_scenario()))
    name, kubelet = next(iter(kubelets.items()))
    before = snapshot(kubelet, 0.0)
    pod = _guaranteed("a", 6)
    assert kubelet.admit(pod).admitted
    after = snapshot(kubelet, 5.0)
    scheduler = make_scheduler("nrt-overreserve", [NodeSetup(name, kubelet.allocatable, after)], pods=[])
    assert isinstance(scheduler.nrt, OverReserve) and scheduler.nrt.reserved(name) == 0
    view = scheduler.topology(name)
    assert view is not None and view.zones == after.topology.zones != before.topology.zones
