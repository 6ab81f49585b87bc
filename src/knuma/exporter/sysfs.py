"""Discover the NUMA topology of a machine from a sysfs tree.

`discover(root)` reads `<root>/devices/system/node/node<N>/` (CPU list, `meminfo`, `hugepages/`, `distance`), the CPU
thread siblings under `<root>/devices/system/cpu/` and the PCI devices' `numa_node` under `<root>/bus/pci/devices/`.
`root` is the sysfs mount point: `/sys` on a host, the host's `/sys` mounted read-only (`/host-sys`) in a DaemonSet,
or a tree written by a test.

Unlike ghw (used by resource-topology-exporter) NUMA nodes are keyed by the id in their directory name, never by
their position in a listing, so machines with non-contiguous ids (`node0`, `node2`, `node5`) and memory-only nodes
(an empty `cpulist`) come out right. A file that exists but cannot be parsed is an error naming that file: publishing
a wrong topology is worse than publishing none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from knuma.errors import InvalidInput
from knuma.quantity import QuantityFormat, format_quantity

__all__ = [
    "MachineTopology",
    "NUMANode",
    "PCIDevice",
    "SysfsError",
    "discover",
    "format_cpulist",
    "hugepages_resource_name",
    "parse_cpulist",
]

# ASCII only: Python's `\d` and `int()` also read other scripts' digits (`٣` is 3), the kernel never writes them.
_NODE_DIR = re.compile(r"^node([0-9]+)$", re.ASCII)
_CPU_DIR = re.compile(r"^cpu([0-9]+)$", re.ASCII)
_HUGEPAGES_DIR = re.compile(r"^hugepages-([0-9]+)kB$", re.ASCII)
_MEMTOTAL = re.compile(r"^Node\s+([0-9]+)\s+MemTotal:\s+([0-9]+)\s+kB\s*$", re.ASCII)
_INTEGER = re.compile(r"^-?[0-9]{1,19}$", re.ASCII)
#: Linux's largest `CONFIG_NR_CPUS` (x86-64 MAXSMP) and `MAX_NUMNODES` (NODES_SHIFT 10): ids beyond are corrupt data,
#: and a `0-20000000` cpulist must not cost seconds and gigabytes before it is refused.
MAX_CPUS = 8192
MAX_NUMA_NODES = 1024
#: The largest sysfs file read (a cpulist of 8,192 single CPUs is ~40 KB; sysfs attributes are at most a page).
MAX_FILE_BYTES = 1 << 20


class SysfsError(InvalidInput):
    """A sysfs tree that cannot describe a machine; the message names the offending file."""


@dataclass(frozen=True, slots=True)
class NUMANode:
    id: int
    cpus: frozenset[int]
    """Online logical CPUs of the node (empty for a memory-only node)."""
    memory_bytes: int | None
    """`MemTotal` of the node's `meminfo` in bytes; None when the kernel does not expose it."""
    hugepages: Mapping[int, int] = field(default_factory=dict)
    """Huge page size in bytes -> number of pages reserved on this node (`nr_hugepages`)."""
    distances: Mapping[int, int] = field(default_factory=dict)
    """NUMA id -> distance from this node (`distance`, 10 for itself)."""


@dataclass(frozen=True, slots=True)
class PCIDevice:
    address: str
    numa_node: int | None
    """The device's NUMA node, None when the platform reports no locality (-1)."""
    vendor: str = ""
    device: str = ""
    device_class: str = ""


@dataclass(frozen=True)
class MachineTopology:
    nodes: tuple[NUMANode, ...]
    """NUMA nodes sorted by id."""
    thread_siblings: Mapping[int, frozenset[int]] = field(default_factory=dict)
    """Logical CPU -> the logical CPUs sharing its physical core (itself included)."""
    packages: Mapping[int, int] = field(default_factory=dict)
    """Logical CPU -> its socket (`topology/physical_package_id`), when sysfs says."""
    pci_devices: tuple[PCIDevice, ...] = ()

    @cached_property
    def cpu_to_node(self) -> dict[int, int]:
        return {cpu: node.id for node in self.nodes for cpu in node.cpus}

    @cached_property
    def node_by_id(self) -> dict[int, NUMANode]:
        return {node.id: node for node in self.nodes}

    @property
    def numa_ids(self) -> tuple[int, ...]:
        return tuple(node.id for node in self.nodes)


