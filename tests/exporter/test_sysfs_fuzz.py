"""Fuzzing `knuma.exporter.sysfs`: any content in any file the exporter reads gives a topology or a `SysfsError`
(a `knuma.errors.InvalidInput`) naming the file, quickly; plus the cases that once went wrong."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.errors import InvalidInput
from knuma.exporter.sysfs import MAX_CPUS, SysfsError, discover, parse_cpulist
from tests.exporter.sysfs_trees import NodeSpec, write_tree

_HOSTILE = st.one_of(
    st.binary(max_size=24),
    st.text(max_size=24).map(str.encode),
    st.sampled_from(
        [
            b"",
            b"\n",
            b"0-20000000",
            b"\xd9\xa3",
            "²".encode(),
            b"\xff\xfe",
            b"-1",
            b"3-1",
            b"0-3,",
            b",,",
            b"1e3",
            b"99999999999999999999999999",
            b"Node 0 MemTotal: x kB",
            b"10 20 30 40",
            b"0-8191",
            b"8192",
        ]
    ),
)
_FILES = [
    "devices/system/node/node0/cpulist",
    "devices/system/node/node1/cpulist",
    "devices/system/node/node0/meminfo",
    "devices/system/node/node0/distance",
    "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages",
    "devices/system/cpu/online",
    "devices/system/cpu/cpu0/topology/thread_siblings_list",
    "devices/pci0000:00/0000:00:01.0/numa_node",
]


def _tree(root: Path) -> Path:
    return write_tree(root, {0: NodeSpec(cpus=[0, 1, 2, 3]), 1: NodeSpec(cpus=[4, 5, 6, 7])}, pci={"0000:00:01.0": 1})


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_FILES), _HOSTILE), min_size=1, max_size=3))
def test_hostile_file_contents_give_a_topology_or_a_sysfs_error_naming_the_file(
    edits: list[tuple[str, bytes]],
) -> None:
    work = Path(tempfile.mkdtemp(prefix="knuma-sysfs-fuzz-"))
    try:
        root = _tree(work / "sys")
        for path, content in edits:
            (root / path).write_bytes(content)
        started = time.perf_counter()
        try:
            topology = discover(root)
        except SysfsError as err:
            assert isinstance(err, InvalidInput)
            assert str(root) in str(err)
        else:
            assert all(0 <= cpu < MAX_CPUS for node in topology.nodes for cpu in node.cpus)
            assert all(node.cpus for node in topology.nodes) or any(p.endswith(("cpulist", "online")) for p, _ in edits)
        assert time.perf_counter() - started < 2.0
    finally:
        shutil.rmtree(work)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=30), st.from_regex(r"[0-9٣,\- ]{0,20}", fullmatch=True)))
def test_any_cpulist_text_parses_or_raises_sysfs_error(text: str) -> None:
    try:
        cpus = parse_cpulist(text, "cpulist")
    except SysfsError as err:
        assert str(err).startswith("cpulist: ")
    else:
        assert all(0 <= cpu < MAX_CPUS for cpu in cpus)


def test_an_unbounded_cpulist_is_refused_at_once() -> None:
    started = time.perf_counter()
    with pytest.raises(SysfsError, match="beyond the largest CPU id"):
        parse_cpulist("0-20000000", "node0/cpulist")
    assert time.perf_counter() - started < 0.1


def test_other_scripts_digits_are_not_cpu_ids() -> None:
    with pytest.raises(SysfsError, match="invalid CPU list"):
        parse_cpulist("\u0663", "cpulist")


def test_superscripts_invalid_utf8_and_an_empty_online_list_are_errors(tmp_path: Path) -> None:
    root = _tree(tmp_path / "sys")
    pages = root / "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"
    pages.write_text("²\n")
    with pytest.raises(SysfsError, match="nr_hugepages: expected a number of pages"):
        discover(root)
    pages.write_bytes(b"\xff\n")
    with pytest.raises(SysfsError, match="nr_hugepages: not valid UTF-8"):
        discover(root)
    pages.write_text("0\n")
    (root / "devices/system/cpu/online").write_text("\n")
    with pytest.raises(SysfsError, match="online: lists no online CPU"):
        discover(root)


def test_numa_ids_beyond_linux_limits_are_errors(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1]), 5000: NodeSpec(cpus=[2, 3])})
    with pytest.raises(SysfsError, match="node5000: NUMA node id beyond"):
        discover(root)
