"""`ClusterCache`: a pod the scheduler assumed, seen bound by the informer, is confirmed without rebuilding the node
(kube-scheduler's `cacheImpl.AddPod` of an assumed pod); anything that changes the node's sums still rebuilds it."""

from __future__ import annotations

from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.cache.nrt import ClusterCache

from .builders import guaranteed, pod


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def _bound(p: Pod, node: str, cpu: str = "2") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "1Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": p.name, "namespace": p.namespace, "resourceVersion": "9"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}],
        },
        "status": {"phase": "Pending"},
    }


def _cache() -> ClusterCache:
    cache = ClusterCache()
    for name in ("n1", "n2"):
        cache.upsert_node(_node(name))
    cache.take_dirty()
    return cache


def test_the_informer_confirming_an_assumed_binding_leaves_the_node_as_it_is() -> None:
    cache = _cache()
    p = pod(guaranteed("c", "2", "1Gi"), name="a")
    cache.assume(p, "n1")
    assert cache.take_dirty()[0] == {"n1"}
    before = cache.node_info("n1")
    cache.upsert_pod(_bound(p, "n1"))
    assert not cache.is_assumed(p.key)
    assert cache.take_dirty() == (set(), set())
    assert cache.node_info("n1") is before and before is not None and before.requested["cpu"] == 2000


def test_a_binding_elsewhere_or_with_other_requests_rebuilds_the_nodes() -> None:
    cache = _cache()
    a, b = pod(guaranteed("c", "2", "1Gi"), name="a"), pod(guaranteed("c", "2", "1Gi"), name="b")
    cache.assume(a, "n1")
    cache.assume(b, "n1")
    cache.take_dirty()
    cache.upsert_pod(_bound(a, "n2"))  # another binder won the race
    assert cache.take_dirty()[0] == {"n1", "n2"}
    cache.upsert_pod(_bound(b, "n1", cpu="3"))  # resized meanwhile: the node's sums change
    assert cache.take_dirty()[0] == {"n1"}
    n1, n2 = cache.node_info("n1"), cache.node_info("n2")
    assert n1 is not None and n2 is not None
    assert (n1.requested["cpu"], n2.requested["cpu"]) == (3000, 2000)