def parse_cpulist(text: str, where: str = "cpulist") -> frozenset[int]:
    """Parse the kernel's list format (`0-3,8,10-11`; empty for none)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, sep, last = part.partition("-")
        if not _INTEGER.match(first) or (sep and not _INTEGER.match(last)):
            raise SysfsError(f"{where}: invalid CPU list {_shown(text.strip())}")
        low = int(first)
        high = int(last) if sep else low
        if low < 0 or high < low:
            raise SysfsError(f"{where}: invalid CPU range {_shown(part)}")
        if high >= MAX_CPUS:
            raise SysfsError(f"{where}: CPU {high} is beyond the largest CPU id Linux supports ({MAX_CPUS - 1})")
        cpus.update(range(low, high + 1))
    return frozenset(cpus)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def format_cpulist(cpus: frozenset[int] | set[int]) -> str:
    """The kernel's compact list format: {0,1,2,5} -> `0-2,5`."""
    ordered = sorted(cpus)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def hugepages_resource_name(page_size_bytes: int) -> str:
    """`hugepages-` + the BinarySI page size, as the kubelet names it: 2 MiB -> `hugepages-2Mi`."""
    return "hugepages-" + format_quantity(page_size_bytes * 10**9, QuantityFormat.BINARY_SI)


def discover(root: str | os.PathLike[str] = "/sys") -> MachineTopology:
    """Read the NUMA topology under the sysfs mount point `root`; raise `SysfsError` naming the file on bad data."""
    sysfs = Path(root)
    node_root = sysfs / "devices" / "system" / "node"
    if not node_root.is_dir():
        raise SysfsError(
            f"{node_root}: no such directory; --sysfs-root must point at a sysfs mount (the host's /sys) "
            "of a kernel with NUMA support"
        )
    node_ids = sorted(
        int(m.group(1))
        for entry in os.listdir(node_root)
        if (m := _NODE_DIR.match(entry)) and (node_root / entry).is_dir()
    )
    if not node_ids:
        raise SysfsError(f"{node_root}: no node<N> directories found")
    if node_ids[-1] >= MAX_NUMA_NODES:
        raise SysfsError(
            f"{node_root}/node{node_ids[-1]}: NUMA node id beyond the largest Linux supports ({MAX_NUMA_NODES - 1})"
        )
    online = _online_cpus(sysfs)
    nodes = tuple(_read_node(node_root / f"node{numa_id}", numa_id, node_ids, online) for numa_id in node_ids)
    seen: dict[int, int] = {}
    for node in nodes:
        for cpu in node.cpus:
            if cpu in seen:
                raise SysfsError(f"{node_root}: CPU {cpu} is listed by both node{seen[cpu]} and node{node.id}")
            seen[cpu] = node.id
    return MachineTopology(
        nodes=nodes,
        thread_siblings=_thread_siblings(sysfs, frozenset(seen)),
        packages=_packages(sysfs, frozenset(seen)),
        pci_devices=_pci_devices(sysfs),
    )


