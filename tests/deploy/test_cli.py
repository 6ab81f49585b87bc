"""The deployer's commands end to end: `knuma render | deploy | remove | detect | images` through the CLI, and as
`kubectl numa` through the pinned kubectl's plugin mechanism."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client, KubeConfig
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType
from typer.testing import CliRunner

from knuma.cli.main import app
from knuma.exporter.publisher import NRT
from knuma.testing.apiserver import RunningApiServer

BIN = Path(sys.executable).parent


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def test_render_yaml_and_json() -> None:
    result = invoke("render")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    assert docs[0]["kind"] == "CustomResourceDefinition" and docs[-1]["kind"] == "Deployment"
    as_json = json.loads(invoke("render", "-o", "json").stdout)
    assert as_json["kind"] == "List" and as_json["items"] == docs
    api_only = list(yaml.safe_load_all(invoke("render", "api").stdout))
    assert [d["kind"] for d in api_only] == ["CustomResourceDefinition"]
    rte = list(yaml.safe_load_all(invoke("render", "topology-updater", "--updater-type", "RTE").stdout))
    assert rte[-1]["metadata"]["name"] == "resource-topology-exporter"


def test_render_flags_reach_the_manifests() -> None:
    result = invoke(
        "render", "scheduler", "-P", "openshift:4.16", "-R", "2", "--sched-profile-name", "numa",
        "--pull-if-not-present", "--image", "example.org/knuma:dev",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    deployment = docs[-1]
    assert deployment["metadata"]["namespace"] == "openshift-topology-aware-scheduler"
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == ("example.org/knuma:dev", "IfNotPresent")
    config = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["scheduler-config.yaml"])
    assert config["profiles"][0]["schedulerName"] == "numa" and config["leaderElection"]["leaderElect"] is True


def test_render_reads_the_updater_config_file(tmp_path: Path) -> None:
    config = tmp_path / "rte.yaml"
    config.write_text("kubelet:\n  topologyManagerPolicy: single-numa-node\n")
    docs = list(yaml.safe_load_all(invoke("render", "updater", "--rte-config-file", str(config)).stdout))
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    assert cm["data"]["config.yaml"] == config.read_text()
    missing = invoke("render", "updater", "--rte-config-file", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "cannot read --rte-config-file" in missing.output


def test_an_updater_config_the_exporter_would_refuse_is_refused_before_rendering(tmp_path: Path) -> None:
    """The file goes into a ConfigMap the exporter reads at start: a policy it does not know crashed the exporter's
    pods instead of failing the render; an unknown key is said (RTE ignores it silently)."""
    bad = tmp_path / "rte.yaml"
    bad.write_text("kubelet:\n  topologyManagerPolicy: singlenuma\n")
    refused = invoke("render", "updater", "--rte-config-file", str(bad))
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"error: invalid --rte-config-file: {bad}: kubelet.topologyManagerPolicy: unknown Topology Manager policy "
        "'singlenuma'; expected one of: none, best-effort, restricted, single-numa-node"
    )
    assert refused.stdout == ""
    typo = tmp_path / "typo.yaml"
    typo.write_text("kubelet:\n  topologyManagerPolcy: single-numa-node\n")
    warned = invoke("render", "updater", "--rte-config-file", str(typo))
    assert warned.exit_code == 0
    assert f"warning: --rte-config-file {typo}: kubelet.topologyManagerPolcy: unknown key, ignored" in warned.stderr
    huge = tmp_path / "huge.yaml"
    huge.write_text("kubelet:\n  reservedSystemCPUs: " + "9" * 5000 + "\n")  # YAML Python cannot hold
    unreadable = invoke("render", "updater", "--rte-config-file", str(huge))
    assert unreadable.exit_code == 2
    assert unreadable.stderr.startswith(f"error: invalid --rte-config-file: {huge}: a value cannot be read (")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render", "controller"], "unknown component 'controller': expected api, updater, scheduler or operator"),
        (["render", "--updater-type", "nri"], "'nri' is invalid updater type"),
        (["render", "-P", "nomad"], "unsupported platform 'nomad'"),
        (["render", "-R", "0"], "render needs a positive number"),
        (["render", "--updater-sync-period", "soon"], "invalid --updater-sync-period 'soon'"),
        (["render", "-o", "xml"], "unknown output format 'xml'"),
        (["render", "--updater-scc", "v3"], "invalid --updater-scc 'v3'"),
        (["render", "--updater-type", "RTE", "--updater-dra-devices"], "--updater-dra-devices needs the knuma updater"),
    ],
)
def test_render_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_images_text_json_raw_and_overrides() -> None:
    lines = invoke("images").stdout.splitlines()
    assert lines[0] == "KNUMA_IMAGE=ghcr.io/knuma/knuma:0.1.0"
    assert {line.split("=")[0] for line in lines} == {
        "KNUMA_IMAGE",
        "TAS_SCHEDULER_PLUGIN_IMAGE",
        "TAS_RESOURCE_EXPORTER_IMAGE",
        "TAS_NODE_FEATURE_DISCOVERY_IMAGE",
        "TAS_PAUSE_IMAGE",
    }
    assert invoke("images", "--raw").stdout.split() == ["ghcr.io/knuma/knuma:0.1.0"]
    raw = json.loads(invoke("images", "-r", "-o", "json", "--scheduler", "upstream", "--updater-type", "NFD").stdout)
    assert raw == [
        "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.27.8",
        "registry.k8s.io/nfd/node-feature-discovery:v0.15.1",
    ]
    overridden = invoke("images", "-o", "json", env={"KNUMA_IMAGE": "mirror.example/knuma:1"})
    assert json.loads(overridden.stdout)["knuma"] == "mirror.example/knuma:1"
    assert json.loads(invoke("images", "-o", "json", "--image", "flag/knuma:2").stdout)["knuma"] == "flag/knuma:2"


def test_detect_kubernetes(api: RunningApiServer) -> None:
    result = invoke("detect", "--kubeconfig", str(api.kubeconfig))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Kubernetes:v1.")
    found = json.loads(invoke("detect", "--kubeconfig", str(api.kubeconfig), "-J").stdout)
    assert found["platform"] == {"autoDetected": "Kubernetes", "userSupplied": "", "discovered": "Kubernetes"}
    user = json.loads(
        invoke("detect", "--kubeconfig", str(api.kubeconfig), "-P", "openshift:4.14", "-o", "json").stdout
    )
    assert user["platform"]["discovered"] == "OpenShift" and user["version"]["discovered"] == "4.14"
    assert invoke("detect", "--kubeconfig", str(api.kubeconfig), "--control-plane").stdout == "nodes=0\n"


def _openshift_crd(plural: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.config.openshift.io"},
        "spec": {
            "group": "config.openshift.io",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


@pytest.mark.parametrize(("topology", "expected"), [("HighlyAvailable", "OpenShift"), ("External", "HyperShift")])
def test_detect_openshift_and_hypershift(api: RunningApiServer, topology: str, expected: str) -> None:
    """An API server serving OpenShift's config API the way OpenShift does is detected as OpenShift."""
    with Client(KubeConfig.from_file(api.kubeconfig), trust_env=False) as client:
        kinds = {}
        for plural, kind in (
            ("clusterversions", "ClusterVersion"),
            ("infrastructures", "Infrastructure"),
            ("clusteroperators", "ClusterOperator"),
        ):
            crd: Any = CustomResourceDefinition.from_dict(_openshift_crd(plural, kind))
            client.create(crd)
            kinds[kind] = create_global_resource("config.openshift.io", "v1", kind, plural)
        client.create(kinds["ClusterVersion"].from_dict({"metadata": {"name": "version"}}))
        for kind, name, status in (
            ("Infrastructure", "cluster", {"controlPlaneTopology": topology}),
            ("ClusterOperator", "openshift-apiserver", {"versions": [{"name": "operator", "version": "4.16.3"}]}),
        ):
            client.create(kinds[kind].from_dict({"metadata": {"name": name}}))
            client.patch(kinds[kind].Status, name, {"status": status}, patch_type=PatchType.MERGE)
    result = invoke("detect", "--kubeconfig", str(api.kubeconfig))
    assert result.stdout == f"{expected}:4.16.3\n", result.output


