"""The daemon's fast path decides exactly as the exact path (`schedule_one` over the cache's NodeInfos), pod after
pod, with reservations, on random clusters with labels, taints, node affinity, tolerations and host ports."""

from __future__ import annotations

import random
from typing import Any

import pytest

from knuma.api.pod import Pod
from knuma.scheduler.algorithm import decide
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.config.load import build_profiles, default_config, parse_config
from knuma.scheduler.fast.path import FastPath

from .builders import nrt


def node(name: str, rng: random.Random, zones: int) -> tuple[dict[str, Any], dict[str, Any]]:
    cpus = rng.choice((4, 8, 16))
    zone_map = {z: {"cpu": str(cpus), "memory": f"{cpus * 2}Gi"} for z in range(zones)}
    taints = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}] if rng.random() < 0.2 else []
    if rng.random() < 0.3:
        taints.append({"key": "spot", "value": "yes", "effect": "PreferNoSchedule"})
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"zone": rng.choice("ab"), "kubernetes.io/hostname": name}},
        "spec": {"taints": taints} if taints else {},
        "status": {"allocatable": {"cpu": str(cpus * zones), "memory": f"{cpus * 2 * zones}Gi", "pods": "110"}},
    }
    policy = rng.choice(("single-numa-node", "single-numa-node", "restricted", "none"))
    return obj, nrt(name, zone_map, policy=policy)


def pod(index: int, rng: random.Random) -> dict[str, Any]:
    cpu = rng.choice(("1", "2", "3", "500m"))
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if rng.random() < 0.7:
        resources["limits"] = dict(resources["requests"])
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": resources}
    if rng.random() < 0.1:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec: dict[str, Any] = {"schedulerName": "topology-aware-scheduler", "containers": [container]}
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"zone": rng.choice("ab")}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if rng.random() < 0.3:
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": [rng.choice("ab")]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": rng.randint(1, 100), "preference": term}]
            }
        }
    return {"metadata": {"name": f"p{index}", "namespace": "default"}, "spec": spec}


def decide_both(profile: Any, cache: ClusterCache, fast: FastPath, candidate: Pod, index: int) -> str | None:
    """The exact path's and the fast path's decision for `candidate`, which must agree (node and message); the pod is
    assumed where they put it. Returns the node."""
    exact = decide(profile, candidate, cache.node_infos())
    quick = fast.decide(profile, candidate)
    assert quick.node == exact.node, f"pod {index}: fast {quick.node} exact {exact.node}"
    assert quick.message == exact.message
    if exact.node is not None:
        cache.assume(candidate, exact.node)
    return exact.node


PROFILES = {
    "default": build_profiles(default_config())["topology-aware-scheduler"],
    "weighted": build_profiles(
        parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "topology-aware-scheduler",
                        "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch", "weight": 3}]}},
                        "pluginConfig": [
                            {
                                "name": "NodeResourceTopologyMatch",
                                "args": {"scoringStrategy": {"type": "MostAllocated"}},
                            }
                        ],
                    }
                ],
            }
        )
    )["topology-aware-scheduler"],
}


@pytest.mark.parametrize("profile_name", sorted(PROFILES))
@pytest.mark.parametrize("seed", range(6))
def test_fast_path_decides_as_the_exact_path(seed: int, profile_name: str) -> None:
    rng = random.Random(seed)
    profile = PROFILES[profile_name]
    cache = ClusterCache()
    for i in range(rng.randint(3, 12)):
        obj, topology = node(f"n{i:02d}", rng, rng.choice((1, 2, 4)))
        cache.upsert_node(obj)
        cache.upsert_nrt(topology)
    fast = FastPath(cache)
    assert fast.plan(profile) is not None, "the profile must run on the fast path"
    placed = 0
    for index in range(60):
        candidate = Pod.from_manifest(pod(index, rng))
        if decide_both(profile, cache, fast, candidate, index) is not None:
            placed += 1
        if index == 30:  # a node changes labels mid-way: the node-local caches must follow
            first = cache.node_info("n00")
            assert first is not None and first.manifest is not None
            changed = {**first.manifest, "metadata": {"name": "n00", "labels": {"zone": "c"}}}
            cache.upsert_node(changed)
    assert placed > 0


