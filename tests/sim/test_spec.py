from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import QOSClass
from knuma.sim.scenarios import BUILTIN, builtin_scenario
from knuma.sim.spec import scenario_from_dict, workload_from_dict
from knuma.testbed.cluster import SpecError, cluster_from_dict
from knuma.testbed.shapes import BUILTIN_SHAPES, ShapeError

from .conftest import small_scenario


def test_builtin_shapes_cover_the_required_machines() -> None:
    zones = {s.zones for s in BUILTIN_SHAPES.values()}
    assert {2, 4, 8} <= zones
    gpu = BUILTIN_SHAPES["gpu"]
    assert gpu.resources["nvidia.com/gpu"] == 4
    two = BUILTIN_SHAPES["two-socket"]
    topology = two.topology("n1")
    # reserved CPUs are taken from allocatable, not from capacity
    assert topology.zones[0].allocatable["cpu"] == 31_000
    assert topology.zones[0].capacity["cpu"] == 32_000
    assert two.allocatable()["cpu"] == 62_000


def test_every_builtin_scenario_parses() -> None:
    assert {"default", "burst", "lag60", "fragmented", "devices", "restricted"} <= set(BUILTIN)
    for name in BUILTIN:
        scenario = builtin_scenario(name)
        assert scenario.cluster.node_count > 0
        assert sum(scenario.workload.counts().values()) == scenario.workload.pods
    assert builtin_scenario("default").optimal_supported
    assert builtin_scenario("lag60").nrt_period == 60


def test_cluster_errors_name_the_field() -> None:
    with pytest.raises(SpecError, match=r"cluster.pools\[0\].shape: unknown shape 'huge'"):
        cluster_from_dict({"pools": [{"shape": "huge", "count": 1}]})
    with pytest.raises(SpecError, match="policy"):
        cluster_from_dict({"pools": [{"shape": "small", "policy": "strict"}]})
    with pytest.raises(SpecError, match="unknown field"):
        cluster_from_dict({"pools": [{"shape": "small", "cuont": 2}]})
    with pytest.raises(SpecError, match="non-empty list"):
        cluster_from_dict({"pools": []})
    with pytest.raises(SpecError, match=r"cpuManagerPolicyOptions.*unknown CPU Manager Policy option 'smt'"):
        shape = {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "8Gi", "cpuManagerPolicyOptions": {"smt": "true"}}
        cluster_from_dict({"shapes": {"s": shape}, "pools": [{"shape": "s"}]})
    by_socket = {
        "numaZones": 4,
        "cpusPerZone": 8,
        "memoryPerZone": "8Gi",
        "cpuManagerPolicyOptions": {"align-by-socket": "1"},
    }
    with pytest.raises(SpecError, match=r"pools\[0\]: shape s has the CPU manager option align-by-socket"):
        cluster_from_dict({"shapes": {"s": by_socket}, "pools": [{"shape": "s"}]})
    spec = cluster_from_dict({"shapes": {"s": by_socket}, "pools": [{"shape": "s", "policy": "restricted"}]})
    assert spec.pools[0].shape.topology("n").cpu_manager.numa_sockets == {0: 0, 1: 0, 2: 1, 3: 1}


def test_a_shape_says_how_many_sockets_hold_its_zones() -> None:
    """`sockets` sets the socket map (which decides the kubelet's `numaFirst` / `socketsFirst` CPU order and the
    distances); by default one socket per zone up to two zones, two zones per socket beyond."""

    def sockets_of(**extra: object) -> dict[int, int]:
        shape = {"numaZones": 4, "cpusPerZone": 8, "memoryPerZone": "8Gi", **extra}
        spec = cluster_from_dict({"shapes": {"s": shape}, "pools": [{"shape": "s"}]})
        return dict(spec.pools[0].shape.topology("n").cpu_manager.numa_sockets)

    assert sockets_of() == {0: 0, 1: 0, 2: 1, 3: 1}
    assert sockets_of(sockets=1) == {0: 0, 1: 0, 2: 0, 3: 0}
    assert sockets_of(sockets=4) == {0: 0, 1: 1, 2: 2, 3: 3}
    two = BUILTIN_SHAPES["two-socket"].topology("n")
    assert two.cpu_manager.numa_sockets == {0: 0, 1: 1}
    assert two.zone_by_id[0].distances[1] == 20  # across sockets
    with pytest.raises(SpecError, match=r"cluster.shapes.s.sockets: 3 sockets cannot hold 4 NUMA zones evenly"):
        sockets_of(sockets=3)
    with pytest.raises(ShapeError, match=r"shape s: sockets must divide its 4 NUMA zone\(s\) evenly .* got 3"):
        replace(BUILTIN_SHAPES["four-numa"], name="s", sockets=3)
    with pytest.raises(SpecError, match=r"cluster.shapes.s.sockets: 5 is more than 4, one per NUMA zone at most"):
        sockets_of(sockets=5)


