"""`ClusterCache`: a pod the scheduler assumed, seen bound by the informer, is confirmed without rebuilding the node
(kube-scheduler's `cacheImpl.AddPod` of an assumed pod); anything that changes the node's sums still rebuilds it."""

from __future__ import annotations

from typing import Any

from knuma.api.pod import Pod
from knuma.scheduler.cache.nrt import ClusterCache


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def _manifest(name: str, node: str = "", cpu: str = "2") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "1Gi"}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "9"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _pending(name: str) -> Pod:
    """The pod as the scheduler's queue has it: parsed from the pending manifest the informer delivered."""
    return Pod.from_manifest(_manifest(name))


def _cache() -> ClusterCache:
    cache = ClusterCache()
    for name in ("n1", "n2"):
        cache.upsert_node(_node(name))
    cache.take_dirty()
    return cache


def test_the_informer_confirming_an_assumed_binding_leaves_the_node_as_it_is() -> None:
    cache = _cache()
    p = _pending("a")
    cache.assume(p, "n1")
    assert cache.take_dirty()[0] == {"n1"}
    before = cache.node_info("n1")
    cache.upsert_pod(_manifest("a", "n1"))
    assert not cache.is_assumed(p.key)
    assert cache.take_dirty() == (set(), set())
    assert cache.node_info("n1") is before and before is not None and before.requested["cpu"] == 2000


def test_a_binding_elsewhere_or_with_other_requests_rebuilds_the_nodes() -> None:
    cache = _cache()
    a, b = _pending("a"), _pending("b")
    cache.assume(a, "n1")
    cache.assume(b, "n1")
    cache.take_dirty()
    cache.upsert_pod(_manifest("a", "n2"))  # another binder won the race
    assert cache.take_dirty()[0] == {"n1", "n2"}
    cache.upsert_pod(_manifest("b", "n1", cpu="3"))  # resized meanwhile: the node's sums change
    assert cache.take_dirty()[0] == {"n1"}
    n1, n2 = cache.node_info("n1"), cache.node_info("n2")
    assert n1 is not None and n2 is not None
    assert (n1.requested["cpu"], n2.requested["cpu"]) == (3000, 2000)
