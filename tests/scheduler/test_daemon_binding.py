"""The binding cycle of `knuma scheduler`, against a real `knuma apiserver`: bindings run concurrently with the
scheduling loop over the `ApiSession`, and a refused or failed binding undoes the assumption as kube-scheduler's
`handleBindingCycleError` does (forget the assumed pod; retry it after its backoff unless it was bound or deleted
meanwhile)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from knuma.kube.client import api_session
from knuma.scheduler.daemon.loop import DaemonSettings, Scheduler
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

from .daemon_env import cluster, running_scheduler

pytestmark = pytest.mark.slow

ZONES = {0: {"cpu": "8", "memory": "16Gi"}, 1: {"cpu": "8", "memory": "16Gi"}}


async def _true(value: bool) -> bool:
    return value


def _binding_calls(daemon: Scheduler) -> float:
    """How many binding POSTs have been answered (or failed): the binding latency histogram's count."""
    return next(
        sample.value
        for metric in daemon.metrics.binding_duration.collect()
        for sample in metric.samples
        if sample.name.endswith("_count")
    )


def _node_in_cache(daemon: Scheduler, key: str) -> str:
    entry = daemon.cache.pods.get(key)
    return entry.node if entry is not None else ""


async def test_many_bindings_in_flight_bind_every_pod_once_without_overcommitting(api: RunningApiServer) -> None:
    """60 one-CPU pods on four 16-CPU nodes: the loop decides while earlier bindings are still in flight; every pod
    is bound exactly once, no node gets more than its CPUs, and the cache holds each pod once."""
    async with cluster(api) as c:
        for n in range(4):
            await c.add_node(f"n{n}", ZONES)
        settings = DaemonSettings(leader_elect=False, initial_backoff=0.1, max_backoff=0.5, bind_concurrency=8)
        async with running_scheduler(api, settings=settings) as daemon:
            await asyncio.gather(*(c.create_pod(f"p{i:02d}", "1", "1Gi") for i in range(60)))
            await c.wait_for(lambda: _true(daemon.scheduled == 60), timeout=30, what="60 bindings")
            nodes = [await c.node_of(f"p{i:02d}") for i in range(60)]
            assert all(nodes)
            assert max(nodes.count(f"n{n}") for n in range(4)) <= 16
            assert [_node_in_cache(daemon, f"default/p{i:02d}") for i in range(60)] == nodes
            assert _binding_calls(daemon) == 60  # one POST per pod


async def test_a_failed_binding_forgets_the_pod_and_retries_it(api: RunningApiServer, tmp_path: Path) -> None:
    """The bindings go to an API server that no longer answers: each attempt's assumption is dropped (the node's
    CPUs are not held by a pod that is not bound) and the pod returns to the queue with a backoff; once the
    bindings reach the API server again, the retry binds it."""
    with apiserver_in_thread(tmp_path / "gone") as gone:
        pass  # stopped: nothing listens on its port any more
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        async with running_scheduler(api, writer=api_session(gone.kubeconfig, timeout=2)) as daemon:
            await c.create_pod("p", "4", "1Gi")

            async def failed_twice() -> bool:
                return _binding_calls(daemon) >= 2 and not daemon.cache.is_assumed("default/p")

            await c.wait_for(failed_twice, timeout=20, what="two failed bindings")
            assert daemon.scheduled == 0
            assert await c.node_of("p") == ""
            assert _node_in_cache(daemon, "default/p") == ""  # forgotten: nothing holds the CPUs
            assert "default/p" in daemon.queue  # waiting for its retry
            await daemon.writer.aclose()
            daemon.writer = api_session(api.kubeconfig)  # the API server is reachable again
            try:
                assert await c.bound("p", timeout=20) == "n1"
                await c.wait_for(lambda: _true(daemon.scheduled == 1), what="the retry counted")
                assert _node_in_cache(daemon, "default/p") == "n1"
            finally:
                await daemon.writer.aclose()


async def test_a_pod_bound_by_someone_else_meanwhile_is_forgotten_and_not_retried(api: RunningApiServer) -> None:
    """The scheduler has assumed the pod on a node, but another binder wins the race: the API server answers 409,
    the scheduler forgets its assumption and leaves the pod where the other binder put it."""
    async with cluster(api) as c:
        await c.add_node("n1", ZONES)
        await c.add_node("n2", ZONES)
        settings = DaemonSettings(leader_elect=False, initial_backoff=0.1, max_backoff=0.5, bind_concurrency=1)
        async with running_scheduler(api, settings=settings) as daemon:
            await daemon.ready.wait()
            binds = daemon._binds
            await binds.acquire()  # hold the only binding slot: the scheduler's POST waits behind it
            try:
                await c.create_pod("p", "4", "1Gi")
                await c.wait_for(lambda: _true(daemon.cache.is_assumed("default/p")), what="p assumed")
                chosen = _node_in_cache(daemon, "default/p")
                other = "n2" if chosen == "n1" else "n1"
                binding = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "p", "namespace": "default"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": other},
                }
                await c.request("POST", "/api/v1/namespaces/default/pods/p/binding", binding, ok=(201,))
            finally:
                binds.release()
            await c.wait_for(lambda: _true(_binding_calls(daemon) == 1), what="the scheduler's binding answered")
            await c.wait_for(
                lambda: _true(_node_in_cache(daemon, "default/p") == other), what="the cache shows p on the other node"
            )
            assert await c.node_of("p") == other
            assert not daemon.cache.is_assumed("default/p")
            assert daemon.scheduled == 0 and "default/p" not in daemon.queue
