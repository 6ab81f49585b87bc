"""The two ways a simulated node's NRT gets published agree: `knuma exporter` reading the node's sysfs tree, kubelet
configuration and PodResources socket, and the node process building it in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from knuma.api.nrt import Policy, Scope
from knuma.cli.main import app
from knuma.local.nodes.kubeletconfig import kubelet_configuration
from knuma.local.nodes.nrt import node_resource_topology
from knuma.local.nodes.simulated_kubelet import SimulatedKubelet
from knuma.local.nodes.spec import NodeSpec
from knuma.local.nodes.sysfs import render
from knuma.podresources.server import PodResourcesServer
from knuma.testbed.shapes import BUILTIN_SHAPES, shape_from_dict

from .builders import guaranteed

SMT = shape_from_dict(
    "smt",
    {
        "numaZones": 2,
        "cpusPerZone": 8,
        "memoryPerZone": "16Gi",
        "reservedCPUs": 2,
        "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    },
)
SOCKETS = shape_from_dict(
    "sockets",
    {
        "numaZones": 4,
        "cpusPerZone": 8,
        "memoryPerZone": "16Gi",
        "cpuManagerPolicyOptions": {"align-by-socket": "true", "distribute-cpus-across-numa": "true"},
    },
)
TEN_ZONES = shape_from_dict(
    "ten", {"numaZones": 10, "cpusPerZone": 4, "memoryPerZone": "8Gi", "resourcesPerZone": {"example.com/nic": 1}}
)


@pytest.mark.parametrize(
    ("shape", "policy", "scope"),
    [
        (BUILTIN_SHAPES["gpu"], Policy.SINGLE_NUMA_NODE, Scope.CONTAINER),
        (BUILTIN_SHAPES["two-socket"], Policy.RESTRICTED, Scope.POD),
        (TEN_ZONES, Policy.BEST_EFFORT, Scope.CONTAINER),
        (SMT, Policy.SINGLE_NUMA_NODE, Scope.CONTAINER),
        (SOCKETS, Policy.RESTRICTED, Scope.CONTAINER),
    ],
    ids=["gpu", "two-socket-restricted-pod", "ten-zones", "full-pcpus-only", "align-by-socket"],
)
def test_exporter_process_and_in_process_publish_the_same_object(shape, policy, scope, tmp_path: Path) -> None:
    node = NodeSpec("n-0", 0, shape, "pool", policy, scope)
    kubelet = SimulatedKubelet(node)
    extra = {"nvidia.com/gpu": "1"} if "nvidia.com/gpu" in shape.resources else {}
    for i, cpus in enumerate([4, 2, 2] if shape.cpu_manager.full_pcpus_only else [3, 2, 1]):
        assert kubelet.admit(guaranteed(f"p{i}", cpus, "2Gi", extra=extra)).admitted
    sysfs = render(node.machine.topology(), tmp_path / "sys")
    config = tmp_path / "kubelet-config.yaml"
    config.write_text(yaml.safe_dump(kubelet_configuration(node)))
    with PodResourcesServer(allocatable=node.machine.allocatable(), pods=kubelet.podresources()) as server:
        result = CliRunner().invoke(
            app,
            [
                "exporter",
                "--once",
                "--dry-run",
                "-o",
                "json",
                "--node-name",
                node.name,
                "--sysfs-root",
                str(sysfs),
                "--podresources-socket",
                server.address,
                "--kubelet-config-file",
                str(config),
            ],
        )
    assert result.exit_code == 0, result.output
    exported = json.loads(result.stdout)
    built = node_resource_topology(kubelet).to_dict()
    assert exported["zones"] == built["zones"]
    assert exported["attributes"] == built["attributes"]
    if shape.cpu_manager.full_pcpus_only:  # CPUs 0,1 reserved; their siblings 8,9 are not handed out
        attributes = {a["name"]: a["value"] for a in built["attributes"]}
        assert attributes["cpuManagerPolicyOptionFullPCPUsOnly"] == "true"
        assert (attributes["cpuManagerCPUsPerCore"], attributes["cpuManagerReservedCoreSiblings"]) == ("2", "2")
    attributes = {a["name"]: a["value"] for a in built["attributes"]}
    if shape.cpu_manager.align_by_socket:  # two zones per socket, read back from physical_package_id
        assert attributes["cpuManagerNUMANodeSockets"] == "0:0,1:0,2:1,3:1"
        assert attributes["cpuManagerPolicyOptionDistributeCPUsAcrossNUMA"] == "true"
    elif shape is TEN_ZONES:  # more NUMA nodes than sockets: the kubelet takes CPUs socketsFirst
        assert attributes["cpuManagerNUMANodeSockets"] == ",".join(f"{z}:{z // 2}" for z in range(10))
    else:  # one socket per NUMA node: numaFirst, which is what a node without the attribute is taken to do
        assert "cpuManagerNUMANodeSockets" not in attributes
