"""Write a sysfs tree for a machine, so `knuma exporter --sysfs-root DIR` runs unchanged against a simulated node.

The inverse of `knuma.exporter.sysfs.discover`: `discover(render(topology, root)) == topology` (a test checks it for
every built-in shape). Only the files the exporter reads are written, with the kernel's formats: `cpulist`,
`meminfo` (`Node N MemTotal: ... kB`), `distance`, `hugepages/hugepages-<kB>kB/nr_hugepages`, `cpu/online`,
`node/online` and each CPU's `topology/thread_siblings_list`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from knuma.exporter.sysfs import MachineTopology, format_cpulist

__all__ = ["render"]

KIB = 1024


def render(topology: MachineTopology, root: str | os.PathLike[str]) -> Path:
    """Write `topology` under `root` (replacing a tree rendered there before) and return `root`."""
    sysfs = Path(root)
    system = sysfs / "devices" / "system"
    if system.exists():
        shutil.rmtree(system)
    node_root = system / "node"
    cpu_root = system / "cpu"
    ids = [node.id for node in topology.nodes]
    for node in topology.nodes:
        directory = node_root / f"node{node.id}"
        directory.mkdir(parents=True)
        (directory / "cpulist").write_text(format_cpulist(set(node.cpus)) + "\n")
        if node.memory_bytes is not None:
            if node.memory_bytes % KIB:
                raise ValueError(f"NUMA node {node.id}: memory {node.memory_bytes} is not a whole number of KiB")
            kb = node.memory_bytes // KIB
            (directory / "meminfo").write_text(
                f"Node {node.id} MemTotal:       {kb} kB\nNode {node.id} MemFree:        {kb} kB\n"
            )
        if node.distances:
            (directory / "distance").write_text(" ".join(str(node.distances[other]) for other in ids) + "\n")
        for size, pages in sorted(node.hugepages.items()):
            pool = directory / "hugepages" / f"hugepages-{size // KIB}kB"
            pool.mkdir(parents=True)
            (pool / "nr_hugepages").write_text(f"{pages}\n")
            (pool / "free_hugepages").write_text(f"{pages}\n")
    every = sorted(topology.cpu_to_node)
    for cpu in every:
        directory = cpu_root / f"cpu{cpu}" / "topology"
        directory.mkdir(parents=True)
        siblings = topology.thread_siblings.get(cpu, frozenset({cpu}))
        (directory / "thread_siblings_list").write_text(format_cpulist(set(siblings)) + "\n")
        package = topology.packages.get(cpu, topology.cpu_to_node[cpu])
        (directory / "physical_package_id").write_text(f"{package}\n")
    cpu_root.mkdir(parents=True, exist_ok=True)
    (cpu_root / "online").write_text(format_cpulist(set(every)) + "\n")
    (node_root / "online").write_text(format_cpulist(set(ids)) + "\n")
    return sysfs
