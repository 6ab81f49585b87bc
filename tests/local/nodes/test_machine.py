"""A shape made concrete: the sysfs tree the exporter reads back, and the NRT it builds from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.sysfs import discover
from knuma.local.nodes.machine import Machine, hugepage_size
from knuma.local.nodes.sysfs import render
from knuma.testbed.shapes import BUILTIN_SHAPES, shape_from_dict
from knuma.topology.node import NodeTopology

CUSTOM = shape_from_dict(
    "odd",
    {
        "numaZones": 3,
        "cpusPerZone": 5,
        "memoryPerZone": "10Gi",
        "resourcesPerZone": {"hugepages-2Mi": "1Gi", "example.com/nic": 2},
        "reservedCPUs": 4,
        "reservedMemoryPerZone": "512Mi",
    },
)
SHAPES = [*BUILTIN_SHAPES.values(), CUSTOM]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_sysfs_tree_reads_back_identically(shape, tmp_path: Path) -> None:
    machine = Machine(shape)
    topology = machine.topology()
    assert discover(render(topology, tmp_path / "sys")) == topology
    # rendering again over the same root replaces the tree
    assert discover(render(topology, tmp_path / "sys")) == topology


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_empty_node_nrt_matches_the_shape(shape) -> None:
    """The exporter's NRT of an empty simulated node is the shape's topology: capacity, allocatable, available."""
    machine = Machine(shape)
    nrt = build(machine.topology(), KubeletState(machine.allocatable(), ()), BuildOptions(node_name="n")).nrt
    built = NodeTopology.from_nrt(nrt)
    expected = shape.topology("n")
    for got, want in zip(built.zones, expected.zones, strict=True):
        assert got.id == want.id
        assert dict(got.capacity) == dict(want.capacity)
        assert dict(got.allocatable) == dict(want.allocatable)
        assert dict(got.available) == dict(want.allocatable)
        assert dict(got.distances) == dict(want.distances)


def test_cpu_numbering_reservations_and_devices() -> None:
    machine = Machine(BUILTIN_SHAPES["two-socket"])  # 2 zones x 32 CPUs, 2 reserved
    assert machine.cpus_by_zone[0][:3] == (0, 2, 4) and machine.cpus_by_zone[1][:3] == (1, 3, 5)
    assert machine.siblings(0) == {0, 32} and machine.zone_of_cpu[32] == 0
    assert machine.reserved_cpus_text == "0-1"
    assert machine.hugepages == {2 * 2**20: 0, 2**30: 32}
    gpu = Machine(BUILTIN_SHAPES["gpu"])
    assert gpu.devices == {
        "nvidia.com/gpu": (("gpu-0-0", "gpu-0-1", "gpu-0-2", "gpu-0-3"), tuple(f"gpu-1-{i}" for i in range(4)))
    }
    assert hugepage_size("hugepages-2Mi") == 2 * 2**20