def _read(path: Path) -> str:
    """A sysfs attribute as text: ASCII from the kernel; anything else (or anything huge) is an error naming it."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise SysfsError(f"{path}: missing") from None
    except OSError as err:
        raise SysfsError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SysfsError(f"{path}: larger than {MAX_FILE_BYTES} bytes; not a sysfs attribute")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SysfsError(f"{path}: not valid UTF-8 text (byte {err.start}); not what the kernel writes") from None


def _online_cpus(sysfs: Path) -> frozenset[int] | None:
    """The online CPUs, or None when the tree does not say (then every listed CPU counts as online)."""
    path = sysfs / "devices" / "system" / "cpu" / "online"
    if path.is_file():
        online = parse_cpulist(_read(path), str(path))
        if not online:
            raise SysfsError(f"{path}: lists no online CPU (the kernel always has one); the file is truncated")
        return online
    cpu_root = sysfs / "devices" / "system" / "cpu"
    if not cpu_root.is_dir():
        return None
    offline: set[int] = set()
    for entry in os.listdir(cpu_root):
        match = _CPU_DIR.match(entry)
        flag = cpu_root / entry / "online"
        if match and int(match.group(1)) < MAX_CPUS and flag.is_file() and _read(flag).strip() == "0":
            offline.add(int(match.group(1)))
    if not offline:
        return None
    every = {
        int(m.group(1)) for entry in os.listdir(cpu_root) if (m := _CPU_DIR.match(entry)) and int(m.group(1)) < MAX_CPUS
    }
    return frozenset(every - offline)


def _read_node(path: Path, numa_id: int, all_ids: list[int], online: frozenset[int] | None) -> NUMANode:
    cpulist = path / "cpulist"
    cpus = parse_cpulist(_read(cpulist), str(cpulist))
    if online is not None:
        cpus = cpus & online
    return NUMANode(
        id=numa_id,
        cpus=cpus,
        memory_bytes=_memtotal(path / "meminfo", numa_id),
        hugepages=_hugepages(path / "hugepages"),
        distances=_distances(path / "distance", numa_id, all_ids),
    )


def _memtotal(path: Path, numa_id: int) -> int | None:
    if not path.exists():
        return None
    text = _read(path)
    for line in text.splitlines():
        if "MemTotal:" not in line:
            continue
        match = _MEMTOTAL.match(line.strip())
        if not match:
            raise SysfsError(f"{path}: cannot parse MemTotal line {line.strip()!r}; expected 'Node N MemTotal: <n> kB'")
        if int(match.group(1)) != numa_id:
            raise SysfsError(f"{path}: MemTotal line is for node {match.group(1)}, expected node {numa_id}")
        return int(match.group(2)) * 1024
    raise SysfsError(f"{path}: no MemTotal line")


def _hugepages(path: Path) -> dict[int, int]:
    if not path.is_dir():
        return {}
    pages: dict[int, int] = {}
    for entry in sorted(os.listdir(path)):
        match = _HUGEPAGES_DIR.match(entry)
        if not match:
            continue
        count_file = path / entry / "nr_hugepages"
        text = _read(count_file).strip()
        if not _INTEGER.match(text) or text.startswith("-"):
            raise SysfsError(f"{count_file}: expected a number of pages, got {_shown(text)}")
        pages[int(match.group(1)) * 1024] = int(text)
    return pages


def _distances(path: Path, numa_id: int, all_ids: list[int]) -> dict[int, int]:
    """The kernel prints one distance per online node, in ascending id order: columns map to real ids."""
    if not path.exists():
        return {}
    fields = _read(path).split()
    if len(fields) != len(all_ids):
        raise SysfsError(f"{path}: {len(fields)} distances for {len(all_ids)} NUMA nodes {all_ids}")
    if not all(_INTEGER.match(f) for f in fields):
        raise SysfsError(f"{path}: distances must be integers, got {_shown(' '.join(fields))}")
    values = [int(f) for f in fields]
    distances = dict(zip(all_ids, values, strict=True))
    if distances[numa_id] != min(values):
        raise SysfsError(f"{path}: the distance of node{numa_id} to itself must be the smallest, got {fields}")
    return distances


def _thread_siblings(sysfs: Path, cpus: frozenset[int]) -> dict[int, frozenset[int]]:
    """CPU -> its core's threads, from `thread_siblings_list` (or core_id + package id when the list is absent)."""
    cpu_root = sysfs / "devices" / "system" / "cpu"
    siblings: dict[int, frozenset[int]] = {}
    cores: dict[tuple[str, str], set[int]] = {}
    for cpu in sorted(cpus):
        topo = cpu_root / f"cpu{cpu}" / "topology"
        listed = topo / "thread_siblings_list"
        if listed.is_file():
            siblings[cpu] = parse_cpulist(_read(listed), str(listed)) | {cpu}
        elif (topo / "core_id").is_file():
            package = _read(topo / "physical_package_id").strip() if (topo / "physical_package_id").is_file() else ""
            cores.setdefault((package, _read(topo / "core_id").strip()), set()).add(cpu)
        else:
            siblings[cpu] = frozenset({cpu})
    for members in cores.values():
        group = frozenset(members)
        for cpu in members:
            siblings[cpu] = group
    return siblings


def _packages(sysfs: Path, cpus: frozenset[int]) -> dict[int, int]:
    """CPU -> `physical_package_id` (the socket), for the CPUs that have one."""
    out: dict[int, int] = {}
    for cpu in sorted(cpus):
        path = sysfs / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology" / "physical_package_id"
        if path.is_file():
            text = _read(path).strip()
            if not text.lstrip("-").isdigit():
                raise SysfsError(f"{path}: expected a socket id, got {text!r}")
            out[cpu] = int(text)
    return out


def _pci_devices(sysfs: Path) -> tuple[PCIDevice, ...]:
    root = sysfs / "bus" / "pci" / "devices"
    if not root.is_dir():
        return ()
    devices = []
    for address in sorted(os.listdir(root)):
        path = root / address
        numa_file = path / "numa_node"
        numa: int | None = None
        if numa_file.exists():
            text = _read(numa_file).strip()
            if not _INTEGER.match(text):
                raise SysfsError(f"{numa_file}: expected a NUMA node id or -1, got {_shown(text)}")
            value = int(text)
            numa = value if value >= 0 else None
        devices.append(
            PCIDevice(
                address=address,
                numa_node=numa,
                vendor=_optional(path / "vendor"),
                device=_optional(path / "device"),
                device_class=_optional(path / "class"),
            )
        )
    return tuple(devices)


def _optional(path: Path) -> str:
    try:
        return _read(path).strip()
    except SysfsError:
        return ""
