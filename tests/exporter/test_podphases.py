"""Terminal pods on kubelets < 1.34: a real gRPC kubelet that still lists them, a real `knuma apiserver` that knows
their phase, and the exporter in between."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient, Client, KubeConfig
from lightkube.models.core_v1 import Container as ContainerSpec
from lightkube.models.core_v1 import NodeStatus, NodeSystemInfo, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace, Node
from lightkube.resources.core_v1 import Pod as PodObject
from typer.testing import CliRunner

from knuma.api.crd import nrt_crd
from knuma.api.fingerprint import compute
from knuma.cli.main import app
from knuma.exporter.daemon import Exporter, make_client
from knuma.exporter.podphases import drop_terminal
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover
from knuma.exporter.triggers import Trigger
from knuma.podresources import Allocatable, Container, Pod
from knuma.podresources.server import PodResourcesServer
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread
from knuma.testing.polling import eventually_async

from .sysfs_trees import NodeSpec, write_tree
from .test_daemon import available_cpu, read

# The kubelet lists three pods with exclusive CPUs: `batch/done` finished long ago (a completed Job pod), `prod/db`
# runs, `prod/new` was just created (the API server has not told the exporter about it yet).
DONE = Pod("batch", "done", (Container("job", cpu_ids=(2, 3)),))
DB = Pod("prod", "db", (Container("db", cpu_ids=(4, 5)),))
NEW = Pod("prod", "new", (Container("app", cpu_ids=(6,)),))


def pod_object(namespace: str, name: str, node: str) -> PodObject:
    return PodObject(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodSpec(nodeName=node, containers=[ContainerSpec(name="c", image="registry.example/app")]),
    )


def set_phase(client: Client, namespace: str, name: str, phase: str) -> None:
    client.patch(PodObject.Status, name, {"status": {"phase": phase}}, namespace=namespace)


@pytest.fixture
def api() -> Iterator[RunningApiServer]:
    """A fresh API server per test (the pods' names repeat), with the NRT CRD and the pods' namespaces."""
    with apiserver_in_thread() as server:
        client = Client(KubeConfig.from_file(server.kubeconfig), trust_env=False)
        crd: Any = CustomResourceDefinition.from_dict(nrt_crd())
        client.create(crd)
        for namespace in ("batch", "prod"):
            client.create(Namespace(metadata=ObjectMeta(name=namespace)))
        client.close()
        yield server


@pytest.fixture
def sync_client(api: RunningApiServer) -> Iterator[Client]:
    client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
    yield client
    client.close()


def test_drop_terminal_is_by_namespace_and_name() -> None:
    pods = [DONE, DB, NEW]
    assert drop_terminal(pods, frozenset({("batch", "done")})) == [DB, NEW]
    assert drop_terminal(pods, frozenset({("prod", "done")})) == pods
    assert drop_terminal(pods, frozenset()) == pods


@pytest.mark.slow
async def test_terminal_pods_are_not_counted_and_a_pod_finishing_republishes(
    api: RunningApiServer, sync_client: Client, tmp_path: Path
) -> None:
    node = "phases-a"
    sync_client.create(pod_object("batch", "done", node))
    set_phase(sync_client, "batch", "done", "Succeeded")
    sync_client.create(pod_object("prod", "db", node))
    set_phase(sync_client, "prod", "db", "Running")
    # a finished pod of another node: not this exporter's business
    sync_client.create(pod_object("prod", "elsewhere", "phases-other"))
    set_phase(sync_client, "prod", "elsewhere", "Failed")

    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3, 4, 5, 6, 7])})
    kubelet = PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(1, 8))), pods=[DONE, DB, NEW]).start()
    settings = ExporterSettings(
        node_name=node,
        sysfs_root=str(root),
        podresources_socket=kubelet.address,
        kubeconfig=str(api.kubeconfig),
        sleep_interval=0,  # no periodic updates: only the pod informer can cause the second one
        min_update_interval=0.1,
        metrics_port=None,
        add_owner_reference=False,
        exclude_terminal_pods=True,
    )
    exporter = Exporter(
        settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
    )
    client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
    stop = asyncio.Event()
    serving = asyncio.create_task(exporter.serve(stop))
    try:
        await eventually_async(lambda: exporter.updates >= 1)
        await asyncio.sleep(0.3)
        assert exporter.updates == 1  # the informer's first list does not cause an update of its own
        obj = await read(client, node)
        assert available_cpu(obj, 0) == "4"  # 7 allocatable - db (2) - new (1); done's 2 CPUs are free again
        attributes = {a["name"]: a["value"] for a in obj["attributes"]}
        assert attributes["nodeTopologyPodsFingerprint"] == compute([("prod", "db"), ("prod", "new")])
        assert exporter.pod_phases is not None
        assert set(exporter.pod_phases.informer.store) == {"batch/done", "prod/db"}  # this node's pods only

        updates = exporter.updates
        await asyncio.to_thread(set_phase, sync_client, "prod", "db", "Failed")
        await eventually_async(lambda: exporter.updates > updates, timeout=5)
        assert Trigger.REACTIVE in exporter.last_triggers
        assert available_cpu(await read(client, node), 0) == "6"
    finally:
        stop.set()
        await asyncio.wait_for(serving, 5)
        await client.close()
        kubelet.close()
    assert exporter._phases_task is None  # the informer stopped with the daemon


class Recording(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_without_the_filter_terminal_pods_hold_their_cpus_and_an_old_kubelet_is_reported(
    api: RunningApiServer, sync_client: Client, tmp_path: Path
) -> None:
    node = "phases-b"
    info = NodeSystemInfo(
        architecture="amd64",
        bootID="",
        containerRuntimeVersion="containerd://1.7.0",
        kernelVersion="6.1.0",
        kubeProxyVersion="",
        kubeletVersion="v1.31.4",
        machineID="",
        operatingSystem="linux",
        osImage="",
        systemUUID="",
    )
    sync_client.create(Node(metadata=ObjectMeta(name=node), status=NodeStatus(nodeInfo=info)))
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3, 4, 5, 6, 7])})
    handler = Recording()
    logger = logging.getLogger("knuma.exporter")
    logger.addHandler(handler)
    try:
        with PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(1, 8))), pods=[DONE, DB]) as kubelet:
            settings = ExporterSettings(
                node_name=node,
                sysfs_root=str(root),
                podresources_socket=kubelet.address,
                kubeconfig=str(api.kubeconfig),
                metrics_port=None,
            )

            async def once() -> dict[str, Any]:
                exporter = Exporter(
                    settings,
                    machine=discover(root),
                    options=build_options(settings, env={}),
                    client=make_client(settings),
                )
                await exporter.update(frozenset({Trigger.INITIAL}))
                await exporter.aclose()
                client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
                obj = await read(client, node)
                await client.close()
                return obj

            obj = asyncio.run(once())
    finally:
        logger.removeHandler(handler)
    assert available_cpu(obj, 0) == "3"  # done's CPUs still counted
    warnings = [r.getMessage() for r in handler.records if r.levelno == logging.WARNING]
    assert any("kubelet v1.31.4 lists terminated pods" in w and "--exclude-terminal-pods" in w for w in warnings)


def test_dry_run_asks_the_api_server(api: RunningApiServer, sync_client: Client, tmp_path: Path) -> None:
    node = "phases-c"
    sync_client.create(pod_object("batch", "done", node))
    set_phase(sync_client, "batch", "done", "Succeeded")
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1, 2, 3, 4, 5, 6, 7])})
    runner = CliRunner()
    with PodResourcesServer(allocatable=Allocatable(cpu_ids=tuple(range(1, 8))), pods=[DONE, DB]) as kubelet:
        base = [
            "exporter",
            "--once",
            "--dry-run",
            "-o",
            "json",
            "--node-name",
            node,
            "--sysfs-root",
            str(root),
            "--podresources-socket",
            kubelet.address,
        ]
        result = runner.invoke(app, [*base, "--exclude-terminal-pods", "--kubeconfig", str(api.kubeconfig)])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert available_cpu(doc, 0) == "5"
        result = runner.invoke(app, base)
        assert result.exit_code == 0, result.output
        assert available_cpu(json.loads(result.stdout), 0) == "3"

        broken = tmp_path / "kubeconfig"
        broken.write_text(api.kubeconfig.read_text().replace(api.url, "https://127.0.0.1:1"))
        result = runner.invoke(app, [*base, "--exclude-terminal-pods", "--kubeconfig", str(broken)])
        assert result.exit_code == 1
        assert f"cannot list the pods of node {node} (needed by --exclude-terminal-pods)" in result.stderr
