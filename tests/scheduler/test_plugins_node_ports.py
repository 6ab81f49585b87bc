"""NodePorts: host port conflicts as kube-scheduler's HostPortInfo decides them."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.ports import HostPort, conflicts, pod_host_ports
from knuma.scheduler.framework.interface import Code, CycleState, Profile, schedule_one
from knuma.scheduler.plugins.node_ports import NodePorts
from tests.scheduler.objects import node, pod


def container(name: str, *ports: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "ports": list(ports), **extra}


def test_pod_host_ports_of_app_containers_and_sidecars_only() -> None:
    spec = {
        "initContainers": [
            container("setup", {"containerPort": 1, "hostPort": 7001}),
            container("proxy", {"containerPort": 2, "hostPort": 7002, "protocol": "UDP"}, restartPolicy="Always"),
        ],
        "containers": [
            container("app", {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}, {"containerPort": 81}),
        ],
    }
    assert pod_host_ports(spec) == (HostPort("0.0.0.0", "UDP", 7002), HostPort("10.0.0.1", "TCP", 8080))


@pytest.mark.parametrize(
    ("used", "wanted", "clash"),
    [
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "UDP", 80), False),
        (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "TCP", 81), False),
        (HostPort("0.0.0.0", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),  # bind-all takes every address
        (HostPort("10.0.0.1", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.2", "TCP", 80), False),  # different addresses coexist
    ],
)
def test_conflicts(used: HostPort, wanted: HostPort, clash: bool) -> None:
    assert conflicts([used], wanted) is clash


def test_filter() -> None:
    plugin = NodePorts()
    wants_8080 = pod(containers=[container("app", {"containerPort": 80, "hostPort": 8080})])
    busy = node("busy", used_ports=[HostPort("0.0.0.0", "TCP", 8080)])
    status = plugin.filter(CycleState(), wants_8080, busy)
    assert (status.code, status.reason, status.plugin) == (
        Code.UNSCHEDULABLE,
        "node(s) didn't have free ports for the requested pod ports",
        "NodePorts",
    )
    assert plugin.filter(CycleState(), wants_8080, node("free", used_ports=[HostPort("0.0.0.0", "UDP", 8080)])).ok
    assert plugin.filter(CycleState(), pod(), busy).ok
    assert plugin.pre_filter(CycleState(), pod()).skip
    assert not plugin.pre_filter(CycleState(), wants_8080).skip
    # two of the pod's own containers asking for the same port are not checked against each other
    twice = pod(containers=[container(n, {"containerPort": 80, "hostPort": 9000}) for n in ("a", "b")])
    assert plugin.filter(CycleState(), twice, node("n")).ok


def test_schedule_one_places_a_host_port_pod_where_the_port_is_free() -> None:
    profile = Profile("p", (NodePorts(),), ())
    wants = pod(containers=[container("app", {"containerPort": 53, "hostPort": 53, "protocol": "UDP"})])
    nodes = [
        node("a", used_ports=[HostPort("0.0.0.0", "UDP", 53)]),
        node("b", used_ports=[HostPort("0.0.0.0", "TCP", 53)]),
    ]
    result = schedule_one(profile, wants, nodes)
    assert result.selected == "b"
    taken = schedule_one(profile, wants, nodes[:1])
    assert (
        taken.failure_summary()
        == "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )


def test_the_daemon_cache_accounts_host_ports_of_bound_and_assumed_pods() -> None:
    from knuma.scheduler.cache.nrt import ClusterCache
    from knuma.scheduler.config.load import build_profiles, default_config

    cache = ClusterCache()
    for name in ("a", "b"):
        cache.upsert_node(node(name).manifest or {})
    bound = {
        "metadata": {"name": "dns", "namespace": "kube-system"},
        "spec": {
            "nodeName": "a",
            "containers": [container("dns", {"containerPort": 53, "hostPort": 53, "protocol": "UDP"})],
        },
    }
    cache.upsert_pod(bound)
    assert cache.node_info("a").used_ports == {HostPort("0.0.0.0", "UDP", 53)}  # type: ignore[union-attr]
    wants = pod("dns2", containers=[container("dns", {"containerPort": 53, "hostPort": 53, "protocol": "UDP"})])
    profile = build_profiles(default_config())["topology-aware-scheduler"]
    assert schedule_one(profile, wants, cache.node_infos()).selected == "b"
    cache.assume(wants, "b")
    result = schedule_one(profile, pod("dns3", containers=wants.spec["containers"]), cache.node_infos())
    assert (
        result.failure_summary()
        == "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    )
    cache.delete_pod(bound)
    assert cache.node_info("a").used_ports == frozenset()  # type: ignore[union-attr]