def _fit_profile(args: dict[str, Any], *, numa: bool, balanced: dict[str, Any] | None = None) -> Any:
    """A profile with NodeResourcesFitArgs `args`, with or without NodeResourceTopologyMatch (which, as upstream's
    filter, rejects a pod asking for a resource the node does not list, ignored or not), and with
    NodeResourcesBalancedAllocationArgs `balanced` (kube-scheduler's default plugins run it in every profile here)."""
    plugins = {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}} if numa else {}
    extra = [{"name": "NodeResourcesBalancedAllocation", "args": balanced}] if balanced else []
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "topology-aware-scheduler",
                "plugins": plugins,
                "pluginConfig": [{"name": "NodeResourcesFit", "args": args}, *extra],
            }
        ],
    }
    return build_profiles(parse_config(config))["topology-aware-scheduler"]


MOST_ALLOCATED = {
    "ignoredResources": ["example.com/foo"],
    "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]},
}
RATIO = {
    "ignoredResourceGroups": ["example.com"],
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu"}, {"name": "example.com/foo", "weight": 5}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
    },
}
FIT_PROFILES = {
    "most-allocated": _fit_profile(MOST_ALLOCATED, numa=True),
    "most-allocated-without-numa": _fit_profile(MOST_ALLOCATED, numa=False),
    "requested-to-capacity-ratio": _fit_profile(RATIO, numa=False),
    "least-allocated-ignoring": _fit_profile({"ignoredResources": ["example.com/foo"]}, numa=False),
    "balanced-with-an-extended-resource": _fit_profile(
        {}, numa=True, balanced={"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/foo"}]}
    ),
}


