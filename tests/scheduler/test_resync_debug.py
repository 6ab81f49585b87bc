"""`cacheResyncDebug: DumpJSONFile` (numaresources-operator sets `PFP_STATUS_DUMP=/run/pfpstatus` on the scheduler):
the overreserve cache records every resync check, with the cache state behind it, in the log and in
`<dir>/<node>.json`; without the variable it records nothing. The recorder's bounds are upstream's pfpstatus ones."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.api.fingerprint import compute
from knuma.scheduler.cache.overreserve import OverReserve
from knuma.scheduler.cache.resyncdebug import DUMP_ENV, ResyncCheck, ResyncDump
from knuma.testing.apiserver import apiserver_in_thread

from .daemon_env import cluster

PROFILE = "topo-aware-scheduler"
TWO_ZONES = {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {
            "schedulerName": PROFILE,
            "plugins": {
                "filter": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
                "reserve": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
                "score": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeResourceTopologyMatch",
                    "args": {"cacheResyncPeriodSeconds": 1, "cache": {"foreignPodsDetect": "All"}},
                }
            ],
        }
    ],
}


def _check(node: str, result: str) -> ResyncCheck:
    return ResyncCheck(node, "pfp0v001aa", "pfp0v001bb", (("ns", "a"),), result)


def test_the_recorder_keeps_upstreams_bounds_and_writes_whole_files(tmp_path: Path) -> None:
    dump = ResyncDump(tmp_path, max_nodes=2, max_samples=3)
    for i in range(5):
        dump.record(_check("n1", f"mismatch {i}"))
    dump.record(_check("n2", "flushed"))
    dump.record(_check("n3", "flushed"))  # a full recorder drops new nodes
    assert dump.write() == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n1.json", "n2.json"]
    n1 = json.loads((tmp_path / "n1.json").read_text())
    assert [c["result"] for c in n1] == ["mismatch 2", "mismatch 3", "mismatch 4"]
    assert n1[0]["pods"] == [{"namespace": "ns", "name": "a"}]
    assert n1[0]["fingerprintExpected"] == "pfp0v001aa" and n1[0]["fingerprintComputed"] == "pfp0v001bb"
    assert dump.write() == 0  # nothing new


def test_the_environment_turns_the_dump_on(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert ResyncDump.from_env({}) is None
    assert ResyncDump.from_env({DUMP_ENV: ""}) is None
    on = ResyncDump.from_env({DUMP_ENV: str(tmp_path)})
    assert on is not None and on.directory == tmp_path
    with caplog.at_level(logging.WARNING):
        logged_only = ResyncDump.from_env({DUMP_ENV: str(tmp_path / "missing")})
    assert logged_only is not None and logged_only.directory is None
    assert "not a directory" in caplog.text
    logged_only.record(_check("n1", "flushed"))
    assert logged_only.write() == 0


def test_overreserve_records_each_check_with_the_cache_state(tmp_path: Path) -> None:
    from .builders import nrt
    from .test_nrt_cache import PROFILE as CACHE_PROFILE
    from .test_nrt_cache import bound, two_cpu
    from .test_nrt_cache import cluster as cache_cluster

    dump = ResyncDump(tmp_path)
    over = OverReserve(5, profile_names={CACHE_PROFILE}, debug=dump)
    cache = cache_cluster(over)
    cache.upsert_nrt(nrt("n1", {0: {"cpu": "4", "memory": "8Gi"}, 1: {"cpu": "4", "memory": "8Gi"}}))
    a = two_cpu("a")
    cache.assume(a, "n1")
    over.node_maybe_over_reserved("n1")
    cache.pod_bound(bound(a))
    over.resync()  # the NRT has no fingerprint
    cache.upsert_nrt(nrt("n1", {0: {"cpu": "4"}, 1: {"cpu": "4"}}, nodeTopologyPodsFingerprint=compute([])))
    over.resync()  # it counts no pod; the scheduler sees one
    done = compute([(a.namespace, a.name)])
    cache.upsert_nrt(nrt("n1", {0: {"cpu": "2"}, 1: {"cpu": "4"}}, nodeTopologyPodsFingerprint=done))
    assert over.resync()
    checks = json.loads((tmp_path / "n1.json").read_text())
    assert [c["result"] for c in checks] == [
        "skipped: missing NodeTopology podset fingerprint data",
        "mismatch",
        "flushed",
    ]
    mismatch = checks[1]
    assert mismatch["fingerprintExpected"] == compute([]) and mismatch["fingerprintComputed"] == done
    assert mismatch["pods"] == [{"namespace": a.namespace, "name": a.name}]
    assert mismatch["assumedPods"] == [a.key] and mismatch["dirty"] == ["maybe-over-reserved"]
    assert mismatch["view"]["node-0"]["cpu"] == 2000  # the reserved pod taken from every zone
    assert mismatch["view"]["node-1"]["cpu"] == 2000
    over.node_maybe_over_reserved("n1")
    over.resync()
    assert json.loads((tmp_path / "n1.json").read_text())[-1]["assumedPods"] == []  # the flush dropped it


async def _scheduler_run(tmp_path: Path, dump_dir: Path | None) -> str:
    """`knuma scheduler` (overreserve cache, 1 s resync) on a node where a foreign pod runs: the node is unusable
    until the NRT's fingerprint counts that pod; then a pod binds. Returns the scheduler's log."""
    tmp_path.mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    log = tmp_path / "scheduler.log"
    env = {k: v for k, v in os.environ.items() if k != DUMP_ENV}
    if dump_dir is not None:
        env[DUMP_ENV] = str(dump_dir)
    with apiserver_in_thread(tmp_path / "api", bookmark_interval=0.3) as api:
        async with cluster(api) as c:
            await c.add_node("n1", TWO_ZONES)
            foreign = await c.create_pod("foreign", "2", "1Gi", scheduler="other", node_name="n1")
            foreign["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
            await c.request("PUT", "/api/v1/namespaces/default/pods/foreign/status", foreign)
            with log.open("wb") as out:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    *("-m", "knuma", "scheduler", "--kubeconfig", str(api.kubeconfig), "--config", str(config)),
                    *("--metrics-port", "0", "--secure-port", "0"),
                    stdout=out,
                    stderr=out,
                    env=env,
                )
            try:
                await c.create_pod("p0", "2", "1Gi", scheduler=PROFILE)

                async def rejected() -> bool:
                    return any("invalid node topology data" in e["message"] for e in await c.events("p0"))

                await c.wait_for(rejected, timeout=60, what="FailedScheduling: invalid node topology data")
                await asyncio.sleep(1.5)  # at least one resync while the NRT has no fingerprint
                await c.publish_nrt(
                    "n1",
                    {0: {"cpu": "2", "memory": "7Gi"}, 1: TWO_ZONES[1]},
                    nodeTopologyPodsFingerprint=compute([("default", "foreign")]),
                    nodeTopologyPodsFingerprintMethod="all",
                )
                assert await c.bound("p0", timeout=60) == "n1"
            finally:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 20)
    return log.read_text()


def _logged_checks(text: str) -> list[dict[str, Any]]:
    marker = "nrtcache resync check "
    return [json.loads(line.split(marker, 1)[1]) for line in text.splitlines() if marker in line]


@pytest.mark.slow
async def test_the_scheduler_dumps_its_resync_checks_only_when_asked(tmp_path: Path) -> None:
    dump_dir = tmp_path / "pfpstatus"
    dump_dir.mkdir()
    text = await _scheduler_run(tmp_path / "on", dump_dir)
    checks = _logged_checks(text)
    results = [c["result"] for c in checks]
    assert "skipped: missing NodeTopology podset fingerprint data" in results and results[-1] == "flushed", results
    assert checks[-1]["view"]["node-0"]["cpu"] == 4000  # the stored view, though a foreign pod makes it unusable
    assert checks[-1]["dirty"] == ["foreign"] and checks[-1]["pods"] == [{"namespace": "default", "name": "foreign"}]
    written = json.loads((dump_dir / "n1.json").read_text())
    assert written[-1]["result"] == "flushed" and written[-1]["fingerprintExpected"] == compute(
        [("default", "foreign")]
    )

    text = await _scheduler_run(tmp_path / "off", None)  # the same run (p0 binds after the flush), no dump
    assert "scheduling pods with schedulerName" in text and _logged_checks(text) == [], text