def test_deploy_and_remove_commands(api: RunningApiServer) -> None:
    kubeconfig = ["--kubeconfig", str(api.kubeconfig)]
    first = invoke("deploy", *kubeconfig)
    assert first.exit_code == 0, first.output
    assert "CustomResourceDefinition noderesourcetopologies.topology.node.k8s.io created" in first.stdout
    assert "Deployment tas-scheduler/topology-aware-scheduler created" in first.stdout
    assert "platform: Kubernetes:v1." in first.stderr
    again = invoke("deploy", *kubeconfig, "-P", "kubernetes:v1.33")
    assert again.exit_code == 0 and {line.rsplit(" ", 1)[1] for line in again.stdout.splitlines()} == {"unchanged"}
    dry = invoke("deploy", *kubeconfig, "--dry-run", "--sched-resync-period", "30s")
    assert "ConfigMap tas-scheduler/scheduler-config configured (dry run)" in dry.stdout
    assert "+          cacheResyncPeriodSeconds: 30" in dry.stdout
    removed = invoke("remove", *kubeconfig, "scheduler")
    assert removed.exit_code == 0 and "Namespace tas-scheduler deleted" in removed.stdout
    assert "knuma-exporter" not in removed.stdout
    gone = invoke("remove", *kubeconfig)
    assert gone.exit_code == 0, gone.output
    assert "Deployment tas-scheduler/topology-aware-scheduler absent" in gone.stdout
    assert "DaemonSet tas-topology-updater/knuma-exporter deleted" in gone.stdout


