"""knuma's filter agrees with upstream NodeResourceTopologyMatch wherever upstream is right: single-numa-node nodes,
pods without init containers or overhead, integral CPUs, zones that report every requested native resource."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.scheduler.framework.interface import CycleState
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.numa_upstream import upstream_filter
from tests.scheduler.builders import container, node_info, nrt, pod

DEVICE = "example.com/nic"


@st.composite
def cases(draw: st.DrawFn):
    zone_count = draw(st.integers(1, 4))
    ids = sorted(draw(st.sets(st.integers(0, 7), min_size=zone_count, max_size=zone_count)))
    zones = {}
    for numa_id in ids:
        cpus = draw(st.integers(1, 16))
        mem = draw(st.integers(1, 32))
        devices = draw(st.integers(0, 2))
        zones[numa_id] = {
            "cpu": (str(cpus), str(draw(st.integers(0, cpus)))),
            "memory": (f"{mem}Gi", f"{draw(st.integers(0, mem))}Gi"),
            DEVICE: (str(devices), str(draw(st.integers(0, devices)))),
        }
    scope = draw(st.sampled_from(["container", "pod"]))
    guaranteed = draw(st.booleans())
    containers = []
    for index in range(draw(st.integers(1, 3))):
        cpu, mem, dev = draw(st.integers(1, 12)), draw(st.integers(1, 20)), draw(st.integers(0, 2))
        limits = {"cpu": str(cpu), "memory": f"{mem}Gi"} | ({DEVICE: str(dev)} if dev else {})
        if guaranteed:
            containers.append(container(f"c{index}", limits=limits))
        else:
            requests = {"cpu": str(max(1, cpu // 2)), "memory": f"{mem}Gi"} | ({DEVICE: str(dev)} if dev else {})
            containers.append(container(f"c{index}", requests=requests, limits={"cpu": str(cpu)} | limits))
    return nrt("n", zones, "single-numa-node", scope), pod(*containers)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_single_numa_node_filter_agrees_with_upstream(case) -> None:
    nrt_obj, the_pod = case
    node = node_info(nrt_obj)
    ours = NodeResourceTopologyMatch().filter(CycleState(), the_pod, node)
    theirs = upstream_filter(the_pod, node)
    assert (ours.ok, ours.reason) == (theirs.ok, theirs.reason)
