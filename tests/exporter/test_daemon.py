from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from lightkube import AsyncClient, Client, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node

from knuma.api.fingerprint import compute
from knuma.exporter.daemon import Exporter, make_client
from knuma.exporter.publisher import NRT
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover
from knuma.exporter.triggers import Trigger
from knuma.local.apiserver.tls import certificate_authority, self_signed, signed_by
from knuma.podresources import Allocatable, Container, Pod
from knuma.podresources.server import PodResourcesServer
from knuma.testing.apiserver import RunningApiServer
from knuma.testing.polling import eventually_async

from .sysfs_trees import NodeSpec, write_tree

KNUMA = str(Path(sys.executable).with_name("knuma"))
"""The `knuma` console script of this environment: the daemon as a DaemonSet runs it."""


async def read(client: AsyncClient, name: str) -> dict[str, Any]:
    found: Any = await client.get(NRT, name)
    obj: dict[str, Any] = found.to_dict()
    return obj


def available_cpu(obj: dict[str, Any], zone: int) -> str:
    return str(next(r["available"] for r in obj["zones"][zone]["resources"] if r["name"] == "cpu"))


@pytest.mark.slow
async def test_daemon_publishes_reacts_and_recovers(api: RunningApiServer, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3]), 1: NodeSpec(cpus=[4, 5, 6, 7])})
    notify = tmp_path / "run" / "notify"
    kubelet = PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(1, 8)))).start()
    settings = ExporterSettings(
        node_name="daemon-a",
        sysfs_root=str(root),
        podresources_socket=kubelet.address,
        podresources_timeout=2,
        kubeconfig=str(api.kubeconfig),
        notify_file=str(notify),
        # periodic updates every 2 s: none falls between the touch below and its update, where the one-per-second
        # rate limit would (rightly) delay the reactive update
        sleep_interval=2.0,
        metrics_address="127.0.0.1",
        metrics_port=0,
        topology_manager_policy="single-numa-node",
    )
    client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
    await client.create(Node(metadata=ObjectMeta(name="daemon-a")))
    exporter = Exporter(
        settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(exporter.serve(stop))
    http = aiohttp.ClientSession()
    try:

        async def get(path: str) -> tuple[int, str]:
            async with http.get(f"http://127.0.0.1:{exporter.http_port}{path}") as response:
                return response.status, await response.text()

        await eventually_async(lambda: exporter.http_port)
        await eventually_async(lambda: exporter.health.ready)
        assert await get("/readyz") == (200, "ok\n")
        assert await get("/healthz") == (200, "ok\n")
        obj = await read(client, "daemon-a")
        assert available_cpu(obj, 0) == "3"
        assert obj["metadata"]["ownerReferences"][0]["name"] == "daemon-a"

        # a pod gets exclusive CPUs, the OCI hook touches the notify file: published within one second
        await asyncio.sleep(1.0)  # past the rate limit of the initial update
        kubelet.add_pod(Pod("prod", "pinned", (Container("c", cpu_ids=(4, 5, 6)),)))
        before = exporter.updates
        touched = time.monotonic()
        notify.touch()
        await eventually_async(
            lambda: exporter.updates > before and Trigger.REACTIVE in exporter.last_triggers, timeout=3, interval=0.005
        )
        assert time.monotonic() - touched < 1.0
        assert available_cpu(await read(client, "daemon-a"), 1) == "1"

        # periodic ticks find nothing new: no writes, counted as unchanged
        version = (await read(client, "daemon-a"))["metadata"]["resourceVersion"]
        await asyncio.sleep(2.5)
        assert (await read(client, "daemon-a"))["metadata"]["resourceVersion"] == version
        status, metrics = await get("/metrics")
        assert status == 200
        assert 'knuma_exporter_updates_total{node="daemon-a",operation="create",trigger="reactive"} 1.0' in metrics
        assert 'knuma_exporter_updates_total{node="daemon-a",operation="unchanged",trigger="periodic"}' in metrics
        assert 'knuma_exporter_podresources_call_duration_seconds_count{function="list",node="daemon-a"}' in metrics
        assert "knuma_exporter_last_success_timestamp_seconds" in metrics

        # the kubelet goes away: readiness says so; it comes back: the exporter recovers by itself
        kubelet.stop()
        notify.touch()
        await eventually_async(lambda: not exporter.health.ready, timeout=5)
        status, reason = await get("/readyz")
        assert status == 503
        assert f"kubelet: kubelet PodResources socket {kubelet.address} does not exist" in reason
        assert (
            'knuma_exporter_podresources_call_errors_total{function="get_allocatable_resources"'
            in (await get("/metrics"))[1]
        )
        kubelet.set_pods([])
        kubelet.start()
        await eventually_async(lambda: exporter.health.ready, timeout=8)

        async def recovered() -> bool:  # ready turns true after the scan, the publish follows it
            return available_cpu(await read(client, "daemon-a"), 1) == "4"

        await eventually_async(recovered, timeout=5)
    finally:
        stop.set()
        await asyncio.wait_for(serving, 5)
        await http.close()
        await client.close()
        kubelet.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_cli_daemon_serves_https_and_stops_cleanly_on_sigterm(api: RunningApiServer, tmp_path: Path) -> None:
    """The console script as a DaemonSet runs it, with `--metrics-mode=httptls`, client-certificate authentication
    against a cluster CA and a TLS 1.2 cipher-suite list."""
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1])})
    certs = tmp_path / "certs"
    certs.mkdir()
    cert = self_signed(["localhost", "127.0.0.1"])
    (certs / "serving.crt").write_text(cert.cert_pem)
    (certs / "serving.key").write_text(cert.key_pem)
    cluster_ca = certificate_authority("cluster-ca")
    (certs / "client-ca.crt").write_text(cluster_ca.cert_pem)
    scraper = signed_by(cluster_ca, [], common_name="prometheus", client=True)
    (tmp_path / "scraper.crt").write_text(scraper.cert_pem)
    (tmp_path / "scraper.key").write_text(scraper.key_pem)
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1))) as kubelet:
        args = [
            KNUMA,
            "exporter",
            "--node-name",
            "daemon-sig",
            "--sysfs-root",
            str(root),
            "--podresources-socket",
            kubelet.address,
            "--kubeconfig",
            str(api.kubeconfig),
            "--metrics-address=127.0.0.1",
            f"--metrics-port={free_port()}",
            "--metrics-mode=httptls",
            f"--metrics-certs-dir={certs}",
            "--metrics-cert-file=serving.crt",
            "--metrics-key-file=serving.key",
            "--metrics-want-cli-auth",
            f"--metrics-client-ca-file={certs}/client-ca.crt",
            "--metrics-tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            "--no-add-nrt-owner",
        ]
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, env={**os.environ, "NODE_NAME": ""})
        try:
            assert proc.stderr is not None
            lines: list[str] = []
            while not any("serving /metrics" in line for line in lines):
                line = proc.stderr.readline().decode()
                assert line, "".join(lines)
                lines.append(line)
            port = int(lines[-1].split("https://127.0.0.1:")[1].split('"')[0])
            context = ssl.create_default_context(cadata=cert.cert_pem)
            with pytest.raises(OSError):  # no client certificate: refused (ssl.SSLError or a reset)
                urllib.request.urlopen(f"https://localhost:{port}/healthz", context=context, timeout=5).read()
            context.load_cert_chain(tmp_path / "scraper.crt", tmp_path / "scraper.key")
            with urllib.request.urlopen(f"https://localhost:{port}/healthz", context=context, timeout=5) as response:
                assert response.read() == b"ok\n"
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")  # not in the list: the handshake fails
            with pytest.raises(OSError):
                urllib.request.urlopen(f"https://localhost:{port}/healthz", context=context, timeout=5)
            context.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256")
            with urllib.request.urlopen(f"https://localhost:{port}/healthz", context=context, timeout=5) as response:
                assert response.read() == b"ok\n"
            client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
            deadline = time.monotonic() + 20
            while True:
                try:
                    client.get(NRT, "daemon-sig")
                    break
                except Exception:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise
                    time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
            logs = "".join(lines) + proc.stderr.read().decode()
            assert '"msg": "NodeResourceTopology daemon-sig: create' in logs
            assert '"msg": "exporter stopped"' in logs
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_once_publishes_and_exits(api: RunningApiServer, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1]), 3: NodeSpec(cpus=[2, 3])})
    pods = [Pod("prod", "db-0", (Container("db", cpu_ids=(2,)),)), Pod("dev", "web", (Container("web"),))]
    status = tmp_path / "pfp" / "status.json"
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(1, 2, 3)), pods=pods) as kubelet:
        base = [
            KNUMA,
            "exporter",
            "--once",
            "--node-name=daemon-once",
            f"--sysfs-root={root}",
            f"--kubeconfig={api.kubeconfig}",
        ]
        done = subprocess.run(
            [*base, f"--podresources-socket={kubelet.address}", f"--pods-fingerprint-status-file={status}"],
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert json.loads(status.read_text()) == {
            "fingerprintComputed": compute([("prod", "db-0")]),
            "pods": [{"Namespace": "prod", "Name": "db-0"}],
            "nodeName": "daemon-once",
        }
        client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        obj: Any = client.get(NRT, "daemon-once")
        assert [z["name"] for z in obj.to_dict()["zones"]] == ["node-0", "node-3"]
        client.close()
        # the kubelet is gone: one failed update, exit code 1, the socket named in the log
        kubelet.stop()
        failed = subprocess.run([*base, f"--podresources-socket={kubelet.address}"], capture_output=True, timeout=60)
        assert failed.returncode == 1
        assert kubelet.address in failed.stderr.decode()


def test_no_publish_builds_and_never_writes(api: RunningApiServer, tmp_path: Path) -> None:
    """`--no-publish` (RTE's flag, numaresources-operator's `infoRefreshPause: Enabled`): the exporter reads the
    kubelet and builds, exits 0 with `--once`, and the API server never sees a NodeResourceTopology; an object
    published before keeps its content."""
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])})
    pods = [Pod("prod", "db-0", (Container("db", cpu_ids=(2,)),))]
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(1, 2, 3)), pods=pods) as kubelet:
        base = [
            KNUMA,
            "exporter",
            "--once",
            "--node-name=paused",
            f"--sysfs-root={root}",
            f"--kubeconfig={api.kubeconfig}",
            f"--podresources-socket={kubelet.address}",
        ]
        paused = subprocess.run([*base, "--no-publish"], capture_output=True, timeout=60)
        assert paused.returncode == 0, paused.stderr.decode()
        assert "not-published" in paused.stderr.decode()
        client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        assert not [o for o in client.list(NRT) if o.metadata is not None and o.metadata.name == "paused"]
        published = subprocess.run(base, capture_output=True, timeout=60)
        assert published.returncode == 0, published.stderr.decode()
        found: Any = client.get(NRT, "paused")
        before = found.to_dict()
        kubelet.set_pods([])  # the pod ends: a publishing exporter would give its CPU back
        again = subprocess.run([*base, "--no-publish"], capture_output=True, timeout=60)
        assert again.returncode == 0, again.stderr.decode()
        found = client.get(NRT, "paused")
        after = found.to_dict()
        assert after["zones"] == before["zones"]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        client.close()


