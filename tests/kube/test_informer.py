"""The informer against a real `knuma apiserver`: list, watch, bookmarks, and relist after 410 Gone."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from knuma.kube.client import async_http
from knuma.kube.informer import Informer, decode_event
from knuma.testing.apiserver import apiserver_in_thread
from knuma.testing.polling import eventually_async

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))


def configmap(name: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}


async def test_list_then_watch_delivers_every_change(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, bookmark_interval=0.1) as api:
        http = async_http(api.kubeconfig)
        try:
            for i in range(3):
                (await http.post(CONFIGMAPS, json=configmap(f"cm{i}"))).raise_for_status()
            recorder = Recorder()
            informer = Informer(http, CONFIGMAPS, recorder, page_size=2)  # pagination: two pages
            task = asyncio.create_task(informer.run())
            await asyncio.wait_for(informer.synced.wait(), 5)
            assert sorted(recorder.events) == [("add", "cm0"), ("add", "cm1"), ("add", "cm2")]
            (await http.put(f"{CONFIGMAPS}/cm0", json=configmap("cm0", "2"))).raise_for_status()
            (await http.delete(f"{CONFIGMAPS}/cm1")).raise_for_status()
            await eventually_async(lambda: len(recorder.events) == 5)
            assert recorder.events[3:] == [("update", "cm0"), ("delete", "cm1")]
            rv = informer.resource_version
            await asyncio.sleep(0.3)  # bookmarks arrive; they carry no objects
            assert len(recorder.events) == 5 and int(informer.resource_version) >= int(rv)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await http.aclose()


async def test_expired_resource_version_relists_and_reports_what_was_missed(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, watch_window=3) as api:
        http = async_http(api.kubeconfig)
        try:
            for name in ("keep", "gone"):
                (await http.post(CONFIGMAPS, json=configmap(name))).raise_for_status()
            recorder = Recorder()
            informer = Informer(http, CONFIGMAPS, recorder)
            task = asyncio.create_task(informer.run())
            await asyncio.wait_for(informer.synced.wait(), 5)
            task.cancel()  # the informer is away (e.g. a network partition) ...
            with contextlib.suppress(asyncio.CancelledError):
                await task
            (await http.delete(f"{CONFIGMAPS}/gone")).raise_for_status()
            for i in range(6):  # ... longer than the server keeps history
                (await http.post(CONFIGMAPS, json=configmap(f"new{i}"))).raise_for_status()
            recorder.events.clear()
            task = asyncio.create_task(informer.run())  # resumes from its old resourceVersion: 410 Gone
            await eventually_async(lambda: informer.relists == 2)
            assert recorder.events[0] == ("delete", "gone")
            assert sorted(recorder.events[1:]) == [("add", f"new{i}") for i in range(6)]
            assert sorted(informer.store) == ["default/keep", *(f"default/new{i}" for i in range(6))]
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await http.aclose()


async def test_a_failing_handler_does_not_stop_the_informer(tmp_path: Path) -> None:
    class Flaky(Recorder):
        def on_add(self, obj: dict[str, Any]) -> None:
            if obj["metadata"]["name"] == "bad":
                raise RuntimeError("handler bug")
            super().on_add(obj)

    with apiserver_in_thread(tmp_path) as api:
        http = async_http(api.kubeconfig)
        try:
            recorder = Flaky()
            informer = Informer(http, CONFIGMAPS, recorder)
            task = asyncio.create_task(informer.run())
            await asyncio.wait_for(informer.synced.wait(), 5)
            for name in ("bad", "good"):
                (await http.post(CONFIGMAPS, json=configmap(name))).raise_for_status()
            await eventually_async(lambda: ("add", "good") in recorder.events)
            assert "default/bad" in informer.store
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await http.aclose()


def test_watch_lines_decode_as_json_loads_does_also_beyond_64_bit_integers() -> None:
    for line in (
        b'{"type":"MODIFIED","object":{"metadata":{"name":"p","resourceVersion":"7"},"spec":{"x":[1,2.5,null,true]}}}',
        b'{"type":"ADDED","object":{"metadata":{"name":"big"},"spec":{"n":123456789012345678901234567890}}}',
        '{"type":"ADDED","object":{"metadata":{"name":"\\u00e9t\\u00e9"},"data":{"k":"\u00e9"}}}'.encode(),
    ):
        assert decode_event(line) == json.loads(line)


async def test_a_resource_not_served_is_retried_with_the_hint_of_what_to_install(tmp_path: Path) -> None:
    """A 404 on the list (a CRD not installed yet) is retried; the message says what to do, and once the CRD is
    there the informer syncs without a restart."""
    from knuma.api.crd import nrt_crd

    nrts = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
    with apiserver_in_thread(tmp_path) as api:
        http = async_http(api.kubeconfig)
        errors: list[str] = []
        try:
            informer = Informer(http, nrts, Recorder(), on_error=errors.append, missing_hint="install the CRD")
            task = asyncio.create_task(informer.run())
            await eventually_async(lambda: bool(errors))
            assert "404" in errors[0] and "(install the CRD); retrying in" in errors[0]
            crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            (await http.post(crds, json=nrt_crd())).raise_for_status()
            await asyncio.wait_for(informer.synced.wait(), 30)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await http.aclose()
