"""lightkube (sync and async) against the server: CRUD, selectors, patches, status, apply, watch, generic CRs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from lightkube import ApiError, AsyncClient, Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.generic_resource import create_global_resource
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Namespace, Pod
from lightkube.types import OnErrorAction, OnErrorResult, PatchType

from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread
from tests.local.apiserver.conftest import MANIFESTS, Http

pytestmark = pytest.mark.slow


@pytest.fixture
def client(api: RunningApiServer) -> Iterator[Client]:
    c = Client(KubeConfig.from_file(api.kubeconfig), field_manager="knuma-test")
    yield c
    c.close()


def make_pod(name: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, labels={"app": name}),
        spec=PodSpec(containers=[Container(name="main", image="busybox")]),
    )


def test_sync_crud_selectors_and_errors(client: Client) -> None:
    created = client.create(ConfigMap(metadata=ObjectMeta(name="a", labels={"tier": "x"}), data={"k": "v"}))
    assert created.metadata is not None and created.metadata.uid
    client.create(ConfigMap(metadata=ObjectMeta(name="b")))
    assert [c.metadata.name for c in client.list(ConfigMap, labels={"tier": "x"}) if c.metadata] == ["a"]
    assert [c.metadata.name for c in client.list(ConfigMap, fields={"metadata.name": "b"}) if c.metadata] == ["b"]
    with pytest.raises(ApiError) as err:
        client.create(ConfigMap(metadata=ObjectMeta(name="a")))
    assert err.value.status.code == 409 and err.value.status.reason == "AlreadyExists"
    with pytest.raises(ApiError) as err:
        client.get(ConfigMap, "nope")
    assert err.value.status.code == 404
    stale = client.get(ConfigMap, "a")
    client.patch(ConfigMap, "a", {"data": {"k": "w"}}, patch_type=PatchType.MERGE)
    stale.data = {"k": "stale"}
    with pytest.raises(ApiError) as err:
        client.replace(stale)
    assert err.value.status.code == 409 and err.value.status.reason == "Conflict"
    client.delete(ConfigMap, "a")
    assert [c.metadata.name for c in client.list(ConfigMap) if c.metadata] == ["b"]
    names = [n.metadata.name for n in client.list(Namespace) if n.metadata]
    assert "kube-system" in names


def test_sync_patches_status_and_apply(client: Client) -> None:
    client.create(make_pod("p"))
    client.patch(Pod, "p", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}})
    with pytest.raises(ApiError, match="pod updates may not add or remove containers"):
        client.patch(Pod, "p", {"spec": {"containers": [{"name": "side", "image": "busybox"}]}})
    client.patch(Pod, "p", [{"op": "add", "path": "/metadata/labels/extra", "value": "1"}], patch_type=PatchType.JSON)
    client.patch(Pod.Status, "p", {"status": {"phase": "Running"}}, patch_type=PatchType.MERGE)
    pod = client.get(Pod, "p")
    assert pod.spec is not None and [(c.name, c.image) for c in pod.spec.containers] == [("main", "busybox:1.37")]
    assert pod.metadata is not None and pod.metadata.labels == {"app": "p", "extra": "1"}
    assert pod.status is not None and pod.status.phase == "Running"
    deploy = cast(
        Deployment,
        Deployment.from_dict(
            {
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            }
        ),
    )
    applied = client.apply(deploy)
    assert applied.metadata is not None and applied.metadata.managedFields
    assert applied.metadata.managedFields[0].manager == "knuma-test"
    assert applied.metadata.managedFields[0].operation == "Apply"
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "status": {"replicas": 1}}
    client.patch(Deployment.Status, "web", status, patch_type=PatchType.APPLY, field_manager="ctrl")
    assert client.get(Deployment, "web").status.replicas == 1  # type: ignore[union-attr]


def test_sync_watch_resumes_after_410(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, watch_window=3) as api:
        client = Client(KubeConfig.from_file(api.kubeconfig))
        http = Http(api)
        old_rv = client.create(ConfigMap(metadata=ObjectMeta(name="first"))).metadata.resourceVersion  # type: ignore[union-attr]
        for n in range(6):
            client.create(ConfigMap(metadata=ObjectMeta(name=f"c{n}")))
        seen: list[tuple[str, str]] = []
        errors: list[int] = []

        def on_error(exc: Exception, count: int) -> OnErrorResult:
            errors.append(getattr(getattr(exc, "status", None), "code", 0))
            return OnErrorResult(OnErrorAction.RETRY if count < 3 else OnErrorAction.STOP)

        def later() -> None:
            http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "late"}})

        timer = threading.Timer(1.0, later)
        timer.start()
        for kind, obj in client.watch(ConfigMap, resource_version=old_rv, on_error=on_error, server_timeout=1):
            name = obj.metadata.name if obj.metadata else ""
            seen.append((kind, name or ""))
            if name == "late":
                break
        timer.join()
        client.close()
        assert errors[0] == 410
        # After the 410 lightkube restarts without a resourceVersion: the server sends the current state first.
        assert ("ADDED", "first") in seen and seen[-1] == ("ADDED", "late")


def test_generic_custom_resource(client: Client, api: RunningApiServer) -> None:
    import yaml
    from lightkube.codecs import load_all_yaml

    for obj in load_all_yaml((MANIFESTS / "nrt-crd.yaml").read_text()):
        client.apply(obj)
    nrt_cls = create_global_resource(
        "topology.node.k8s.io", "v1alpha2", "NodeResourceTopology", "noderesourcetopologies"
    )
    doc = yaml.safe_load((MANIFESTS / "nrt-node-a.yaml").read_text())
    created = client.create(nrt_cls.from_dict(doc))
    assert created["zones"][0]["resources"][0]["capacity"] == 16
    client.patch(nrt_cls, "node-a", {"zones": doc["zones"][:1]}, patch_type=PatchType.MERGE)
    assert len(client.get(nrt_cls, "node-a")["zones"]) == 1
    bad = nrt_cls.from_dict({"metadata": {"name": "bad"}, "zones": [{"name": "z", "type": 3}]})
    with pytest.raises(ApiError) as err:
        client.create(bad)
    assert err.value.status.code == 422 and err.value.status.reason == "Invalid"
    assert "zones[0].type" in (err.value.status.message or "")


async def test_async_client_watch_and_patch(api: RunningApiServer) -> None:
    client = AsyncClient(KubeConfig.from_file(api.kubeconfig), field_manager="knuma-async")
    try:
        await client.create(make_pod("p"))
        events: list[tuple[str, str | None]] = []

        async def watch() -> None:
            async for kind, pod in client.watch(Pod, namespace="default", server_timeout=5):
                events.append((kind, pod.status.phase if pod.status else None))
                if len(events) == 2:
                    return

        task = asyncio.create_task(watch())
        await asyncio.sleep(0.3)
        await client.patch(Pod.Status, "p", {"status": {"phase": "Running"}}, patch_type=PatchType.MERGE)
        await asyncio.wait_for(task, 10)
        assert events == [("ADDED", "Pending"), ("MODIFIED", "Running")]
        listed = [p async for p in client.list(Pod, labels={"app": "p"})]
        assert len(listed) == 1
    finally:
        await client.close()
