from __future__ import annotations

import os
from pathlib import Path

import pytest

from knuma.exporter.sysfs import (
    SysfsError,
    discover,
    format_cpulist,
    hugepages_resource_name,
    parse_cpulist,
)

from .sysfs_trees import NodeSpec, write_tree


def test_xeon_fixture_two_sockets(xeon_sysfs: Path) -> None:
    machine = discover(xeon_sysfs)
    assert machine.numa_ids == (0, 1)
    node0, node1 = machine.nodes
    assert node0.cpus == frozenset(range(0, 24, 2))
    assert node1.cpus == frozenset(range(1, 24, 2))
    assert node0.memory_bytes == 33771839488
    assert node1.memory_bytes == 33731551232
    assert node0.distances == {0: 10, 1: 20}
    assert node1.distances == {0: 20, 1: 10}
    assert node0.hugepages == {2 * 1024**2: 0, 1024**3: 0}
    assert machine.thread_siblings[0] == frozenset({0, 12})
    assert machine.thread_siblings[23] == frozenset({11, 23})
    assert machine.cpu_to_node[13] == 1
    by_address = {d.address: d for d in machine.pci_devices}
    assert by_address["0000:05:00.0"].numa_node == 0
    assert by_address["0000:05:00.1"].numa_node == 1
    assert by_address["0000:05:00.0"].device_class == "0x020000"
    assert by_address["0000:00:00.0"].numa_node is None
    nics = sorted(d.address for d in machine.pci_devices if d.device_class == "0x020000" and d.numa_node == 1)
    assert nics == ["0000:05:00.1", "0000:05:10.1", "0000:05:10.5", "0000:05:11.1", "0000:05:11.5"]


def test_four_nodes_with_hugepages_of_two_sizes(tmp_path: Path) -> None:
    nodes = {
        i: NodeSpec(
            cpus=list(range(i * 8, i * 8 + 8)), mem_kb=(i + 1) * 1_000_000, hugepages={2048: 64 * i, 1048576: i}
        )
        for i in range(4)
    }
    machine = discover(write_tree(tmp_path, nodes))
    assert machine.numa_ids == (0, 1, 2, 3)
    assert [len(n.cpus) for n in machine.nodes] == [8, 8, 8, 8]
    assert machine.nodes[2].memory_bytes == 3_000_000 * 1024
    assert machine.nodes[3].hugepages == {2 * 1024**2: 192, 1024**3: 3}
    assert machine.nodes[1].distances == {0: 21, 1: 10, 2: 21, 3: 22}
    assert machine.thread_siblings[9] == frozenset({8, 9})


def test_siblings_from_core_ids(tmp_path: Path) -> None:
    machine = discover(write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1, 2, 3]), 1: NodeSpec(cpus=[4, 5])}, core_ids=True))
    assert machine.thread_siblings == {
        0: frozenset({0, 1}),
        1: frozenset({0, 1}),
        2: frozenset({2, 3}),
        3: frozenset({2, 3}),
        4: frozenset({4, 5}),
        5: frozenset({4, 5}),
    }


def test_eight_nodes(tmp_path: Path) -> None:
    nodes = {i: NodeSpec(cpus=list(range(i * 32, i * 32 + 32))) for i in range(8)}
    machine = discover(write_tree(tmp_path, nodes))
    assert machine.numa_ids == tuple(range(8))
    assert len(machine.cpu_to_node) == 256
    assert machine.cpu_to_node[255] == 7


def test_non_contiguous_ids_keyed_by_real_id(tmp_path: Path) -> None:
    """node10 sorts before node2 lexicographically; distances columns follow ascending real ids."""
    nodes = {0: NodeSpec(cpus=[0, 1]), 2: NodeSpec(cpus=[2, 3]), 10: NodeSpec(cpus=[4, 5])}
    distances = {0: {0: 10, 2: 21, 10: 31}, 2: {0: 21, 2: 10, 10: 32}, 10: {0: 31, 2: 32, 10: 10}}
    machine = discover(write_tree(tmp_path, nodes, distances=distances))
    assert machine.numa_ids == (0, 2, 10)
    assert machine.node_by_id[10].cpus == frozenset({4, 5})
    assert machine.node_by_id[10].distances == {0: 31, 2: 32, 10: 10}
    assert machine.node_by_id[2].distances == {0: 21, 2: 10, 10: 32}


