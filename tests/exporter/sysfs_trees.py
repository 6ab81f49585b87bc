"""Write synthetic sysfs trees (the files `knuma.exporter.sysfs` reads) and unpack the real fixture snapshot."""

from __future__ import annotations

import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from knuma.exporter.sysfs import format_cpulist

# A real two-socket Intel Xeon L5640 snapshot (jaypipes/ghw testdata/snapshots, Apache-2.0).
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs" / "linux-amd64-intel-xeon-L5640.tar.gz"


@dataclass
class NodeSpec:
    cpus: list[int]
    mem_kb: int = 16 * 1024 * 1024
    hugepages: Mapping[int, int] = field(default_factory=lambda: {2048: 0, 1048576: 0})
    """page size in kB -> nr_hugepages"""


def write_tree(
    root: Path,
    nodes: Mapping[int, NodeSpec],
    *,
    threads_per_core: int = 2,
    offline: set[int] | None = None,
    pci: Mapping[str, int] | None = None,
    distances: Mapping[int, Mapping[int, int]] | None = None,
    core_ids: bool = False,
) -> Path:
    """A sysfs tree with the given NUMA nodes; sibling threads are consecutive CPUs of the same node."""
    node_root = root / "devices" / "system" / "node"
    cpu_root = root / "devices" / "system" / "cpu"
    ids = sorted(nodes)
    all_cpus = sorted(c for spec in nodes.values() for c in spec.cpus)
    for numa_id, spec in nodes.items():
        nd = node_root / f"node{numa_id}"
        nd.mkdir(parents=True)
        (nd / "cpulist").write_text(format_cpulist(set(spec.cpus)) + "\n")
        (nd / "meminfo").write_text(
            f"Node {numa_id} MemTotal:       {spec.mem_kb} kB\nNode {numa_id} MemFree:        {spec.mem_kb // 2} kB\n"
        )
        row = (distances or {}).get(numa_id) or {j: 10 if j == numa_id else 20 + abs(j - numa_id) for j in ids}
        (nd / "distance").write_text(" ".join(str(row[j]) for j in ids) + "\n")
        for size_kb, count in spec.hugepages.items():
            hp = nd / "hugepages" / f"hugepages-{size_kb}kB"
            hp.mkdir(parents=True)
            (hp / "nr_hugepages").write_text(f"{count}\n")
            (hp / "free_hugepages").write_text(f"{count}\n")
        cpus = sorted(spec.cpus)
        for i, cpu in enumerate(cpus):
            topo = cpu_root / f"cpu{cpu}" / "topology"
            topo.mkdir(parents=True)
            start = i - i % threads_per_core
            core = cpus[start : start + threads_per_core]
            if core_ids:  # older kernels: no thread_siblings_list, group by (package, core)
                (topo / "core_id").write_text(f"{cpus[start]}\n")
                (topo / "physical_package_id").write_text(f"{numa_id}\n")
            else:
                (topo / "thread_siblings_list").write_text(format_cpulist(set(core)) + "\n")
    online = set(all_cpus) - (offline or set())
    cpu_root.mkdir(parents=True, exist_ok=True)
    (cpu_root / "online").write_text(format_cpulist(online) + "\n")
    (node_root / "online").write_text(format_cpulist(set(ids)) + "\n")
    for address, numa in (pci or {}).items():
        dev = root / "devices" / "pci0000:00" / address
        dev.mkdir(parents=True)
        (dev / "numa_node").write_text(f"{numa}\n")
        (dev / "vendor").write_text("0x8086\n")
        (dev / "device").write_text("0x10c9\n")
        (dev / "class").write_text("0x020000\n")
        link_dir = root / "bus" / "pci" / "devices"
        link_dir.mkdir(parents=True, exist_ok=True)
        (link_dir / address).symlink_to(Path("..") / ".." / ".." / "devices" / "pci0000:00" / address)
    return root


# What the exporter reads: NUMA nodes, CPU topology, PCI devices' identity and NUMA node (a third of the snapshot;
# unpacking all of it takes seconds on slow disks).
_NEEDED = re.compile(
    r"^sys/(devices/system/(node|cpu/online|cpu/cpu\d+/topology)"
    r"|bus/pci/devices"
    r"|devices/pci[^/]+(/[0-9a-f]{4}:[^/]+)*(/(numa_node|vendor|device|class))?$)"
)


def unpack_fixture(dest: Path) -> Path:
    """Unpack the Xeon L5640 snapshot (the parts the exporter reads) and return its `sys` directory."""
    with tarfile.open(FIXTURE) as tar:
        members = [m for m in tar.getmembers() if _NEEDED.match(m.name)]
        tar.extractall(dest, members=members, filter="data")
    return dest / "sys"