async def updated_beyond(exporter: Exporter, count: int) -> None:
    await eventually_async(lambda: exporter.updates > count, timeout=3)


async def test_kubelet_state_files_trigger_updates(api: RunningApiServer, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3])})
    state_dir = tmp_path / "var-lib-kubelet"
    (state_dir / "device-plugins").mkdir(parents=True)
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1, 2, 3))) as kubelet:
        settings = ExporterSettings(
            node_name="daemon-state",
            sysfs_root=str(root),
            podresources_socket=kubelet.address,
            kubeconfig=str(api.kubeconfig),
            kubelet_state_dir=str(state_dir),
            sleep_interval=0,
            min_update_interval=0.1,
            metrics_port=None,
            add_owner_reference=False,
        )
        exporter = Exporter(
            settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
        )
        stop = asyncio.Event()
        serving = asyncio.create_task(exporter.serve(stop))
        try:
            await eventually_async(lambda: exporter.updates == 1)
            assert exporter.last_triggers == {Trigger.INITIAL}
            for name in ("cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint"):
                count = exporter.updates
                (state_dir / name).write_text("{}")
                await updated_beyond(exporter, count)
                assert exporter.last_triggers == {Trigger.REACTIVE}
            (state_dir / "unrelated").write_text("x")
            await asyncio.sleep(0.3)
            assert exporter.updates == 4
        finally:
            stop.set()
            await asyncio.wait_for(serving, 5)


