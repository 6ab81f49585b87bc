from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node
from lightkube.types import CascadeType, PatchType

from knuma.api.nrt import NodeResourceTopology, ResourceInfo, Zone
from knuma.exporter.publisher import NRT, Outcome, Publisher, PublishError, desired_object, merge_patch
from knuma.testing.apiserver import RunningApiServer


def nrt(node: str, available: int = 8000, fingerprint: str = "pfp0v001ef46db3751d8e999") -> NodeResourceTopology:
    zone = Zone("node-0", costs={"node-0": 10}, resources=(ResourceInfo("cpu", 8000, 8000, available),))
    return NodeResourceTopology(
        name=node,
        zones=(zone,),
        attributes={"topologyManagerPolicy": "single-numa-node", "nodeTopologyPodsFingerprint": fingerprint},
        annotations={"topology.node.k8s.io/fingerprint": fingerprint},
    )


@pytest.fixture
async def client(api: RunningApiServer) -> AsyncIterator[AsyncClient]:
    c = AsyncClient(KubeConfig.from_file(api.kubeconfig), field_manager="test", trust_env=False)
    yield c
    await c.close()


async def make_node(client: AsyncClient, name: str) -> str:
    node = await client.create(Node(metadata=ObjectMeta(name=name)))
    assert node.metadata is not None and node.metadata.uid
    return node.metadata.uid


async def read(client: AsyncClient, name: str) -> dict[str, Any]:
    found: Any = await client.get(NRT, name)
    obj: dict[str, Any] = found.to_dict()
    return obj


async def test_create_with_owner_then_no_write_when_unchanged(client: AsyncClient) -> None:
    uid = await make_node(client, "pub-a")
    publisher = Publisher(client, "pub-a")
    assert await publisher.publish(nrt("pub-a")) is Outcome.CREATED
    obj = await read(client, "pub-a")
    assert obj["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "pub-a", "uid": uid}]
    assert obj["zones"] == nrt("pub-a").to_dict()["zones"]
    version = obj["metadata"]["resourceVersion"]
    for _ in range(3):
        assert await publisher.publish(nrt("pub-a")) is Outcome.UNCHANGED
    assert (await read(client, "pub-a"))["metadata"]["resourceVersion"] == version
    # a fresh publisher (exporter restart) reads the object and does not write either
    assert await Publisher(client, "pub-a").publish(nrt("pub-a")) is Outcome.UNCHANGED
    assert (await read(client, "pub-a"))["metadata"]["resourceVersion"] == version


async def test_update_on_change(client: AsyncClient) -> None:
    await make_node(client, "pub-b")
    publisher = Publisher(client, "pub-b")
    await publisher.publish(nrt("pub-b"))
    before = await read(client, "pub-b")
    assert await publisher.publish(nrt("pub-b", available=2000, fingerprint="pfp0v0010000000000000001")) is (
        Outcome.UPDATED
    )
    after = await read(client, "pub-b")
    assert after["zones"][0]["resources"][0]["available"] == "2"
    assert after["metadata"]["annotations"]["topology.node.k8s.io/fingerprint"] == "pfp0v0010000000000000001"
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    assert after["metadata"]["ownerReferences"] == before["metadata"]["ownerReferences"]


async def test_conflict_is_recovered_by_rereading(client: AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    await make_node(client, "pub-c")
    publisher = Publisher(client, "pub-c", resync_every=0)
    await publisher.publish(nrt("pub-c"))
    # someone else writes the object: the publisher's resourceVersion is now stale
    await client.patch(NRT, "pub-c", {"metadata": {"labels": {"team": "infra"}}}, patch_type=PatchType.MERGE)
    with caplog.at_level(logging.INFO, logger="knuma.exporter.publisher"):
        assert await publisher.publish(nrt("pub-c", available=1000)) is Outcome.UPDATED
    assert "conflict updating NodeResourceTopology pub-c" in caplog.text
    obj = await read(client, "pub-c")
    assert obj["zones"][0]["resources"][0]["available"] == "1"
    assert obj["metadata"]["labels"] == {"team": "infra"}  # the other writer's change survives


async def test_resync_reverts_foreign_edits(client: AsyncClient) -> None:
    await make_node(client, "pub-d")
    publisher = Publisher(client, "pub-d", resync_every=1)
    await publisher.publish(nrt("pub-d"))
    await client.patch(NRT, "pub-d", {"zones": [{"name": "node-9", "type": "Node"}]}, patch_type=PatchType.MERGE)
    assert await publisher.publish(nrt("pub-d")) is Outcome.UPDATED
    assert (await read(client, "pub-d"))["zones"] == nrt("pub-d").to_dict()["zones"]


async def test_deleted_object_is_created_again(client: AsyncClient) -> None:
    await make_node(client, "pub-e")
    publisher = Publisher(client, "pub-e", resync_every=0)
    await publisher.publish(nrt("pub-e"))
    await client.delete(NRT, "pub-e")
    assert await publisher.publish(nrt("pub-e", available=3000)) is Outcome.CREATED
    assert (await read(client, "pub-e"))["zones"][0]["resources"][0]["available"] == "3"


async def test_without_node_object_no_owner_reference(client: AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="knuma.exporter.publisher"):
        ghost = Publisher(client, "pub-ghost")
        assert await ghost.publish(nrt("pub-ghost")) is Outcome.CREATED
        await ghost.publish(nrt("pub-ghost", available=3000))  # the Node is read again: no second warning
    assert caplog.text.count("Node pub-ghost not found (check --node-name)") == 1
    assert "ownerReferences" not in (await read(client, "pub-ghost"))["metadata"]
    await Publisher(client, "pub-f", add_owner_reference=False).publish(nrt("pub-f"))
    assert "ownerReferences" not in (await read(client, "pub-f"))["metadata"]


async def test_object_of_another_node_is_refused(client: AsyncClient) -> None:
    with pytest.raises(ValueError, match="does not belong to node 'pub-g'"):
        await Publisher(client, "pub-g").publish(nrt("someone-else"))


async def test_unreachable_api_server_is_retryable(api: RunningApiServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = yaml.safe_load(api.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"  # nobody listens there
    client = AsyncClient(KubeConfig.from_dict(config), trust_env=False)
    refused = (
        rf"cannot publish pub-h: cannot reach the API server at http://127.0.0.1:{port} \(\w+ \S+\): connection refused"
    )
    with pytest.raises(PublishError, match=refused) as info:
        await Publisher(client, "pub-h").publish(nrt("pub-h"))
    assert info.value.retryable
    await client.close()


def test_merge_patch_only_touches_the_exporters_fields() -> None:
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u1"}
    desired = desired_object(nrt("n"), owner)
    current = {
        **desired,
        "metadata": {
            **desired["metadata"],
            "labels": {"x": "y"},
            "annotations": {**desired["metadata"]["annotations"], "other": "keep"},
            "resourceVersion": "7",
        },
    }
    assert merge_patch(current, desired, manage_owner=True) == {}
    changed = desired_object(nrt("n", available=0, fingerprint="pfp0v001aaaaaaaaaaaaaaaa"), owner)
    patch = merge_patch(current, changed, manage_owner=True)
    assert set(patch) == {"zones", "attributes", "metadata"}
    assert patch["metadata"] == {"annotations": {"topology.node.k8s.io/fingerprint": "pfp0v001aaaaaaaaaaaaaaaa"}}
    no_fingerprint = NodeResourceTopology(name="n", zones=nrt("n").zones, attributes=nrt("n").attributes)
    removal = merge_patch(current, desired_object(no_fingerprint, owner), manage_owner=True)
    assert removal == {"metadata": {"annotations": {"topology.node.k8s.io/fingerprint": None}}}
    new_owner = {**owner, "uid": "u2"}  # node re-created under the same name
    assert merge_patch(current, desired_object(nrt("n"), new_owner), manage_owner=True) == {
        "metadata": {"ownerReferences": [new_owner]}
    }
    assert merge_patch(current, desired_object(nrt("n"), new_owner), manage_owner=False) == {}


async def test_a_recreated_node_gets_a_fresh_owner_reference(client: AsyncClient) -> None:
    """Issue 18 item 8: the Node's UID is not cached forever. After the Node is deleted and created again, the
    republished object (the garbage collector removed the old one with its owner) is owned by the new Node, and an
    object that survived is re-owned at the next resync."""
    old_uid = await make_node(client, "pub-h")
    publisher = Publisher(client, "pub-h", resync_every=3)
    assert await publisher.publish(nrt("pub-h")) is Outcome.CREATED
    await client.delete(Node, "pub-h")
    new_uid = await make_node(client, "pub-h")
    assert new_uid != old_uid
    publisher.forget()  # what the daemon's watch does when the object is deleted
    assert await publisher.publish(nrt("pub-h")) in (Outcome.CREATED, Outcome.UPDATED)
    owners = (await read(client, "pub-h"))["metadata"]["ownerReferences"]
    assert owners == [{"apiVersion": "v1", "kind": "Node", "name": "pub-h", "uid": new_uid}]
    # Without a deletion to notice: the Node is re-created while the object stays (orphaned); the resync re-owns it.
    await client.delete(Node, "pub-h", cascade=CascadeType.ORPHAN)
    newest_uid = await make_node(client, "pub-h")
    for _ in range(3):
        await publisher.publish(nrt("pub-h"))
    owners = (await read(client, "pub-h"))["metadata"]["ownerReferences"]
    assert owners == [{"apiVersion": "v1", "kind": "Node", "name": "pub-h", "uid": newest_uid}]
