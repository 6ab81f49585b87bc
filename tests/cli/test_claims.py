"""`knuma claims schedule` and `knuma claims allocate` on the bundled examples and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from knuma.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "devices"
DRA = ["-f", str(EXAMPLES / "dra-classes.yaml"), "-f", str(EXAMPLES / "dgx-nodes.yaml")]
POD = ["-f", str(EXAMPLES / "pod-gpu-nic.yaml")]
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["claims", *args])


def test_prototype_table_output() -> None:
    result = run(
        "schedule",
        "-f",
        str(EXAMPLES / "claims-two-claims.yaml"),
        "-f",
        str(EXAMPLES / "pools-shape-foozer-barzer.yaml"),
        "-f",
        str(EXAMPLES / "pools-shape-zero.yaml"),
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["ALLOCATIONS", "-----------"]
    assert "shape-foozer-barzer-00: satisfied all claims with score 100" in lines
    assert "shape-zero-00: could not satisfy these claims: barzer-claim" in lines
    allocations = yaml.safe_load("\n".join(lines[2 : lines.index("NODE RESULTS") - 1]))
    assert allocations == [
        {"deviceCount": 2, "devicePoolName": "shape-foozer-barzer-00-foozer-00"},
        {"deviceCount": 2, "devicePoolName": "shape-foozer-barzer-00-barzer-00"},
    ]


def test_prototype_json_output_shape() -> None:
    result = run(
        "schedule",
        "-o",
        "json",
        "-f",
        str(EXAMPLES / "claims-numa-match.yaml"),
        "-f",
        str(EXAMPLES / "pools-shape-one.yaml"),
        "-f",
        str(EXAMPLES / "pools-shape-two.yaml"),
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"selected", "allocations", "nodes"}
    assert doc["selected"] == "shape-two-00"  # first of the equally scored nodes, by name
    assert doc["allocations"] == [{"devicePoolName": "shape-two-00-foozer-00", "deviceCount": 4}]
    one = doc["nodes"]["shape-one-00"]
    assert one["score"] == 0 and one["allocations"] is None
    assert one["summary"] == "shape-one-00: could not satisfy these claims: myclaim"
    verbose = one["verbose"]
    assert verbose["NodeName"] == "shape-one-00"
    results = verbose["DeviceClaimResults"][0]["poolSetResults"]
    assert results[2]["poolResults"][1]["failureReason"] == "claim MatchAttributes constraint failed"


def test_prototype_verbose_shows_ignored_pools_and_warnings() -> None:
    result = run(
        "schedule",
        "-v",
        "-f",
        str(EXAMPLES / "claims-single-by-driver.yaml"),
        "-f",
        str(EXAMPLES / "pools-shape-three.yaml"),
        "-f",
        str(EXAMPLES / "classes.yaml"),
    )
    assert result.exit_code == 0, result.output
    assert "failureReason: claim and pool driver do not match" in result.stdout
    assert "ALLOCATIONS\n-----------\nnull" in result.stdout
    assert "warning: DeviceClass 'example.com-barzer-gpu-single': unknown field spec.deviceMaxCount" in result.stderr


def test_dra_schedule_picks_the_node_that_can_align() -> None:
    result = run("schedule", "-o", "json", *DRA, *POD)
    assert result.exit_code == 0, result.output
    assert "nothing to allocate" not in result.stderr
    forgotten = run("schedule", "-o", "json", *DRA)  # the pod's file left out: every node "fits"
    assert "warning: no pending ResourceClaim and no Pod in the input: nothing to allocate" in forgotten.stderr
    doc = json.loads(result.stdout)
    assert doc["pod"] == "ml/trainer" and doc["claims"] == ["ml/trainer-devices"] and doc["selected"] == "dgx-1"
    dgx0, dgx1 = doc["nodes"]["dgx-0"], doc["nodes"]["dgx-1"]
    assert dgx0["allocatable"] is False and dgx0["stage"] == "NUMA alignment"
    assert "only NUMA 2 or NUMA 3" in dgx0["reason"]
    assert dgx0["stages"]["ml/trainer-devices/gpu"]["in use"] == 4
    assert dgx1["score"] == 100 and dgx1["locality"] == "same PCIe root" and dgx1["affinity"] == [0]
    results = doc["allocations"][0]["allocation"]["devices"]["results"]
    assert [(r["request"], r["device"]) for r in results] == [("gpu", "gpu-0"), ("nic", "nic-0")]


def test_dra_table_names_the_stage() -> None:
    result = run("schedule", "-v", *DRA, *POD)
    assert result.exit_code == 0, result.output
    assert "dgx-0: could not satisfy these claims: ml/trainer-devices" in result.stdout
    assert "    NUMA alignment: claim ml/trainer-devices" in result.stdout
    assert "    ml/trainer-devices/gpu: class 8, selector 8, in use 4, taint 4" in result.stdout
    assert "dgx-1: satisfied all claims with score 100 (same PCIe root, NUMA 0)" in result.stdout


def test_allocate_on_one_node() -> None:
    result = run("allocate", "--node", "dgx-1", *DRA, *POD)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["node"] == "dgx-1" and doc["allocatable"] is True and doc["reason"] is None
    (entry,) = doc["results"]
    assert entry["claim"] == "ml/trainer-devices"
    assert entry["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["dgx-1"]
    failed = json.loads(run("allocate", "--node", "dgx-0", *DRA, *POD).stdout)
    assert failed["allocatable"] is False and failed["results"] == [] and "NUMA 2 or NUMA 3" in failed["reason"]


def test_allocate_claim_selection_and_nothing_to_do() -> None:
    # The only claim of dgx-nodes.yaml is already allocated: nothing to allocate is allocatable, empty results.
    doc = json.loads(run("allocate", "--node", "dgx-0", "--claim", "ml/training", *DRA).stdout)
    assert doc == {"node": "dgx-0", "allocatable": True, "results": [], "reason": None}
    doc = json.loads(run("allocate", "--node", "dgx-1", "--claim", "trainer-devices", *DRA, *POD).stdout)
    assert doc["allocatable"] is True


def test_bad_input_exits_2_with_a_message(tmp_path: Path) -> None:
    result = run("allocate", "--node", "dgx-1", "--claim", "nope", *DRA)
    assert result.exit_code == 2 and "claim 'nope' is not in the input" in result.stderr
    result = run("allocate", "--node", "dgx-9", *DRA, *POD)  # a typo: no device of the input is on that node
    assert result.exit_code == 2 and "node 'dgx-9' is not in the input (nodes: dgx-0, dgx-1)" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.sim.knuma.io, count: 0}}]}}\n"
    )
    result = run("schedule", *DRA, "-f", str(bad))
    assert result.exit_code == 2
    assert 'ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.requests[0].exactly.count' in result.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: tpu}}]}}\n"
    )
    result = run("allocate", "--node", "dgx-1", *DRA, "-f", str(unknown))
    assert result.exit_code == 2 and "could not retrieve device class tpu" in result.stderr
    cel = tmp_path / "cel.yaml"
    cel.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.sim.knuma.io, selectors: "
        "[{cel: {expression: \"device.bandwidth = '1G'\"}}]}}]}}\n"
    )
    result = run("schedule", *DRA, "-f", str(cel))
    assert result.exit_code == 2
    assert "claim default/c, request r: selector #0: compilation failed" in result.stderr
    result = run("schedule", "-o", "xml", *DRA)
    assert result.exit_code == 2 and "unknown output format" in result.stderr


CLAIM = "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.sim.knuma.io}}]}}\n"
REFS = "a name and a resourceClaimName or resourceClaimTemplateName"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {resourceClaims: 5, containers: [{name: a}]}\n",
            f"document 1: Pod default/p: spec.resourceClaims must be a list of entries with {REFS}, got 5",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: hello\nspec: {containers: [{name: a}]}\n",
            "document 1: a Pod's metadata must be a mapping with name and namespace",
        ),
        (
            f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c}}\n{CLAIM}---\n"
            f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: hello\n{CLAIM}",
            'document 2: ResourceClaim.resource.k8s.io "" is invalid: [metadata: Invalid value: "hello": must be an '
            "object, metadata.name: Required value]",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: hello\n",
            "document 1: Node metadata must be a mapping with the Node's name and labels, got 'hello'",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: hello\n",
            "document 1: Namespace metadata must be a mapping with the Namespace's name and labels, got 'hello'",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: 5}\n",
            "document 1: Namespace team-a: metadata.labels must be a mapping of label to value, got 5",
        ),
    ],
)
@pytest.mark.parametrize("command", [["schedule"], ["allocate", "--node", "dgx-1"]])
def test_bad_objects_are_an_error_naming_the_file_and_the_document(
    tmp_path: Path, command: list[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    result = run(*command, *DRA, "-f", str(bad))
    assert (result.exit_code, result.stderr) == (2, f"error: {bad}: {message}\n"), result.exception


def test_partitions_of_a_gpu_on_the_bundled_mig_example() -> None:
    """examples/devices/mig-nodes.yaml: the whole GPU is taken on gpu-node-a, two 1g partitions on gpu-node-b. One 3g
    partition goes to gpu-node-b; two fit nowhere, and each node says why."""
    mig = ["-f", str(EXAMPLES / "mig-nodes.yaml")]
    one = run("schedule", *mig, "-f", str(EXAMPLES / "claim-mig-3g.yaml"), "-o", "json")
    assert one.exit_code == 0, one.output
    doc = json.loads(one.stdout)
    assert doc["selected"] == "gpu-node-b"
    results = doc["allocations"][0]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-0-3g-0"]
    assert doc["nodes"]["gpu-node-a"]["stage"] == "counters"
    assert doc["nodes"]["gpu-node-a"]["stages"]["ml/train-3g/gpu"]["counters"] == 0
    two = run("schedule", *mig, "-f", str(EXAMPLES / "claim-mig-two-3g.yaml"), "-o", "json")
    assert two.exit_code == 0, two.output
    doc = json.loads(two.stdout)
    assert doc["selected"] is None
    reasons = {name: node["reason"] for name, node in doc["nodes"].items()}
    assert "0 left after the counters stage" in reasons["gpu-node-a"]
    assert reasons["gpu-node-b"] == (
        "claim ml/train-two-3g: the devices of requests gpu exist, but together they draw more than is left of the "
        "shared counters of their partitionable devices"
    )


def test_a_shared_nic_on_the_bundled_consumable_capacity_example() -> None:
    """examples/devices/shared-nic-nodes.yaml: a 100G NIC shared in 10G steps, 80G held on nic-node-a, 40G on
    nic-node-b. 25G (rounded to 30G) goes to nic-node-b as a share with its own ID; two requests of 35G (40G each)
    fit nowhere, and nic-node-b says the shared device's capacity is what is short."""
    nodes = ["-f", str(EXAMPLES / "shared-nic-nodes.yaml")]
    one = run("schedule", *nodes, "-f", str(EXAMPLES / "claim-shared-nic.yaml"), "-o", "json")
    assert one.exit_code == 0, one.output
    doc = json.loads(one.stdout)
    assert doc["selected"] == "nic-node-b"
    result = doc["allocations"][0]["allocation"]["devices"]["results"][0]
    assert result["consumedCapacity"] == {"bandwidth": "30G"} and len(result["shareID"]) == 36
    assert doc["nodes"]["nic-node-a"]["stage"] == "device capacity"
    two = run("schedule", *nodes, "-f", str(EXAMPLES / "claim-two-shares.yaml"), "-o", "json")
    doc = json.loads(two.stdout)
    assert doc["selected"] is None
    assert doc["nodes"]["nic-node-b"]["reason"] == (
        "claim ml/mirror: the devices of requests primary, secondary exist, but together they need more than is left "
        "of the capacity of their shared devices"
    )
