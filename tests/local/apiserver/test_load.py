"""`knuma apiserver --load`: objects from YAML at start (CRDs first), as the k8srm prototype's mock API server is
used with its testdata; bad manifests stop the start with exit 2 and a message naming the file."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from knuma.api.devmgmt.crd import prototype_crds
from knuma.local.apiserver.loader import LoadError, read_manifests
from knuma.testing.apiserver import apiserver_process
from tests.local.apiserver.conftest import Kubectl

DEVICES = Path(__file__).resolve().parents[3] / "examples" / "devices"


def test_crds_come_first_then_namespaces_then_file_order(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"
    )
    (tmp_path / "b.json").write_text(
        '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", '
        '"kind": "ConfigMap", "metadata": {"name": "d"}}]}'
    )
    (tmp_path / "notes.txt").write_text("ignored")
    found = read_manifests([tmp_path, DEVICES / "crds.yaml"])
    assert [(m.obj["kind"], m.obj["metadata"]["name"]) for m in found] == [
        ("CustomResourceDefinition", "devicedrivers.devmgmtproto.k8s.io"),
        ("CustomResourceDefinition", "deviceclasses.devmgmtproto.k8s.io"),
        ("CustomResourceDefinition", "deviceclaims.devmgmtproto.k8s.io"),
        ("CustomResourceDefinition", "deviceprivilegedclaims.devmgmtproto.k8s.io"),
        ("CustomResourceDefinition", "devicepools.devmgmtproto.k8s.io"),
        ("Namespace", "team"),
        ("ConfigMap", "c"),
        ("ConfigMap", "d"),
    ]
    assert found[6].source.endswith("a.yaml#1")


def test_the_example_crds_are_the_generated_ones() -> None:
    assert list(yaml.safe_load_all((DEVICES / "crds.yaml").read_text())) == prototype_crds()


def test_unreadable_input_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file or directory"):
        read_manifests([tmp_path / "missing.yaml"])
    (tmp_path / "bad.yaml").write_text("kind: [unclosed")
    with pytest.raises(LoadError, match=r"bad.yaml: malformed YAML at line \d+, column \d+: "):
        read_manifests([tmp_path / "bad.yaml"])
    (tmp_path / "nokind.yaml").write_text("metadata: {name: x}\n")
    with pytest.raises(LoadError, match=r"nokind.yaml#1: every object needs apiVersion and kind"):
        read_manifests([tmp_path / "nokind.yaml"])
    # what PyYAML and json parse but Python cannot hold (tracebacks before): the shared `yaml_documents` says so
    digits = "9" * 5000
    (tmp_path / "digits.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\ndata: {{n: {digits}}}\n"
    )
    with pytest.raises(LoadError, match=r"digits.yaml: a value cannot be read \(Exceeds the limit \(4300 digits\)"):
        read_manifests([tmp_path / "digits.yaml"])
    (tmp_path / "date.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 2024-13-45}\n")
    with pytest.raises(LoadError, match=r"date.yaml: a value cannot be read \(.*\); quote it if it is text"):
        read_manifests([tmp_path / "date.yaml"])
    (tmp_path / "digits.json").write_text(f'{{"apiVersion": "v1", "kind": "ConfigMap", "data": {{"n": {digits}}}}}')
    with pytest.raises(LoadError, match=r"digits.json: malformed JSON: Exceeds the limit"):
        read_manifests([tmp_path / "digits.json"])


@pytest.mark.slow
def test_prototype_crd_and_drivers_then_kubectl_get_devicedrivers(tmp_path: Path) -> None:
    args = ["--load", str(DEVICES / "crds.yaml"), "--load", str(DEVICES / "drivers.yaml")]
    with apiserver_process(tmp_path, extra_args=args) as api, tempfile.TemporaryDirectory() as home:
        kubectl = Kubectl(api, Path(home))
        out = kubectl("get", "devicedrivers").stdout.splitlines()
        assert out[0].split() == ["NAME", "AGE"]
        assert sorted(line.split()[0] for line in out[1:]) == [
            "example.com-barzer",
            "example.com-foozer",
            "sriov-nic",
            "vlan",
        ]
        types = kubectl("get", "devicedriver", "example.com-barzer", "-o", "jsonpath={.deviceTypes}").stdout
        assert types == '["gpu","sriov-nic"]'
        # kubectl apply of the same files again: unchanged
        again = kubectl("apply", "-f", str(DEVICES / "drivers.yaml")).stdout
        assert again.count("configured") + again.count("unchanged") == 4


@pytest.mark.slow
def test_a_manifest_the_server_rejects_exits_2(tmp_path: Path) -> None:
    dup = tmp_path / "slice.yaml"
    dup.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: dup}\nspec:\n  driver: gpu.example.com\n"
        "  nodeName: node-a\n  pool: {name: node-a, resourceSliceCount: 1}\n  devices: [{name: gpu-0}, {name: gpu-0}]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "knuma", "apiserver", "--insecure", "--load", str(dup)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"--load ResourceSlice dup ({dup}#1): " in proc.stderr
    assert 'spec.devices[1].name: Duplicate value: "gpu-0"' in proc.stderr
    assert "Traceback" not in proc.stderr
    unknown = subprocess.run(
        [sys.executable, "-m", "knuma", "apiserver", "--insecure", "--load", str(DEVICES / "drivers.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unknown.returncode == 2
    assert "has no kind DeviceDriver in devmgmtproto.k8s.io/v1alpha1; load its CustomResourceDefinition too" in (
        unknown.stderr
    )


@pytest.mark.parametrize(
    ("name", "body", "refusal"),
    [
        # what a request body may not hold (`NaN`, `.inf`: kube-apiserver cannot decode them)
        ("nan", "x: [1, {y: .nan}]", "the object holds nan, which is not a JSON number"),
        # a recursive YAML alias: the finiteness check walked it for ever (100% CPU, deaf to Ctrl-C)
        ("rec", "data: &x {a: *x}", "the object refers to itself"),
    ],
)
def test_a_manifest_a_request_body_could_not_hold_exits_2(tmp_path: Path, name: str, body: str, refusal: str) -> None:
    """`--load` refuses what the API server refuses in a request body, with the manifest's place."""
    manifest = tmp_path / f"{name}.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n{body}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "knuma", "apiserver", "--insecure", "--load", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"--load ConfigMap {name} ({manifest}#1): {refusal}" in proc.stderr
    assert "Traceback" not in proc.stderr
