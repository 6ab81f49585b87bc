"""`knuma schedule` end to end: the real command on the bundled examples and on bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from knuma.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
POD = ROOT / "examples" / "schedule" / "pod.yaml"
NODES = ROOT / "examples" / "schedule" / "nodes.yaml"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["schedule", *args])


def test_json_output_shape_on_the_bundled_example() -> None:
    result = run("--pod", str(POD), "--nodes", str(NODES), "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pod"] == "default/trading-engine"
    assert doc["selected"] == "worker-a"
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert set(by_name) == {"worker-a", "worker-b", "worker-c"}
    a = by_name["worker-a"]
    assert a["filter"] == {"status": "Success", "reason": ""}
    assert isinstance(a["score"], int)
    assert a["numa"] == {"proxy": [0], "engine": [1]}  # the sidecar fits node-0's 4 free CPUs; the engine needs 8
    plugins = a["plugins"]
    assert plugins["NodeResourceTopologyMatch"]["score"] + plugins["NodeResourcesFit"]["score"] == a["score"]
    c = by_name["worker-c"]
    assert c["filter"]["status"] == "Unschedulable"
    assert c["filter"]["reason"] == "cannot align container"
    assert c["score"] is None
    assert c["numa"] == {}
    # each plugin scores every node it is asked about, also filtered-out ones
    assert c["plugins"]["NodeResourceTopologyMatch"]["score"] == 0


def test_no_fit_is_not_an_error(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: tiny}\nstatus: {allocatable: {cpu: '2', memory: 1Gi}}\n"
    )
    result = run("--pod", str(POD), "--nodes", str(nodes), "-o", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["selected"] is None
    assert doc["message"] == "0/1 nodes are available: 1 Insufficient cpu."


def _wide_nrt(name: str, zones: int) -> dict[str, object]:
    """A restricted-policy NRT of `zones` NUMA zones with 3 free CPUs each, allowed by `max-allowable-numa-nodes`."""
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "restricted"},
            {"name": "topologyManagerMaxNUMANodes", "value": "64"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": "8", "allocatable": "8", "available": "3"},
                    {"name": "memory", "capacity": "32Gi", "allocatable": "32Gi", "available": "10Gi"},
                ],
            }
            for i in range(zones)
        ],
    }


@pytest.mark.timeout(300)  # the 16-zone node took 8 minutes before the merge on the subset lattice
def test_sixteen_numa_nodes_are_modelled_and_more_are_refused_by_name(tmp_path: Path) -> None:
    """16 NUMA zones are judged (a 20-CPU pod cannot align under restricted: TopologyAffinityError); 17 are beyond
    what knuma models and filtered out with their own reason instead of walking 2^17 masks a resource."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "wide"},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "x", "resources": {"limits": {"cpu": "20", "memory": "20Gi"}}}
                    ]
                },
            }
        )
    )
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([_wide_nrt("sixteen", 16), _wide_nrt("seventeen", 17)]))
    result = run("--pod", str(pod), "--nodes", str(nodes), "-o", "json")
    assert result.exit_code == 0, result.output
    by_name = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert by_name["sixteen"]["filter"]["reason"] == "cannot align container"
    refused = by_name["seventeen"]["filter"]
    assert (refused["status"], refused["reason"]) == (
        "UnschedulableAndUnresolvable",
        "node has more NUMA nodes than knuma models",
    )
    assert refused["detail"].startswith("knuma models the Topology Manager on at most 16 NUMA nodes")


def test_table_output_names_nodes_and_reasons() -> None:
    result = run("--pod", str(POD), "--nodes", str(NODES))
    assert result.exit_code == 0
    assert "selected node worker-a" in result.stdout
    assert "cannot align container" in result.stdout
    assert "TopologyAffinityError" in result.stdout


