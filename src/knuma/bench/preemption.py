"""Preemption's cost per attempt: DefaultPreemption's dry run at cluster size, on the daemon's own objects.

    python -m knuma.bench.preemption [--nodes 5000] [--pods-per-node 4] [--attempts 20]

The cluster cache (knuma's NRT cache, every pod admitted so its zones are known), the default configuration's profile
and `FastPath` are the daemon's; what is timed is one scheduling attempt of a pod no node fits: the decision (the
fast path, which makes one exact pass for the per-node verdicts when nothing fits) and the PostFilter. Three pods:
one of the same priority as every running pod (no victims anywhere), one of higher priority that no eviction makes
fit (every potential node tried), and one of higher priority that fits once one pod leaves a NUMA zone (the dry run
stops after `DefaultPreemptionArgs.candidates` nodes: 10% of them, at least 100). Each pod comes `--attempts` times
without any change in between (as identical pods of a ReplicaSet do): the first decision is the exact pass, the next
ones what the fast path remembers. Upstream's reference points:
scheduler_perf's `PreemptionAsync/5000Nodes` threshold is 570 pods/s (20,000 running pods, parallel dry runs), and an
unschedulable pod costs about 20 ms with 20,000 pods (kubernetes PR #128466).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from dataclasses import dataclass
from typing import Any

from knuma.api.pod import Pod
from knuma.bench.scheduler import _node, _nrt
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_nrt_cache, build_profiles, default_config
from knuma.scheduler.fast.path import FastPath

__all__ = ["PreemptionResult", "run"]

CASES = (
    ("same priority as every running pod: no victims", 9, 1, 0),
    ("higher priority, no eviction makes it fit", 40, 1, 100),
    ("higher priority, fits once one pod leaves its zone", 9, 2, 100),
)
"""(what, CPUs and GiB the pod asks, its priority; each its own shape): each node has two 16-CPU zones holding two
7-CPU pods of priority 0 each (2 CPUs free per zone, 4 on the node)."""


@dataclass(frozen=True)
class PreemptionResult:
    case: str
    nodes: int
    pods: int
    first_decide_ms: float
    """The first pod of its shape: the fast path's exact pass over every node, to say why none fits."""
    decide_ms: float
    """The next identical pods, nothing changed meanwhile (the fast path remembers the failure): the median."""
    post_filter_ms: float
    victims: int

    @property
    def attempts_per_second(self) -> float:
        """Repeated attempts (remembered decision + PostFilter) per second."""
        total = self.decide_ms + self.post_filter_ms
        return 1000 / total if total else 0.0


def _pod(name: str, cpus: int, priority: int, node: str = "", gib: int = 1) -> dict[str, Any]:
    resources = {"cpu": str(cpus), "memory": f"{gib}Gi"}
    status: dict[str, Any] = {"phase": "Pending"}
    if node:
        status = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "schedulerName": "topology-aware-scheduler",
            "priority": priority,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}],
            **({"nodeName": node} if node else {}),
        },
        "status": status,
    }


def run(nodes: int = 5000, pods_per_node: int = 4, attempts: int = 20) -> list[PreemptionResult]:
    config = default_config()
    nrt = build_nrt_cache(config)
    profile = next(iter(build_profiles(config, nrt).values()))
    cache = ClusterCache(nrt)
    nrt.informers_synced()
    for index in range(nodes):
        name = f"node-{index:05d}"
        cache.upsert_node(_node(name, 2, 16, 64))
        cache.upsert_nrt(_nrt(name, 2, 16, 64))
        for slot in range(pods_per_node):
            cache.upsert_pod(_pod(f"running-{index}-{slot}", 7, 0, name))
    gc.collect()
    gc.freeze()  # as the daemon does once its caches are synced (`knuma.scheduler.daemon.heap`)
    fast = FastPath(cache)
    assert fast.decide(profile, Pod.from_manifest(_pod("warm-up", 1, 0))).node is not None  # arrays built
    assert fast.decide(profile, Pod.from_manifest(_pod("warm-up-2", 99, 0))).node is None  # node data read once
    (plugin,) = profile.post_filter
    results = []
    for case, cpus, gib, priority in CASES:
        decide: list[float] = []
        post_filter: list[float] = []
        victims = 0
        for attempt in range(attempts):
            pod = Pod.from_manifest(_pod(f"pending-{priority}-{cpus}-{attempt}", cpus, priority, gib=gib))
            start = time.perf_counter()
            outcome = fast.decide(profile, pod)
            decided = time.perf_counter()
            assert outcome.node is None and outcome.statuses is not None
            answer = plugin.post_filter(
                profile,
                pod,
                outcome.statuses,
                cache.node_infos(),
                cache.node_info_without,
                lowest_priority=cache.lowest_priority(),
            )
            decide.append(decided - start)
            post_filter.append(time.perf_counter() - decided)
            victims = len(answer.candidate.victims) if answer.candidate else 0
        results.append(
            PreemptionResult(
                case,
                nodes,
                nodes * pods_per_node,
                decide[0] * 1000,
                statistics.median(decide[1:] or decide) * 1000,
                statistics.median(post_filter) * 1000,
                victims,
            )
        )
    gc.unfreeze()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=20)
    args = parser.parse_args(argv)
    for r in run(args.nodes, args.pods_per_node, args.attempts):
        print(
            f"{r.case}: first decision {r.first_decide_ms:.1f} ms, then {r.decide_ms:.1f} ms, "
            f"PostFilter {r.post_filter_ms:.1f} ms ({r.attempts_per_second:.1f} attempts/s), victims {r.victims}"
        )


if __name__ == "__main__":
    main()
