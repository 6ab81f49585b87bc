from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from knuma.api.nrt import NodeResourceTopology
from knuma.cli.main import app
from knuma.local.apiserver.tls import self_signed
from knuma.podresources import Allocatable, Container, Devices, Pod
from knuma.podresources.server import PodResourcesServer
from tests.serving.test_http import write_pair

from .sysfs_trees import NodeSpec, write_tree

runner = CliRunner()


def test_dry_run_yaml_without_kubelet(xeon_sysfs: Path) -> None:
    result = runner.invoke(
        app,
        [
            "exporter",
            "--once",
            "--dry-run",
            "--no-podresources",
            "--sysfs-root",
            str(xeon_sysfs),
            "--node-name",
            "worker-0",
            "--topology-manager-policy",
            "single-numa-node",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["metadata"] == {"name": "worker-0"}
    nrt = NodeResourceTopology.from_dict(doc)
    assert [z.name for z in nrt.zones] == ["node-0", "node-1"]
    cpu = next(r for r in nrt.zones[1].resources if r.name == "cpu")
    assert (cpu.capacity, cpu.allocatable, cpu.available) == (12000, 12000, 12000)
    assert {a["name"]: a["value"] for a in doc["attributes"]} == {
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "container",
    }


def test_dry_run_json_from_a_kubelet(xeon_sysfs: Path, tmp_path: Path) -> None:
    kubelet_config = tmp_path / "kubelet.yaml"
    kubelet_config.write_text(
        "kind: KubeletConfiguration\ntopologyManagerPolicy: restricted\ntopologyManagerScope: pod\n"
    )
    allocatable = Allocatable(cpu_ids=tuple(range(2, 24)), devices=(Devices("example.com/nic", ("vf0", "vf1"), (1,)),))
    pods = [Pod("default", "app-1", (Container("app", (3, 5), (Devices("example.com/nic", ("vf1",), (1,)),)),))]
    with PodResourcesServer(allocatable=allocatable, pods=pods) as kubelet:
        result = runner.invoke(
            app,
            [
                "exporter",
                "--once",
                "--dry-run",
                "-o",
                "json",
                "--sysfs-root",
                str(xeon_sysfs),
                "--podresources-socket",
                kubelet.address,
                "--node-name",
                "worker-0",
                "--kubelet-config-file",
                str(kubelet_config),
            ],
        )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    node1 = doc["zones"][1]
    assert node1["resources"] == [
        {"name": "cpu", "capacity": "12", "allocatable": "11", "available": "9"},
        {"name": "example.com/nic", "capacity": "2", "allocatable": "2", "available": "1"},
    ]
    attributes = {a["name"]: a["value"] for a in doc["attributes"]}
    assert attributes["topologyManagerPolicy"] == "restricted"
    assert attributes["topologyManagerScope"] == "pod"
    assert attributes["nodeTopologyPodsFingerprint"] == "pfp0v001894b86b7c51e552d"


def test_broken_sysfs_is_reported_with_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {0: NodeSpec(cpus=[0, 1])})
    (root / "devices/system/node/node0/cpulist").unlink()
    result = runner.invoke(
        app, ["exporter", "--once", "--dry-run", "--no-podresources", "--sysfs-root", str(root), "--node-name", "n"]
    )
    assert result.exit_code == 2
    assert f"error: {root}/devices/system/node/node0/cpulist: missing" in result.stderr


def test_unreachable_kubelet_is_reported_with_the_socket(xeon_sysfs: Path, tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    result = runner.invoke(
        app,
        [
            "exporter",
            "--once",
            "--dry-run",
            "--sysfs-root",
            str(xeon_sysfs),
            "--podresources-socket",
            f"unix://{socket}",
            "--node-name",
            "n",
        ],
    )
    assert result.exit_code == 2
    assert f"unix://{socket} does not exist" in result.stderr


def test_usage_errors(xeon_sysfs: Path) -> None:
    base = ["exporter", "--sysfs-root", str(xeon_sysfs), "--node-name", "n"]
    result = runner.invoke(app, [*base, "--no-podresources"])
    assert result.exit_code == 2
    assert "--no-podresources only makes sense with --dry-run" in result.stderr
    result = runner.invoke(app, [*base, "--once", "--dry-run", "-o", "xml"])
    assert result.exit_code == 2
    assert "unknown output format 'xml'" in result.stderr
    result = runner.invoke(app, [*base, "--once", "--dry-run", "--no-podresources", "--topology-manager-scope", "x"])
    assert result.exit_code == 2
    assert "unknown Topology Manager scope 'x'" in result.stderr
    result = runner.invoke(app, [*base, "--dry-run", "--no-podresources"])
    assert result.exit_code == 2
    assert "--dry-run needs --once" in result.stderr
    result = runner.invoke(app, [*base, "--metrics-mode", "https"])
    assert result.exit_code == 2
    assert "unknown --metrics-mode 'https'; use http, httptls or disabled" in result.stderr
    result = runner.invoke(app, [*base, "--once", "--dry-run", "--no-podresources", "--exclude-terminal-pods"])
    assert result.exit_code == 2
    assert "does nothing with --no-podresources" in result.stderr


def test_httptls_without_a_certificate_fails_at_start(xeon_sysfs: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            *("exporter", "--sysfs-root", str(xeon_sysfs), "--node-name", "n"),
            *("--metrics-mode", "httptls", "--metrics-certs-dir", str(tmp_path)),
        ],
    )
    assert result.exit_code == 2
    assert f"/metrics TLS certificate {tmp_path}/tls.crt does not exist" in result.stderr


def test_metrics_tls_policy_errors_are_one_line(xeon_sysfs: Path, tmp_path: Path) -> None:
    write_pair(tmp_path, self_signed(["localhost"]))
    base = ["exporter", "--sysfs-root", str(xeon_sysfs), "--node-name", "n", "--metrics-certs-dir", str(tmp_path)]
    cases = [
        (["--metrics-want-cli-auth"], "--metrics-want-cli-auth needs --metrics-mode=httptls"),
        (
            ["--metrics-mode=httptls", "--metrics-tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,RC4"],
            "unknown --metrics-tls-cipher-suites name 'RC4'",
        ),
        (
            ["--metrics-mode=httptls", "--metrics-tls-cipher-suites=TLS_ECDHE_RSA_WITH_RC4_128_SHA"],
            "--metrics-tls-cipher-suites name 'TLS_ECDHE_RSA_WITH_RC4_128_SHA' (OpenSSL ECDHE-RSA-RC4-SHA) is not "
            "available in OpenSSL",
        ),
        (
            ["--metrics-mode=httptls", "--metrics-want-cli-auth", f"--metrics-client-ca-file={tmp_path}/ca.crt"],
            f"/metrics client CA file {tmp_path}/ca.crt does not exist",
        ),
    ]
    for flags, problem in cases:
        result = runner.invoke(app, [*base, *flags])
        assert result.exit_code == 2, (flags, result.output)
        assert problem in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # no traceback
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_watch_namespace_flag(xeon_sysfs: Path) -> None:
    pods = [Pod("prod", "db", (Container("db", (2, 4)),)), Pod("batch", "job", (Container("job", (6,)),))]
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(2, 24))), pods=pods) as kubelet:
        args = ["exporter", "--once", "--dry-run", "-o", "json", "--sysfs-root", str(xeon_sysfs)]
        args += ["--node-name", "n", "--podresources-socket", kubelet.address, "--watch-namespace", "batch"]
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    cpu = json.loads(result.stdout)["zones"][0]["resources"][0]
    assert cpu == {"name": "cpu", "capacity": "12", "allocatable": "11", "available": "10"}