def test_weights_and_strategy_are_validated(tmp_path: Path) -> None:
    bad = run("--pod", str(POD), "--nodes", str(NODES), "--scoring-strategy", "Random")
    assert bad.exit_code == 2
    assert "invalid ScoringStrategyType" in bad.stderr
    bad = run("--pod", str(POD), "--nodes", str(NODES), "--weight", "cpu")
    assert bad.exit_code == 2
    assert "NAME=INTEGER" in bad.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n", "spec.containers is empty"),
        (
            "kind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n    resources: {limits: {cpu: lots}}\n",
            "invalid quantity 'lots'",
        ),
        ("kind: Pod\nmetadata: {name: x\n", "malformed YAML"),
        (  # kubectl's strict validation: a misspelt field is refused, not silently a BestEffort pod
            "kind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n    resource: {limits: {cpu: 2}}\n",
            'unknown field "spec.containers[0].resource" in the Pod',
        ),
        (
            "kind: Pod\nmetadata: {name: x}\nspec:\n  initContainers: [{name: app, image: busybox}]\n"
            "  containers: [{name: app, image: busybox}]\n",
            'pod default/x is invalid: spec.initContainers[0].name: Duplicate value: "app"',
        ),
    ],
)
def test_bad_pod_files_get_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(content)
    result = run("--pod", str(pod_file), "--nodes", str(NODES))
    assert result.exit_code == 2
    assert message in result.stderr
    assert str(pod_file) in result.stderr or "pod x" in result.stderr or "pod default/x" in result.stderr


def test_missing_file_and_bad_nrt(tmp_path: Path) -> None:
    result = run("--pod", str(tmp_path / "nope.yaml"), "--nodes", str(NODES))
    assert result.exit_code == 2
    assert "no such file" in result.stderr
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\nmetadata: {name: n}\n"
        "zones:\n- name: node-0\n  type: Node\n  resources:\n"
        "  - {name: cpu, capacity: x1, allocatable: '1', available: '1'}\n"
    )
    result = run("--pod", str(POD), "--nodes", str(nodes))
    assert result.exit_code == 2
    assert "invalid quantity 'x1'" in result.stderr


KINDS = "node files hold NodeResourceTopology and Node objects, or a List of them"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata: hello\n",
            "document 1: Node metadata must be a mapping with the node's name (metadata: {name: NODE}), got 'hello'",
        ),
        ("apiVersion: v1\nkind: List\nitems: 5\n", "document 1: a List's items must be a list of objects, got 5"),
        (
            "apiVersion: v1\nmetadata: {name: a}\n",
            f"document 1: the object has no kind; set kind: Node or kind: NodeResourceTopology ({KINDS})",
        ),
        (
            "kind: List\nitems:\n- {kind: Node, metadata: {name: a}}\n- {metadata: {name: b}}\n",
            f"document 1, items[1]: the object has no kind; set kind: Node or kind: NodeResourceTopology ({KINDS})",
        ),
        ("kind: List\nitems: [5]\n", "document 1, items[0]: expected a Kubernetes object (a mapping), got 5"),
        (
            "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: 5}\n",
            "document 2: Node without metadata.name (the node's name, a string)",
        ),
        (
            "kind: Node\nmetadata: {name: a}\nstatus: 5\n",
            "document 1: Node a: status must be a mapping with allocatable or capacity",
        ),
        (
            "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\nmetadata: hello\n",
            "document 1: NodeResourceTopology: metadata must be a mapping",
        ),
    ],
)
def test_bad_node_files_are_an_error_naming_the_file_and_the_document(
    tmp_path: Path, content: str, message: str
) -> None:
    """A node file among several: the error names it, the document (and the List item) and the field."""
    nodes = tmp_path / "more-nodes.yaml"
    nodes.write_text(content)
    result = run("--pod", str(POD), "--nodes", str(NODES), "--nodes", str(nodes))
    assert (result.exit_code, result.stderr) == (2, f"error: {nodes}: {message}\n"), result.exception


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "kind: Deployment\nmetadata: hello\nspec: {template: {spec: {containers: [{name: a}]}}}\n",
            "Deployment metadata must be a mapping with name and namespace, got 'hello'",
        ),
        (
            "kind: Deployment\nmetadata: {name: d}\nspec: 5\n",
            "Deployment spec must be a mapping with the pod template (template), got 5",
        ),
        (
            "kind: Job\nmetadata: {name: d}\nspec: {template: {metadata: hello, spec: {containers: [{name: a}]}}}\n",
            "Job spec.template.metadata must be a mapping (labels, ...), got 'hello'",
        ),
        (
            "kind: CronJob\nmetadata: {name: d}\nspec: {jobTemplate: 5}\n",
            "CronJob spec.jobTemplate must be a mapping with the Job's spec, got 5",
        ),
        (
            "kind: Pod\nmetadata: hello\nspec: {containers: [{name: a}]}\n",
            "a Pod's metadata must be a mapping with name and namespace",
        ),
    ],
)
def test_bad_pod_metadata_and_templates_are_an_error_naming_the_file(
    tmp_path: Path, content: str, message: str
) -> None:
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(content)
    result = run("--pod", str(pod_file), "--nodes", str(NODES))
    assert (result.exit_code, result.stderr) == (2, f"error: {pod_file}: {message}\n"), result.exception


