"""`knuma check` on a cluster whose exporters and scheduler run as processes of `knuma up`: the record's Lease (its
JSON both ways, its expiry) and what the checks make of each process state."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

from knuma.deploy.check.processes import (
    ANNOTATION,
    PAUSED,
    RUNNING,
    STOPPED,
    LocalProcesses,
    Process,
)
from knuma.deploy.check.report import diagnose, render_json, render_text
from knuma.deploy.check.state import ClusterState
from tests.deploy.check.test_findings import healthy_state, nrt, scheduler

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
PROFILES = {
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "topology-aware-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}},
        },
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourceTopologyMatch"}]}},
        },
    ],
}


def record(w1: str = RUNNING, w2: str = RUNNING, sched: str | None = RUNNING) -> LocalProcesses:
    exporters = (
        Process(w1, 11, "logs/exporter-w1.log", ("w1",), "why w1" if w1 != RUNNING else ""),
        Process(w2, 12, "logs/exporter-w2.log", ("w2",), "why w2" if w2 != RUNNING else ""),
    )
    scheduler_process = Process(sched, 13, "logs/scheduler.log") if sched is not None else None
    return LocalProcesses("knuma-up@host/10", exporters, scheduler_process, PROFILES if sched else None)


def bare_up(processes: LocalProcesses | None) -> ClusterState:
    """`knuma up` without a deployed stack: no exporter pod, no scheduler Deployment; NRTs fresh (no pods)."""
    return dataclasses.replace(
        healthy_state(), pods=[], nrts={"w1": nrt("w1", []), "w2": nrt("w2", [])}, schedulers=[], processes=processes
    )


def read_back(processes: LocalProcesses, renewed: dt.datetime = NOW, now: dt.datetime = NOW) -> LocalProcesses | None:
    lease = json.loads(json.dumps(processes.lease(renewed)))  # through JSON, as the API server stores it
    return LocalProcesses.from_lease(lease, now)


def test_the_lease_carries_the_record_and_counts_until_it_expires() -> None:
    written = record(w2=PAUSED)
    lease = written.lease(NOW)
    assert lease["metadata"]["namespace"] == "kube-system" and lease["metadata"]["name"] == "knuma-up"
    assert lease["spec"]["renewTime"] == "2026-11-30T12:00:00.000000Z"
    assert read_back(written) == written
    assert read_back(written, now=NOW + dt.timedelta(seconds=40)) == written
    assert read_back(written, now=NOW + dt.timedelta(seconds=41)) is None  # its holder stopped renewing it
    assert read_back(written).exporter_of("w2") == Process(PAUSED, 12, "logs/exporter-w2.log", ("w2",), "why w2")  # type: ignore[union-attr]


def test_a_lease_that_is_not_a_record_is_ignored() -> None:
    lease = record().lease(NOW)
    for broken in ("not json", json.dumps({"exporters": [{"state": "dancing"}]}), json.dumps([1])):
        lease["metadata"]["annotations"][ANNOTATION] = broken
        assert LocalProcesses.from_lease(lease, NOW) is None
    del lease["spec"]["renewTime"]
    assert LocalProcesses.from_lease(lease, NOW) is None
    assert LocalProcesses.from_lease(None, NOW) is None


def test_a_bare_knuma_up_passes_with_its_processes() -> None:
    diagnosis = diagnose(bare_up(record()), "topology-aware-scheduler")
    assert diagnosis.issues == []
    text = render_text(diagnosis)
    assert "w1     present   yes     single-numa-node/pod   process 11 of knuma up" in text
    assert "scheduler topology-aware-scheduler: process 13 of knuma up, NodeResourceTopologyMatch enabled" in text
    assert render_json(diagnosis)["scheduler"]["process"] == "process 13 of knuma up"


def test_without_the_record_the_stack_is_missing() -> None:
    issues = diagnose(bare_up(None), "topology-aware-scheduler").issues
    assert [(i.node, i.component, i.detected) for i in issues] == [
        ("w1", "pod", "no exporter pod"),
        ("w2", "pod", "no exporter pod"),
        ("", "profile", "none"),
    ]


def test_processes_not_running_are_problems_with_their_reason_and_log() -> None:
    diagnosis = diagnose(bare_up(record(w1=PAUSED, w2=STOPPED, sched=STOPPED)), "topology-aware-scheduler")
    found = [(i.node, i.component, i.expected, i.detected, i.fix) for i in diagnosis.issues]
    assert found == [
        ("w1", "process", "running", "paused process 11 of knuma up", "why w1; its log: logs/exporter-w1.log"),
        ("w2", "process", "running", "stopped process 12 of knuma up", "why w2; its log: logs/exporter-w2.log"),
        ("", "knuma up", "running", "stopped process 13 of knuma up", "its log: logs/scheduler.log"),
    ]
    assert diagnosis.scheduler.ready == "0/1"


def test_the_unaware_profile_of_knuma_up_is_found_and_reported_without_the_plugin() -> None:
    issues = diagnose(bare_up(record()), "default-scheduler").issues
    assert [(i.component, i.detected) for i in issues] == [("profile default-scheduler", "not enabled")]
    assert issues[0].fix.endswith("in the scheduler configuration of knuma up's scheduler process")


def test_a_deployed_stack_wins_over_the_processes_that_stand_in_for_it() -> None:
    state = dataclasses.replace(healthy_state(), processes=record(w1=STOPPED, sched=STOPPED))
    diagnosis = diagnose(state, "topology-aware-scheduler")
    assert diagnosis.issues == []  # the exporter pods and the Deployment are what runs
    assert [r.exporter for r in diagnosis.nodes] == ["tas/exp-w1", "tas/exp-w2"]
    assert diagnosis.scheduler.deployment == "tas-scheduler/topology-aware-scheduler"
    assert diagnosis.scheduler.process == ""


def test_a_ready_process_wins_over_a_deployment_that_is_not_ready() -> None:
    state = dataclasses.replace(bare_up(record()), schedulers=[scheduler(ready=0)])
    diagnosis = diagnose(state, "topology-aware-scheduler")
    assert diagnosis.scheduler.process == "process 13 of knuma up" and diagnosis.issues == []


def test_the_stale_nrt_fix_points_at_the_process_log() -> None:
    state = bare_up(record())
    stale = dataclasses.replace(state, pods=[_pod_on("w1")])
    [issue] = diagnose(stale, "topology-aware-scheduler").issues
    assert issue.setting == "pods fingerprint"
    assert issue.fix.endswith("check the log of its exporter (process 11 of knuma up): logs/exporter-w1.log")


def _pod_on(node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }
