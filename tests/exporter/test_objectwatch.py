"""The exporter republishes at once when its object is deleted, and when the NRT CRD is deleted and created again
(`knuma remove --all` then `knuma deploy`), instead of at its next resync (here 300 s, never reached)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Node

from knuma.api.crd import nrt_crd
from knuma.exporter.daemon import Exporter, make_client
from knuma.exporter.publisher import NRT
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import discover
from knuma.exporter.triggers import Trigger
from knuma.podresources import Allocatable
from knuma.podresources.server import PodResourcesServer
from knuma.testing.apiserver import apiserver_in_thread

from .sysfs_trees import NodeSpec, write_tree

pytestmark = pytest.mark.slow
CRD = "noderesourcetopologies.topology.node.k8s.io"


def crd() -> CustomResourceDefinition:
    obj: Any = CustomResourceDefinition.from_dict(nrt_crd())
    return obj  # type: ignore[no-any-return]


async def exists(client: AsyncClient, name: str) -> bool:
    try:
        await client.get(NRT, name)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True


async def within(seconds: float, check: Any) -> float:
    """Seconds until `check()` is true; fails after `seconds`."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"not within {seconds}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_deleted_object_and_recreated_crd_are_republished_at_once(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "sys", {0: NodeSpec(cpus=[0, 1]), 1: NodeSpec(cpus=[2, 3])})
    kubelet = PodResourcesServer(allocatable=Allocatable(cpu_ids=(0, 1, 2, 3))).start()
    with apiserver_in_thread() as api:
        settings = ExporterSettings(
            node_name="watched",
            sysfs_root=str(root),
            podresources_socket=kubelet.address,
            kubeconfig=str(api.kubeconfig),
            sleep_interval=300.0,
            topology_manager_policy="single-numa-node",
        )
        client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        await client.create(crd())
        await client.create(Node(metadata=ObjectMeta(name="watched")))
        exporter = Exporter(
            settings, machine=discover(root), options=build_options(settings, env={}), client=make_client(settings)
        )
        stop = asyncio.Event()
        serving = asyncio.create_task(exporter.serve(stop))
        try:
            await within(10, lambda: exists(client, "watched"))
            await asyncio.sleep(1.0)  # the watch is established after the first list

            await client.delete(NRT, "watched")
            assert await within(3, lambda: exists(client, "watched")) < 3
            assert Trigger.DELETED in exporter.last_triggers

            await client.delete(CustomResourceDefinition, CRD)

            async def crd_gone() -> bool:
                try:
                    await client.get(CustomResourceDefinition, CRD)
                except ApiError as err:
                    return err.status.code == 404
                return False

            await within(10, crd_gone)
            await asyncio.sleep(3.0)  # a while without the CRD: the exporter's own retries back off meanwhile
            await client.create(crd())
            assert await within(4, lambda: exists(client, "watched")) < 4
        finally:
            stop.set()
            await asyncio.wait_for(serving, 10)
            await client.close()
            kubelet.close()