def test_node_objects_alone_are_nodes_without_nrt(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: plain}\n"
        "status: {allocatable: {cpu: '64', memory: 256Gi, hugepages-1Gi: 4Gi}}\n"
    )
    result = run("--pod", str(POD), "--nodes", str(nodes), "-o", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["selected"] == "plain"
    assert doc["nodes"][0]["plugins"]["NodeResourceTopologyMatch"]["score"] == 0


@pytest.mark.slow
def test_installed_console_scripts() -> None:
    knuma = shutil.which("knuma", path=str(Path(sys.executable).parent))
    kubectl_numa = shutil.which("kubectl-numa", path=str(Path(sys.executable).parent))
    assert knuma and kubectl_numa
    out = subprocess.run(
        [knuma, "schedule", "--pod", str(POD), "--nodes", str(NODES), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout)["selected"] == "worker-a"
    help_text = subprocess.run([kubectl_numa, "--help"], capture_output=True, text=True, timeout=60, check=True)
    assert "kubectl numa" in help_text.stdout


KUBELET_EXAMPLES = ROOT / "examples" / "schedule" / "kubelet"


def test_explain_hints_prints_each_providers_hints_and_the_merge_as_the_kubelet_logs_them() -> None:
    result = run(
        "--pod",
        str(KUBELET_EXAMPLES / "init-reuse-pod.yaml"),
        "--nodes",
        str(KUBELET_EXAMPLES / "nodes.yaml"),
        "--explain-hints",
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "node worker-a (single-numa-node/container): Topology Manager hints" in out
    assert (
        '"TopologyHints" provider="cpu manager" resource="cpu" hints=[{11 false}] pod="default/init-reuse" '
        'containerName="b"' in out
    )
    assert (
        '"ContainerTopologyHint" bestHint={<nil> false} admit=false pod="default/init-reuse" containerName="b"' in out
    )
    assert "=> rejected: TopologyAffinityError: Resources cannot be allocated with Topology locality" in out
    plain = run("--pod", str(KUBELET_EXAMPLES / "init-reuse-pod.yaml"), "--nodes", str(KUBELET_EXAMPLES / "nodes.yaml"))
    assert "TopologyHints" not in plain.stdout


def test_explain_hints_in_json_and_the_smt_alignment_reason() -> None:
    result = run(
        "--pod",
        str(KUBELET_EXAMPLES / "odd-cpus-pod.yaml"),
        "--nodes",
        str(KUBELET_EXAMPLES / "nodes.yaml"),
        "--explain-hints",
        "-o",
        "json",
    )
    assert result.exit_code == 0, result.output
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["worker-smt"]["filter"] == {
        "status": "UnschedulableAndUnresolvable",
        "reason": "cpus not a multiple of the node's CPUs per core (SMTAlignmentError)",
        "detail": "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2 (container app)",
    }
    smt = nodes["worker-smt"]["hints"]
    assert smt["steps"][0]["bestHint"] == "{01 true}" and smt["steps"][0]["admit"] is True  # merged fine...
    assert smt["result"]["reason"] == "SMTAlignmentError"  # ...then the CPU manager's Allocate refuses
    assert nodes["worker-a"]["hints"]["result"]["admitted"] is True
    assert nodes["worker-a"]["hints"]["steps"][0]["providers"][0] == {
        "provider": "cpu manager",
        "resource": "cpu",
        "hints": "[{01 true} {10 true} {11 false}]",
    }


def test_a_pod_file_python_cannot_hold_is_an_error_naming_it(tmp_path: Path) -> None:
    """An integer of 5000 digits parses as YAML but not as a Python int: the shared `yaml_documents` says so (it was a
    ValueError traceback)."""
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text("kind: Pod\nmetadata: {name: p}\nspec: {priority: " + "9" * 5000 + "}\n")
    result = run("--pod", str(pod_file), "--nodes", str(NODES))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {pod_file}: a value cannot be read (Exceeds the limit (4300 digits)")
