"""`knuma up` parts that need no processes: cluster resolution, scheduler profiles, summary."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knuma.errors import SpecError
from knuma.local.nodes.nrt import node_resource_topology
from knuma.local.nodes.objects import node_manifest
from knuma.local.nodes.simulated_kubelet import SimulatedKubelet
from knuma.local.nodes.spec import MAX_NODES, NodeSpec, nodes_of
from knuma.local.up.options import UpError, UpOptions, resolve_cluster, save_cluster
from knuma.local.up.stack import AWARE_PROFILE, UNAWARE_PROFILE, scheduler_configuration
from knuma.local.up.summary import COLUMNS, line, summarize, table_rows
from knuma.scheduler.config.load import build_profiles, default_config, parse_config
from knuma.testbed.shapes import BUILTIN_SHAPES
from tests.local.nodes.builders import guaranteed


def test_flags_spread_nodes_over_shapes() -> None:
    spec, _ = resolve_cluster(UpOptions(nodes=5, shapes=("two-socket", "gpu"), policy="restricted", scope="pod"))
    assert [(p.name, p.shape.name, p.count, p.policy.value, p.scope.value) for p in spec.pools] == [
        ("two-socket", "two-socket", 3, "restricted", "pod"),
        ("gpu", "gpu", 2, "restricted", "pod"),
    ]
    assert [n.name for n in nodes_of(spec)][:2] == ["two-socket-000", "two-socket-001"]
    default, _ = resolve_cluster(UpOptions())
    assert [(p.name, p.shape.name, p.count) for p in default.pools] == [("worker", "two-socket", 3)]


def test_more_nodes_than_addresses_is_a_spec_error_not_a_traceback() -> None:
    spec, _ = resolve_cluster(UpOptions(nodes=MAX_NODES + 1))
    with pytest.raises(SpecError, match=f"{MAX_NODES + 1} nodes: at most {MAX_NODES} simulated nodes"):
        nodes_of(spec)  # InvalidInput: the command line's `error:` line and exit 2
    assert len(nodes_of(resolve_cluster(UpOptions(nodes=MAX_NODES))[0])) == MAX_NODES


@pytest.mark.timeout(30)  # the nodes were built before they were counted: 10^8 took hours
def test_a_huge_node_count_is_refused_before_the_nodes_are_built(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"pools": [{"shape": "small", "count": 10**8}]}))
    spec, _ = resolve_cluster(UpOptions(cluster_file=cluster))
    with pytest.raises(SpecError, match=f"100000000 nodes: at most {MAX_NODES} simulated nodes"):
        nodes_of(spec)


def test_a_data_dir_resumes_its_cluster_and_refuses_another(tmp_path: Path) -> None:
    spec, document = resolve_cluster(UpOptions(nodes=2, shapes=("small",), data_dir=tmp_path))
    save_cluster(tmp_path, document)
    assert resolve_cluster(UpOptions(data_dir=tmp_path))[0] == spec
    assert resolve_cluster(UpOptions(nodes=2, shapes=("small",), data_dir=tmp_path))[0] == spec
    with pytest.raises(UpError, match="holds a cluster of 2x small"):
        resolve_cluster(UpOptions(nodes=3, data_dir=tmp_path))


def test_cluster_file_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "cluster.yaml"
    good.write_text(yaml.safe_dump({"pools": [{"name": "edge", "shape": "four-numa", "count": 2}]}))
    spec, _ = resolve_cluster(UpOptions(cluster_file=good))
    assert spec.node_count == 2
    with pytest.raises(UpError, match="drop --nodes"):
        resolve_cluster(UpOptions(cluster_file=good, nodes=3))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pools": [{"shape": "nope"}]}))
    with pytest.raises(UpError, match="unknown shape 'nope'"):
        resolve_cluster(UpOptions(cluster_file=bad))
    with pytest.raises(UpError, match="unknown Topology Manager policy"):
        resolve_cluster(UpOptions(policy="strict"))


def test_scheduler_profiles_one_numa_aware_one_not() -> None:
    profiles = build_profiles(parse_config(scheduler_configuration(), "knuma up"))
    assert set(profiles) == {AWARE_PROFILE, UNAWARE_PROFILE}
    filters = {name: [type(f).__name__ for f in p.filters] for name, p in profiles.items()}
    assert "NodeResourceTopologyMatch" in filters[AWARE_PROFILE]
    assert "NodeResourceTopologyMatch" not in filters[UNAWARE_PROFILE]
    # the NUMA-aware profile is knuma's own, as `knuma scheduler` runs it without a file and the simulator measures
    # it; the other is kube-scheduler's
    scores = {name: [p.name for p, _ in built.scorers] for name, built in profiles.items()}
    (own,) = build_profiles(default_config()).values()
    assert scores[AWARE_PROFILE] == [p.name for p, _ in own.scorers]
    assert "NodeResourcesBalancedAllocation" in scores[UNAWARE_PROFILE]


def test_summary_counts_outcomes_and_free_cpus_per_zone() -> None:
    node = NodeSpec("w-0", 0, BUILTIN_SHAPES["small"], "w")
    kubelet = SimulatedKubelet(node)
    kubelet.admit(guaranteed("a", 3))
    nrt = node_resource_topology(kubelet).to_dict()
    pods = [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "w-0"}, "status": {"phase": "Running"}},
        {
            "metadata": {"name": "b"},
            "spec": {"nodeName": "w-0"},
            "status": {"phase": "Failed", "reason": "TopologyAffinityError"},
        },
        {"metadata": {"name": "c"}, "spec": {}, "status": {"phase": "Pending"}},
    ]
    summary = summarize([node_manifest(node)], pods, [nrt])
    assert summary.ready_nodes == 1 and summary.nrts == 1
    assert summary.nodes[0].zones_cpu == ((5, 8), (8, 8)) and summary.nodes[0].pods == 1
    assert line(summary) == "nodes 1/1 Ready, NRT 1; pods: 1 Pending (unscheduled), 1 Running, 1 TopologyAffinityError"
    assert table_rows(summary) == [["w-0", "yes", "small", "single-numa-node", "1", "0: 5/8  1: 8/8"]]
    assert len(COLUMNS) == len(table_rows(summary)[0])


def test_data_dir_lock_names_its_holder_and_is_released(tmp_path: Path) -> None:
    import os

    from knuma.errors import KnumaError
    from knuma.local.up.lock import DataDirInUse, DataDirLock

    lock = DataDirLock.acquire(tmp_path)
    lock.record(url="https://127.0.0.1:1234")
    with pytest.raises(DataDirInUse) as refused:
        DataDirLock.acquire(tmp_path)
    assert isinstance(refused.value, KnumaError)
    assert f"PID {os.getpid()}" in str(refused.value) and "https://127.0.0.1:1234" in str(refused.value)
    lock.release()
    DataDirLock.acquire(tmp_path).release()