def test_custom_shape_and_policy() -> None:
    spec = cluster_from_dict(
        {
            "shapes": {"mine": {"numaZones": 3, "cpusPerZone": 10, "memoryPerZone": "20Gi", "reservedCPUs": 1}},
            "pools": [{"name": "p", "shape": "mine", "count": 2, "policy": "restricted", "scope": "pod"}],
        }
    )
    pool = spec.pools[0]
    assert pool.policy is Policy.RESTRICTED and pool.scope is Scope.POD
    assert pool.node_names() == ["p-000", "p-001"]
    assert pool.shape.allocatable()["cpu"] == 29_000
    with pytest.raises(SpecError, match="cpusPerZone"):
        cluster_from_dict({"shapes": {"bad": {"numaZones": 2, "memoryPerZone": "1Gi"}}, "pools": [{"shape": "bad"}]})
    # The error names the key the user wrote, not the resource it becomes (`memory`).
    with pytest.raises(SpecError, match=r"shapes\.bad\.memoryPerZone: invalid quantity '96GB'"):
        bad = {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "96GB"}
        cluster_from_dict({"shapes": {"bad": bad}, "pools": [{"shape": "bad"}]})
    with pytest.raises(SpecError, match=r"shapes\.bad\.reservedMemoryPerZone: invalid quantity '1 Gi'"):
        bad = {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "8Gi", "reservedMemoryPerZone": "1 Gi"}
        cluster_from_dict({"shapes": {"bad": bad}, "pools": [{"shape": "bad"}]})


def test_workload_templates_and_counts() -> None:
    spec = workload_from_dict(
        {
            "pods": 10,
            "templates": [
                {"name": "a", "requests": {"cpu": "2", "memory": "1Gi"}, "weight": 3},
                {"name": "b", "qos": "Burstable", "requests": {"cpu": "500m"}, "weight": 1},
                {"name": "c", "qos": "BestEffort", "requests": {}, "count": 2},
            ],
        }
    )
    assert spec.counts() == {"c": 2, "a": 6, "b": 2}
    qos = {t.name: t.pod.qos for t in spec.templates}
    assert qos == {"a": QOSClass.GUARANTEED, "b": QOSClass.BURSTABLE, "c": QOSClass.BEST_EFFORT}
    arrivals = spec.generate(7)
    assert len(arrivals) == 10
    assert arrivals == spec.generate(7)
    assert len({a.pod.key for a in arrivals}) == 10


def test_deployment_manifest_is_a_template(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "dpdk"},
        "spec": {
            "replicas": 5,
            "template": {
                "metadata": {"labels": {"app": "dpdk"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "limits": {"cpu": "4", "memory": "4Gi", "hugepages-1Gi": "2Gi"},
                            },
                        }
                    ]
                },
            },
        },
    }
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(deployment))
    spec = workload_from_dict({"templates": [{"manifestFile": "deploy.yaml"}]}, base=tmp_path)
    template = spec.templates[0]
    assert template.name == "dpdk" and template.count == 5 and spec.pods == 5
    assert template.pod.qos is QOSClass.GUARANTEED
    assert template.pod.effective_request["hugepages-1Gi"] == 2 * 1024**3
    # A missing or broken file is named with the template that points at it.
    with pytest.raises(SpecError, match=r"workload\.templates\[1\]\.manifestFile: cannot read .*du\.yaml"):
        workload_from_dict({"templates": [{"manifestFile": "deploy.yaml"}, {"manifestFile": "du.yaml"}]}, base=tmp_path)
    (tmp_path / "broken.yaml").write_text("kind: [Deployment\n")
    with pytest.raises(SpecError, match=r"templates\[0\]\.manifestFile: .*broken\.yaml: malformed YAML"):
        workload_from_dict({"templates": [{"manifestFile": "broken.yaml"}]}, base=tmp_path)


def test_workload_errors() -> None:
    with pytest.raises(SpecError, match="templates"):
        workload_from_dict({"pods": 3})
    with pytest.raises(SpecError, match=r"templates\[0\]: give `requests`"):
        workload_from_dict({"pods": 3, "templates": [{"name": "x"}]})
    with pytest.raises(SpecError, match="BestEffort template cannot request cpu"):
        workload_from_dict({"pods": 3, "templates": [{"name": "x", "qos": "BestEffort", "requests": {"cpu": 1}}]})
    with pytest.raises(SpecError, match="unsupported kind 'Service'"):
        workload_from_dict({"templates": [{"name": "x", "manifest": {"kind": "Service"}}]})
    with pytest.raises(SpecError, match=r"arrival\.process"):
        workload_from_dict({"pods": 1, "arrival": {"process": "wave"}, "templates": [{"name": "x", "requests": {}}]})
    with pytest.raises(SpecError, match=r"spec\.containers is empty"):
        workload_from_dict({"templates": [{"name": "x", "count": 1, "manifest": {"kind": "Pod", "spec": {}}}]})


def test_scenario_from_files(tmp_path: Path) -> None:
    raw = small_scenario()
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(raw.pop("cluster")))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(raw.pop("workload")))
    scenario = scenario_from_dict(
        {**raw, "clusterFile": "cluster.yaml", "workloadFile": "workload.yaml", "nrtEventDelay": 5}, base=tmp_path
    )
    assert scenario.cluster.node_count == 4 and scenario.workload.pods == 48
    assert scenario.nrt_event_delay == 5
    with pytest.raises(SpecError, match="scoringStrategy: unknown 'Packed'"):
        scenario_from_dict({**small_scenario(), "scoringStrategy": "Packed"})
    assert scenario_from_dict({**small_scenario(), "scoringStrategy": "LeastNUMANodes"}).scoring == "LeastNUMANodes"
    with pytest.raises(SpecError, match="cannot read"):
        scenario_from_dict({**raw, "clusterFile": "missing.yaml", "workload": {}}, base=tmp_path)


def test_examples_parse() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "sim"
    scenario = scenario_from_dict(yaml.safe_load((examples / "scenario.yaml").read_text()), base=examples)
    assert scenario.cluster.node_count > 0 and scenario.workload.pods > 0