def attributes_of(obj: dict[str, Any]) -> dict[str, str]:
    return {a["name"]: a["value"] for a in obj["attributes"]}


def configmap_mount(directory: Path, generation: int, text: str) -> Path:
    """A ConfigMap volume as the kubelet writes it: `config.yaml -> ..data/config.yaml`, `..data -> ..<generation>`;
    an update creates a new generation and swaps `..data` atomically."""
    target = directory / f"..{generation}"
    target.mkdir()
    (target / "config.yaml").write_text(text)
    link = directory / "..data_tmp"
    link.symlink_to(target.name)
    os.replace(link, directory / "..data")
    entry = directory / "config.yaml"
    if not entry.is_symlink():
        entry.symlink_to("..data/config.yaml")
    return entry


async def test_configuration_changes_republish_the_topology_manager_attributes(
    api: RunningApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3])})
    kubelet_config = tmp_path / "kubelet.yaml"
    kubelet_config.write_text("kind: KubeletConfiguration\ntopologyManagerPolicy: best-effort\n")
    mount = tmp_path / "rte-config"
    mount.mkdir()
    operator_config = configmap_mount(mount, 1, "kubelet: {}\n")
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1, 2, 3))) as kubelet:
        settings = ExporterSettings(
            node_name="daemon-config",
            sysfs_root=str(root),
            podresources_socket=kubelet.address,
            kubeconfig=str(api.kubeconfig),
            kubelet_config_file=str(kubelet_config),
            config_file=str(operator_config),
            sleep_interval=0,
            min_update_interval=0.1,
            metrics_port=None,
            add_owner_reference=False,
        )
        exporter = Exporter(
            settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
        )
        client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        stop = asyncio.Event()
        serving = asyncio.create_task(exporter.serve(stop))

        async def published() -> dict[str, str]:
            return attributes_of(await read(client, "daemon-config"))

        try:
            await eventually_async(lambda: exporter.updates == 1)
            assert (await published())["topologyManagerPolicy"] == "best-effort"

            # the kubelet is reconfigured (the file is rewritten in place): republished without a restart
            kubelet_config.write_text(
                "kind: KubeletConfiguration\ntopologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n"
            )
            await updated_beyond(exporter, 1)
            assert exporter.last_triggers == {Trigger.CONFIG}
            assert (await published())["topologyManagerPolicy"] == "single-numa-node"
            assert (await published())["topologyManagerScope"] == "pod"

            # a broken file does not stop the agent: the previous settings stay
            kubelet_config.write_text("topologyManagerPolicy: [\n")
            await updated_beyond(exporter, 2)
            assert (await published())["topologyManagerPolicy"] == "single-numa-node"

            # the operator's ConfigMap changes (symlink swap): its policy wins over the kubelet file's
            configmap_mount(mount, 2, "kubelet: {topologyManagerPolicy: restricted}\n")
            await updated_beyond(exporter, 3)
            attributes = await published()
            assert (attributes["topologyManagerPolicy"], attributes["topologyManagerScope"]) == ("restricted", "pod")

            # a misspelt key is ignored (the kubelet file's policy is back) and the re-read says so
            with caplog.at_level(logging.WARNING, logger="knuma.exporter.config"):
                configmap_mount(mount, 3, "kubelet: {topologyManagerPolcy: restricted}\n")
                await updated_beyond(exporter, 4)
            assert (await published())["topologyManagerPolicy"] == "single-numa-node"
            assert any("kubelet.topologyManagerPolcy: unknown key, ignored" in r.getMessage() for r in caplog.records)
        finally:
            stop.set()
            await asyncio.wait_for(serving, 5)
            await client.close()
