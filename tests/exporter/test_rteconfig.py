"""RTE's configuration tree (`CONFIGROOT/daemon/config.yaml`, its configlets, `extra/config.yaml`) read by
`knuma exporter`: the pure merge and dispatch, then the real CLI."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from knuma.api.fingerprint import compute
from knuma.cli.main import app
from knuma.errors import ConfigError
from knuma.exporter.commandline import CommandLine
from knuma.exporter.rteconfig import (
    KEYS,
    LEGACY_EXTRA_CONFIG,
    UNSUPPORTED,
    DaemonConfig,
    Setting,
    apply,
    daemon_paths,
    dispatch,
    extra_config,
    flatten,
    klog_level,
    merge,
    read_daemon_config,
    rte_layout,
    verbose_count,
)
from knuma.podresources import Allocatable, Container, Pod
from knuma.podresources.server import PodResourcesServer

runner = CliRunner()
KNUMA = str(Path(sys.executable).with_name("knuma"))


def write_tree(root: Path) -> Path:
    """A tree as an RTE DaemonSet mounts it: the daemon config, two configlets (the later wins), the extra config."""
    (root / "daemon/config.yaml.d").mkdir(parents=True)
    (root / "extra").mkdir()
    (root / "daemon/config.yaml").write_text(
        "global: {verbose: 2}\n"
        "nrtUpdater: {hostname: from-daemon, patchMode: true}\n"
        "resourceMonitor: {podSetFingerprintMethod: with-exclusive-resources, podSetFingerprint: true}\n"
        "topologyExporter:\n"
        "  sleepInterval: 30000000000\n"
        "  metricsMode: disabled\n"
        "  metricsTLS: {certFile: daemon.crt}\n"
    )
    (root / "daemon/config.yaml.d/10-pfp.yaml").write_text(
        "resourceMonitor: {podSetFingerprintMethod: all}\nnrtUpdater: {hostname: from-10}\n"
    )
    (root / "daemon/config.yaml.d/20-host.yaml").write_text("nrtUpdater: {hostname: worker-7}\n")
    (root / "extra/config.yaml").write_text(
        "kubelet: {topologyManagerPolicy: single-numa-node, topologyManagerScope: pod}\n"
    )
    return root


# --- the pure part


def test_every_key_sets_a_field_of_the_command_line() -> None:
    """`apply` only sets fields the command line has: a misspelt target would be dropped without a word."""
    fields = {f.name for f in dataclasses.fields(CommandLine)}
    assert {name for name, _ in KEYS.values()} <= fields
    assert not set(KEYS) & set(UNSUPPORTED)


def test_flatten_gives_rte_dotted_keys() -> None:
    doc = {"topologyExporter": {"metricsTLS": {"certFile": "a"}, "metricsPort": 1}, "global": {"debug": False}}
    assert flatten(doc) == {
        "topologyExporter.metricsTLS.certFile": "a",
        "topologyExporter.metricsPort": 1,
        "global.debug": False,
    }


def test_later_documents_win_key_by_key() -> None:
    merged = merge(
        [
            ("a.yaml", {"nrtUpdater": {"hostname": "a", "oneShot": True}}),
            ("empty.yaml", None),
            ("b.yaml", {"nrtUpdater": {"hostname": "b"}}),
        ]
    )
    assert merged == {"nrtUpdater.hostname": Setting("b", "b.yaml"), "nrtUpdater.oneShot": Setting(True, "a.yaml")}


def test_a_document_that_is_not_a_mapping_names_the_file() -> None:
    with pytest.raises(ConfigError, match=r"^b.yaml: expected a mapping of sections .* got list"):
        merge([("b.yaml", ["global"])])


def test_dispatch_maps_every_rte_key_onto_a_flag() -> None:
    doc = {
        "global": {"kubeconfig": "/kc", "verbose": 5},
        "nrtUpdater": {"oneShot": True, "hostname": "n1", "patchResync": 0},
        "resourceMonitor": {
            "namespace": "ns",
            "sysfsRoot": "/host-sys",
            "podSetFingerprint": False,
            "podSetFingerprintMethod": "all",
            "podSetFingerprintStatusFile": "/run/pfp.json",
            "excludeTerminalPods": True,
        },
        "topologyExporter": {
            "sleepInterval": 90_000_000_000,
            "podResourcesSocketPath": "unix:///pr.sock",
            "addNRTOwnerEnable": False,
            "notifyFilePath": "/run/notify",
            "referenceContainer": "ns/pod/ctr",
            "metricsMode": "httptls",
            "metricsPort": 9443.0,  # RTE decodes numbers as float64
            "MetricsAddress": "127.0.0.1",
            "metricsTLS": {
                "certsDir": "/certs",
                "certFile": "c.crt",
                "keyFile": "c.key",
                "wantCliAuth": True,
                "minTLSVersion": "VersionTLS13",
                "cipherSuites": "TLS_AES_128_GCM_SHA256",
            },
        },
    }
    config = dispatch(merge([("c.yaml", doc)]))
    assert config.warnings == ()
    assert config.verbose == 5
    assert config.values == {
        "kubeconfig": "/kc",
        "once": True,
        "node_name": "n1",
        "patch_resync": 0,
        "watch_namespace": "ns",
        "sysfs_root": "/host-sys",
        "pods_fingerprint": False,
        "pods_fingerprint_method": "all",
        "pods_fingerprint_status_file": "/run/pfp.json",
        "exclude_terminal_pods": True,
        "sleep_interval": "1m30s",
        "podresources_socket": "unix:///pr.sock",
        "add_nrt_owner": False,
        "notify_file": "/run/notify",
        "reference_container": "ns/pod/ctr",
        "metrics_mode": "httptls",
        "metrics_port": 9443,
        "metrics_address": "127.0.0.1",
        "metrics_certs_dir": "/certs",
        "metrics_cert_file": "c.crt",
        "metrics_key_file": "c.key",
        "metrics_want_cli_auth": True,
        "metrics_tls_min_version": "VersionTLS13",
        "metrics_tls_cipher_suites": "TLS_AES_128_GCM_SHA256",
    }


def test_unsupported_and_unknown_keys_warn_once_each() -> None:
    doc = {
        "global": {"debug": True},
        "nrtUpdater": {"patchMode": False, "noPublish": True},
        "topologyExporter": {"podReadinessEnable": True, "maxEventPerTimeUnit": 3, "metricsAddress": "::"},
        "bogus": 1,
    }
    config = dispatch(merge([("c.yaml", doc)]))
    assert config.values == {"no_publish": True}
    assert len(config.warnings) == 6
    assert "c.yaml: nrtUpdater.patchMode: not supported by knuma, ignored" in config.warnings[1]
    assert config.warnings[-2] == (
        "c.yaml: topologyExporter.metricsAddress: unknown key, ignored as RTE ignores it; "
        "RTE reads topologyExporter.MetricsAddress"
    )
    assert config.warnings[-1] == "c.yaml: bogus: unknown key, ignored as RTE ignores it"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"nrtUpdater": {"oneShot": "yes please"}}, "c.yaml: nrtUpdater.oneShot must be true or false, got string"),
        ({"nrtUpdater": {"hostname": 42}}, "c.yaml: nrtUpdater.hostname must be a string, got number 42"),
        ({"nrtUpdater": {"hostname": None}}, "c.yaml: nrtUpdater.hostname must be a string, got null"),
        (
            {"topologyExporter": {"sleepInterval": "60s"}},
            "c.yaml: topologyExporter.sleepInterval must be an integer of nanoseconds, got string '60s'",
        ),
        ({"topologyExporter": {"metricsPort": True}}, "c.yaml: topologyExporter.metricsPort must be an integer"),
        ({"global": {"debug": 1}}, "c.yaml: global.debug must be true or false, got number 1"),
        (
            {"resourceMonitor": {"podSetFingerprintMethod": "some"}},
            "c.yaml: resourceMonitor.podSetFingerprintMethod: unknown pods fingerprint method 'some'",
        ),
        ({"topologyExporter": {"metricsMode": "https"}}, "c.yaml: topologyExporter.metricsMode: unknown metrics mode"),
        (
            {"topologyExporter": {"referenceContainer": "a/b"}},
            "c.yaml: topologyExporter.referenceContainer: invalid reference container 'a/b'",
        ),
        ({"topologyExporter": {"sleepInterval": -1}}, "c.yaml: topologyExporter.sleepInterval must not be negative"),
        ({"nrtUpdater": {"patchResync": -1}}, "c.yaml: nrtUpdater.patchResync must be 0 (never) or a number of"),
    ],
)
def test_wrong_types_and_values_name_the_file_and_the_key(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        dispatch(merge([("c.yaml", doc)]))


def test_empty_sections_are_fine() -> None:
    doc = yaml.safe_load("global:\nnrtUpdater: {}\ntopologyExporter: {metricsTLS: {}}\n")
    assert dispatch(merge([("c.yaml", doc)])) == DaemonConfig()


def test_a_wrong_value_overridden_by_a_later_configlet_is_fine() -> None:
    """RTE type-checks after the merge: only the value in force counts."""
    config = dispatch(
        merge([("a.yaml", {"nrtUpdater": {"oneShot": "x"}}), ("b.yaml", {"nrtUpdater": {"oneShot": True}})])
    )
    assert config.values == {"once": True}


def test_empty_strings_mean_unset() -> None:
    doc = {"nrtUpdater": {"hostname": ""}, "topologyExporter": {"metricsTLS": {"minTLSVersion": ""}}}
    assert dispatch(merge([("c.yaml", doc)])).values == {"node_name": None, "metrics_tls_min_version": "VersionTLS12"}


def test_flags_given_win_over_the_file_which_wins_over_defaults() -> None:
    flags = {"node_name": "from-flag", "sleep_interval": "60s", "pods_fingerprint": True}
    config = DaemonConfig({"node_name": "from-file", "sleep_interval": "30s", "pods_fingerprint": False})
    assert apply(flags, {"node_name"}, config) == {
        "node_name": "from-flag",
        "sleep_interval": "30s",
        "pods_fingerprint": False,
    }


def test_verbose_levels() -> None:
    assert [verbose_count(level) for level in (0, 1, 2, 3, 4, 9)] == [0, 1, 1, 1, 2, 2]
    assert [klog_level(count) for count in (0, 1, 2, 3)] == [2, 2, 4, 4]


def test_which_extra_config() -> None:
    present = {"/etc/rte/extra/config.yaml", "/r/extra/config.yaml", LEGACY_EXTRA_CONFIG}.__contains__
    assert extra_config(None, None, present) == (LEGACY_EXTRA_CONFIG, None)
    assert extra_config(None, None, lambda _: False) == (None, None)  # RTE's default may be absent
    assert extra_config(None, "/my.yaml", lambda _: False) == ("/my.yaml", None)  # a named file must exist: read it
    assert extra_config("/r", None, present) == ("/r/extra/config.yaml", None)
    assert extra_config("/q", None, present) == (None, None)
    path, warning = extra_config("/r", "/my.yaml", present)
    assert path == "/r/extra/config.yaml"
    assert warning == "--config /my.yaml is ignored: CONFIGROOT /r gives the extra config /r/extra/config.yaml"


def test_rte_layout_is_rte_dump_config_layout() -> None:
    values = {
        "node_name": "n",
        "sleep_interval": "1m0s",
        "metrics_address": "0.0.0.0",
        "kubeconfig": "/kc",
        "metrics_cert_file": "tls.crt",
        "reference_container": "a/b/c",
        "watch_namespace": None,
        "topology_manager_policy": "restricted",
    }
    extra = {
        "kubelet": {"topologyManagerPolicy": "none", "topologyManagerScope": "pod"},
        "resourceExclude": {"*": ["x"]},
    }
    assert rte_layout(values, 5, extra) == {
        "global": {"kubeConfig": "/kc", "verbose": 5},
        "nrtUpdater": {"hostname": "n"},
        "resourceMonitor": {"resourceExclude": {"*": ["x"]}},
        "topologyExporter": {
            "metricsAddress": "0.0.0.0",
            "metricsTLS": {"certFile": "tls.crt"},
            "referenceContainer": {"containerName": "c", "namespace": "a", "podName": "b"},
            "sleepInterval": 60_000_000_000,
            "topologyManagerPolicy": "restricted",
            "topologyManagerScope": "pod",
        },
    }


# --- the files


def test_daemon_paths_in_rte_order_and_missing_files_are_fine(tmp_path: Path) -> None:
    assert daemon_paths(tmp_path / "nothing") == []
    assert read_daemon_config(tmp_path / "nothing") == {}
    root = write_tree(tmp_path / "rte")
    (root / "daemon/config.yaml.d/05-dir").mkdir()  # not a regular file: skipped, as RTE does
    assert [p.name for p in daemon_paths(root)] == ["config.yaml", "10-pfp.yaml", "20-host.yaml"]
    (root / "daemon/config.yaml").unlink()
    assert read_daemon_config(root)["nrtUpdater.hostname"] == Setting(
        "worker-7", str(root / "daemon/config.yaml.d/20-host.yaml")
    )


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    (root / "daemon/config.yaml.d/20-host.yaml").write_text("nrtUpdater: {hostname: [\n")
    with pytest.raises(ConfigError, match=rf"^{root}/daemon/config.yaml.d/20-host.yaml: malformed YAML at line"):
        read_daemon_config(root)


# --- the real CLI


def dry_run(*args: str, sysfs: Path) -> list[str]:
    return ["exporter", *args, "--once", "--dry-run", "--no-podresources", "--sysfs-root", str(sysfs)]


def attributes(stdout: str) -> dict[str, str]:
    return {a["name"]: a["value"] for a in yaml.safe_load(stdout)["attributes"]}


def with_kubelet(args: list[str], kubelet: PodResourcesServer) -> list[str]:
    return [a for a in args if a != "--no-podresources"] + ["--podresources-socket", kubelet.address]


def kubelet() -> PodResourcesServer:
    """A kubelet with one pod holding exclusive CPUs and one without: the fingerprint methods differ."""
    pods = [
        Pod("default", "pinned", (Container("app", (2, 3)),)),
        Pod("default", "shared", (Container("app", ()),)),
    ]
    return PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(24))), pods=pods)


def test_config_root_sets_what_the_flags_do_not(xeon_sysfs: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    with kubelet() as server:
        args = with_kubelet(dry_run(str(root), sysfs=xeon_sysfs), server)
        result = runner.invoke(app, args, env={"NODE_NAME": "from-env"})
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["metadata"]["name"] == "worker-7"  # the last configlet, over the daemon config and NODE_NAME
    attrs = attributes(result.stdout)
    assert attrs["topologyManagerPolicy"] == "single-numa-node"  # extra/config.yaml
    assert attrs["topologyManagerScope"] == "pod"
    assert attrs["nodeTopologyPodsFingerprintMethod"] == "all"  # the first configlet, over the daemon config
    assert attrs["nodeTopologyPodsFingerprint"] == compute([("default", "pinned"), ("default", "shared")])


def test_a_flag_given_wins_over_the_file(xeon_sysfs: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    args = dry_run(str(root), "--hostname", "from-flag", "--topology-manager-policy", "restricted", sysfs=xeon_sysfs)
    with kubelet() as server:
        result = runner.invoke(
            app, [*with_kubelet(args, server), "--pods-fingerprint-method", "with-exclusive-resources"]
        )
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["metadata"]["name"] == "from-flag"
    attrs = attributes(result.stdout)
    assert attrs["nodeTopologyPodsFingerprintMethod"] == "with-exclusive-resources"
    assert attrs["nodeTopologyPodsFingerprint"] == compute([("default", "pinned")])
    assert attrs["topologyManagerPolicy"] == "restricted"
    assert attrs["topologyManagerScope"] == "pod"  # the file still gives what the flags do not


def test_without_config_root_the_extra_config_is_config(xeon_sysfs: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("kubelet: {topologyManagerPolicy: best-effort}\n")
    result = runner.invoke(app, dry_run("--config", str(extra), "--node-name", "n", sysfs=xeon_sysfs))
    assert result.exit_code == 0, result.output
    assert attributes(result.stdout)["topologyManagerPolicy"] == "best-effort"
    # an explicit --config must exist (a typo is not silently ignored); RTE's default may be absent
    result = runner.invoke(app, dry_run("--config", str(tmp_path / "typo.yaml"), "--node-name", "n", sysfs=xeon_sysfs))
    assert result.exit_code == 2
    assert f"error: {tmp_path}/typo.yaml: no such file" in result.stderr


def test_bad_files_are_usage_errors_naming_file_and_key(xeon_sysfs: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    configlet = root / "daemon/config.yaml.d/20-host.yaml"
    configlet.write_text("nrtUpdater: {oneShot: maybe}\n")
    result = runner.invoke(app, dry_run(str(root), sysfs=xeon_sysfs))
    assert result.exit_code == 2
    assert f"error: {configlet}: nrtUpdater.oneShot must be true or false, got string 'maybe'" in result.stderr
    configlet.write_text("nrtUpdater: [\n")
    result = runner.invoke(app, dry_run(str(root), sysfs=xeon_sysfs))
    assert result.exit_code == 2
    assert f"error: {configlet}: malformed YAML at line" in result.stderr
    result = runner.invoke(app, dry_run(str(root), str(root), sysfs=xeon_sysfs))
    assert result.exit_code == 2  # at most one CONFIGROOT
    assert "unexpected extra argument" in result.stderr


def test_dump_config(xeon_sysfs: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    args = ["exporter", str(root), "--sysfs-root", str(xeon_sysfs), "--metrics-port", "9100"]
    result = runner.invoke(app, [*args, "--dump-config", ".andexit"])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["global"] == {"verbose": 2}
    assert doc["nrtUpdater"] == {"hostname": "worker-7", "noPublish": False, "oneShot": False, "patchResync": 10}
    assert doc["resourceMonitor"]["podSetFingerprintMethod"] == "all"
    assert doc["resourceMonitor"]["sysfsRoot"] == str(xeon_sysfs)
    exporter = doc["topologyExporter"]
    assert exporter["sleepInterval"] == 30_000_000_000
    assert exporter["metricsMode"] == "disabled"
    assert exporter["metricsPort"] == 9100
    assert exporter["metricsTLS"]["certFile"] == "daemon.crt"
    assert exporter["topologyManagerPolicy"] == "single-numa-node"
    # `-` prints and goes on: here with the dry run's object after it
    result = runner.invoke(app, [*dry_run(str(root), sysfs=xeon_sysfs), "--dump-config", "-"])
    assert result.exit_code == 0, result.output
    dumped, nrt = result.stdout.split("apiVersion:", 1)
    assert yaml.safe_load(dumped)["nrtUpdater"] == {
        "hostname": "worker-7",
        "noPublish": False,
        "oneShot": True,
        "patchResync": 10,
    }
    assert "worker-7" in nrt
    # a path gets the same document
    target = tmp_path / "dump.yaml"
    result = runner.invoke(app, [*args, "--once", "--dry-run", "--no-podresources", "--dump-config", str(target)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(target.read_text())["nrtUpdater"]["hostname"] == "worker-7"
    # a broken extra config stops the dump too
    (root / "extra/config.yaml").write_text("kubelet: {topologyManagerScope: socket}\n")
    result = runner.invoke(app, [*args, "--dump-config", ".andexit"])
    assert result.exit_code == 2
    assert f"error: {root}/extra/config.yaml: kubelet.topologyManagerScope" in result.stderr


def test_ignored_keys_are_logged_by_the_real_command(xeon_sysfs: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rte")
    (root / "daemon/config.yaml.d/30-rte-only.yaml").write_text("topologyExporter: {podReadinessEnable: true}\n")
    done = subprocess.run(
        [KNUMA, *dry_run(str(root), "--config", str(tmp_path / "ignored.yaml"), sysfs=xeon_sysfs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_NAME": ""},
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if '"level": "warning"' in line]
    assert len(warnings) == 3, done.stderr
    assert "daemon/config.yaml: nrtUpdater.patchMode: not supported by knuma, ignored" in warnings[0]
    assert "30-rte-only.yaml: topologyExporter.podReadinessEnable: not supported by knuma" in warnings[1]
    assert f"--config {tmp_path}/ignored.yaml is ignored: CONFIGROOT {root} gives the extra config" in warnings[2]


def test_the_file_wins_over_the_environment(xeon_sysfs: Path, tmp_path: Path) -> None:
    """RTE's `FromEnv` fills only what the files left empty: here PFP_STATUS_FILE (typer's envvar of the flag)."""
    root = write_tree(tmp_path / "rte")
    args = ["exporter", str(root), "--sysfs-root", str(xeon_sysfs), "--dump-config", ".andexit"]
    result = runner.invoke(app, args, env={"PFP_STATUS_FILE": "/from/env"})
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["resourceMonitor"]["podSetFingerprintStatusFile"] == "/from/env"
    (root / "daemon/config.yaml.d/30-pfp.yaml").write_text(
        "resourceMonitor: {podSetFingerprintStatusFile: /from/file}\n"
    )
    result = runner.invoke(app, args, env={"PFP_STATUS_FILE": "/from/env"})
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["resourceMonitor"]["podSetFingerprintStatusFile"] == "/from/file"
    result = runner.invoke(app, [*args, "--pods-fingerprint-status-file", "/from/flag"], env={"PFP_STATUS_FILE": "/e"})
    assert yaml.safe_load(result.stdout)["resourceMonitor"]["podSetFingerprintStatusFile"] == "/from/flag"