@pytest.mark.parametrize("profile_name", sorted(FIT_PROFILES))
@pytest.mark.parametrize("seed", range(4))
def test_fast_path_decides_as_the_exact_path_with_node_resources_fit_args(seed: int, profile_name: str) -> None:
    """NodeResourcesFitArgs on the fast path: ignored extended resources leave the filter (pods asking for
    example.com/foo, which no node has, are placed), and other strategies score as the plugin does."""
    rng = random.Random(seed)
    profile = FIT_PROFILES[profile_name]
    cache = ClusterCache()
    for i in range(rng.randint(3, 10)):
        obj, topology = node(f"n{i:02d}", rng, rng.choice((1, 2, 4)))
        if i % 2 == 0:  # half the nodes list the resource, with 0 or 1 of it: the filter must skip it there too
            for key in ("capacity", "allocatable"):
                obj["status"].setdefault(key, {})["example.com/foo"] = str(i % 4 // 2)
        cache.upsert_node(obj)
        cache.upsert_nrt(topology)
    fast = FastPath(cache)
    assert fast.plan(profile) is not None, "the profile must run on the fast path"
    placed = extended = 0
    for index in range(50):
        manifest = pod(index, rng)
        if rng.random() < 0.3:
            resources = manifest["spec"]["containers"][0]["resources"]
            for kind in ("requests", "limits"):
                if kind in resources:
                    resources[kind]["example.com/foo"] = "1"
            resources.setdefault("limits", {})["example.com/foo"] = "1"
        candidate = Pod.from_manifest(manifest)
        if decide_both(profile, cache, fast, candidate, index) is not None:
            placed += 1
            extended += "example.com/foo" in candidate.effective_request
    assert placed > 0
    assert extended > 0 or profile_name in ("most-allocated", "balanced-with-an-extended-resource")


@pytest.mark.parametrize("mode", ["overreserve", "discardreserved", "passthrough", "knuma"])
@pytest.mark.parametrize("seed", range(3))
def test_fast_path_decides_as_the_exact_path_with_every_cache_mode(seed: int, mode: str) -> None:
    """Stale nodes (overreserve's foreign pods, discardreserved's reservations) are rejected by both paths alike,
    and over-reservation (every zone loses every assumed pod) is seen by both."""
    from knuma.scheduler.cache.interface import BoundPod
    from knuma.scheduler.cache.select import make_nrt_cache

    rng = random.Random(seed)
    nrt_cache = make_nrt_cache(mode, profile_names={"topology-aware-scheduler"})
    config = default_config()
    profile = build_profiles(config, nrt_cache)["topology-aware-scheduler"]
    cache = ClusterCache(nrt_cache)
    for i in range(rng.randint(4, 10)):
        obj, topology = node(f"n{i:02d}", rng, rng.choice((1, 2, 4)))
        cache.upsert_node(obj)
        cache.upsert_nrt(topology)
    foreign = Pod.from_manifest(pod(999, rng))
    cache.pod_bound(BoundPod(foreign.key, "default", foreign.name, "n01", "Running", True, "other", foreign))
    fast = FastPath(cache)
    for index in range(40):
        candidate = Pod.from_manifest(pod(index, rng))
        node_name = decide_both(profile, cache, fast, candidate, index)
        if node_name is not None and index % 3 == 0:
            cache.bound(candidate, node_name)


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_runs_row_filters_on_the_best_rows_and_decides_as_the_exact_path(seed: int) -> None:
    """knuma's profile with Guaranteed pods that have init containers (StableUnderRelease applies): the fast path
    runs the filter on rows in ranking order and stops at the first that passes; the exact path filters every
    node. Running pods come and go so that single releases exist and some nodes fail the filter."""
    from knuma.scheduler.cache.interface import BoundPod
    from knuma.scheduler.cache.select import make_nrt_cache
    from knuma.scheduler.plugins.stable_under_release import StableUnderRelease

    rng = random.Random(seed)
    nrt_cache = make_nrt_cache("knuma")
    profile = build_profiles(default_config(), nrt_cache)["topology-aware-scheduler"]
    cache = ClusterCache(nrt_cache)
    for i in range(rng.randint(4, 9)):
        obj, topology = node(f"n{i:02d}", rng, 2)
        cache.upsert_node(obj)
        cache.upsert_nrt(topology)
    fast = FastPath(cache)
    running: list[tuple[Pod, str]] = []
    for index in range(60):
        app, init = rng.choice(("1", "2", "3", "4")), rng.choice(("1", "2", "3"))
        resources = {"requests": {"cpu": app, "memory": "1Gi"}, "limits": {"cpu": app, "memory": "1Gi"}}
        spec: dict[str, Any] = {"schedulerName": "topology-aware-scheduler"}
        spec["containers"] = [{"name": "app", "image": "x", "resources": resources}]
        if rng.random() < 0.6:
            init_resources = {"requests": {"cpu": init, "memory": "1Gi"}, "limits": {"cpu": init, "memory": "1Gi"}}
            spec["initContainers"] = [{"name": "init", "image": "x", "resources": init_resources}]
        candidate = Pod.from_manifest({"metadata": {"name": f"p{index}", "namespace": "default"}, "spec": spec})
        node_name = decide_both(profile, cache, fast, candidate, index)
        if node_name is not None and rng.random() < 0.8:  # the kubelet admitted it
            bound = BoundPod(candidate.key, "default", candidate.name, node_name, "Running", True, "", candidate)
            cache.pod_bound(bound)
            running.append((candidate, node_name))
        if running and rng.random() < 0.3:
            gone, where = running.pop(rng.randrange(len(running)))
            cache.pod_removed(gone.key, where)
    stable = next(p for p in profile.filters if isinstance(p, StableUnderRelease))
    assert stable.rejected, "some nodes failed the row filter"


def test_a_failure_is_remembered_for_identical_pods_until_a_node_changes() -> None:
    """The exact pass that explains why no node fits runs once for a burst of identical pending pods; any change to
    a node (a pod placed, a node added) makes the next one look again."""
    profile = PROFILES["default"]
    cache = ClusterCache()
    obj, topology = node("n00", random.Random(0), 2)
    cache.upsert_node(obj)
    cache.upsert_nrt(topology)
    fast = FastPath(cache)
    big = {"cpu": "64", "memory": "1Gi"}

    def wide(name: str) -> Pod:
        container = {"name": "c", "image": "x", "resources": {"requests": big, "limits": big}}
        spec = {"schedulerName": "topology-aware-scheduler", "containers": [container]}
        return Pod.from_manifest({"metadata": {"name": name, "namespace": "default"}, "spec": spec})

    first = fast.decide(profile, wide("a"))
    assert first.node is None and first.statuses is not None
    assert fast.decide(profile, wide("b")) is first  # nothing changed: the same answer, no second pass
    cache.upsert_node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "roomy", "labels": {"kubernetes.io/hostname": "roomy"}},
            "status": {"allocatable": {"cpu": "128", "memory": "256Gi", "pods": "110"}},
        }
    )
    assert fast.decide(profile, wide("c")).node == "roomy"  # no NRT: node-level fit only