def test_memory_only_node(tmp_path: Path) -> None:
    nodes = {0: NodeSpec(cpus=[0, 1, 2, 3]), 1: NodeSpec(cpus=[], mem_kb=64 * 1024 * 1024)}
    machine = discover(write_tree(tmp_path, nodes))
    assert machine.node_by_id[1].cpus == frozenset()
    assert machine.node_by_id[1].memory_bytes == 64 * 1024**3


def test_offline_cpus_are_not_counted(tmp_path: Path) -> None:
    machine = discover(write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1, 2, 3])}, offline={2, 3}))
    assert machine.nodes[0].cpus == frozenset({0, 1})


def test_offline_from_per_cpu_online_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1, 2, 3])})
    (root / "devices/system/cpu/online").unlink()
    (root / "devices/system/cpu/cpu3/online").write_text("0\n")
    (root / "devices/system/cpu/cpu2/online").write_text("1\n")
    assert discover(root).nodes[0].cpus == frozenset({0, 1, 2})


def test_devices_on_different_nodes(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])},
        pci={"0000:3b:00.0": 0, "0000:af:00.0": 1, "0000:00:1f.0": -1},
    )
    machine = discover(root)
    assert {d.address: d.numa_node for d in machine.pci_devices} == {
        "0000:00:1f.0": None,
        "0000:3b:00.0": 0,
        "0000:af:00.0": 1,
    }


def test_missing_cpulist_names_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])})
    victim = root / "devices/system/node/node1/cpulist"
    victim.unlink()
    with pytest.raises(SysfsError, match=f"{victim}: missing"):
        discover(root)


def test_garbage_meminfo_names_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1])})
    victim = root / "devices/system/node/node0/meminfo"
    victim.write_text("Node 0 MemTotal:  lots of kB\n")
    with pytest.raises(SysfsError, match=str(victim)):
        discover(root)


def test_meminfo_without_memtotal_names_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1])})
    victim = root / "devices/system/node/node0/meminfo"
    victim.write_text("\x00\x01 garbage\n")
    with pytest.raises(SysfsError, match=f"{victim}: no MemTotal"):
        discover(root)


def test_garbage_cpulist_and_distance_name_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])})
    cpulist = root / "devices/system/node/node0/cpulist"
    cpulist.write_text("0-x\n")
    with pytest.raises(SysfsError, match=str(cpulist)):
        discover(root)
    cpulist.write_text("0-1\n")
    distance = root / "devices/system/node/node1/distance"
    distance.write_text("20\n")
    with pytest.raises(SysfsError, match=f"{distance}: 1 distances for 2 NUMA nodes"):
        discover(root)


def test_garbage_hugepages_names_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1])})
    victim = root / "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
    victim.write_text("many\n")
    with pytest.raises(SysfsError, match=str(victim)):
        discover(root)


def test_missing_node_directory_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(SysfsError, match="--sysfs-root"):
        discover(tmp_path)


def test_cpu_listed_twice_is_rejected(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])})
    (root / "devices/system/node/node1/cpulist").write_text("1-3\n")
    with pytest.raises(SysfsError, match="CPU 1 is listed by both node0 and node1"):
        discover(root)


def test_missing_meminfo_means_unknown_memory(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1])})
    os.unlink(root / "devices/system/node/node0/meminfo")
    assert discover(root).nodes[0].memory_bytes is None


def test_cpulist_round_trip() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpulist("\n") == frozenset()
    assert format_cpulist({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    with pytest.raises(SysfsError):
        parse_cpulist("3-1")


def test_hugepages_resource_names() -> None:
    assert hugepages_resource_name(2048 * 1024) == "hugepages-2Mi"
    assert hugepages_resource_name(1048576 * 1024) == "hugepages-1Gi"
    assert hugepages_resource_name(64 * 1024) == "hugepages-64Ki"