def test_deploy_failures_exit_1_with_the_reason(api: RunningApiServer) -> None:
    kubeconfig = ["--kubeconfig", str(api.kubeconfig)]
    timeout = invoke("deploy", *kubeconfig, "updater", "-W", "-T", "0.3s", "-E", "0.1s")
    assert timeout.exit_code == 1
    assert "DaemonSet tas-topology-updater/knuma-exporter not ready after 0.3s" in timeout.output
    openshift = invoke("deploy", *kubeconfig, "updater", "-P", "openshift:4.16")
    assert openshift.exit_code == 1 and "does not serve SecurityContextConstraints" in openshift.output


@pytest.mark.slow
def test_kubectl_numa_plugin(api: RunningApiServer) -> None:
    """`kubectl numa ...` finds `kubectl-numa` on PATH and runs the same commands."""
    kubectl = shutil.which("kubectl", path=str(BIN))
    assert kubectl is not None and shutil.which("kubectl-numa", path=str(BIN)) is not None
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "KUBECONFIG": str(api.kubeconfig)}
    render = subprocess.run([kubectl, "numa", "render", "api"], env=env, capture_output=True, text=True, timeout=60)
    assert render.returncode == 0, render.stderr
    assert yaml.safe_load(render.stdout)["kind"] == "CustomResourceDefinition"
    detect = subprocess.run([kubectl, "numa", "detect"], env=env, capture_output=True, text=True, timeout=60)
    assert detect.returncode == 0 and detect.stdout.startswith("Kubernetes:v1."), detect.stderr


def test_remove_keeps_the_nrt_crd_while_nrt_objects_exist(api: RunningApiServer) -> None:
    kubeconfig = ["--kubeconfig", str(api.kubeconfig)]
    assert invoke("deploy", *kubeconfig, "api").exit_code == 0
    nrt = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "in-use"},
        "zones": [],
    }
    with Client(KubeConfig.from_file(api.kubeconfig), trust_env=False) as client:
        client.create(NRT.from_dict(nrt))
    kept = invoke("remove", *kubeconfig)
    assert kept.exit_code == 0, kept.output
    assert "CustomResourceDefinition noderesourcetopologies.topology.node.k8s.io kept" in kept.stdout
    assert "1 NodeResourceTopology object(s) exist" in kept.stderr and "--all" in kept.stderr
    refused = invoke("remove", *kubeconfig, "api")
    assert refused.exit_code == 1 and "pass --all to delete it anyway" in refused.output
    forced = invoke("remove", *kubeconfig, "api", "--force")
    assert forced.exit_code == 0, forced.output
    assert "CustomResourceDefinition noderesourcetopologies.topology.node.k8s.io deleted" in forced.stdout
