"""`DiscoveredInformer` against a real `knuma apiserver`: it watches the first candidate version that serves the
resource (DeviceTaintRules are `resource.k8s.io/v1alpha3` there, not v1 nor v1beta2), and counts as synced at once
when no version does, without an informer retrying a 404."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from knuma.kube.client import async_http
from knuma.kube.discovered import DiscoveredInformer
from knuma.testing.apiserver import apiserver_in_thread
from knuma.testing.polling import eventually_async

from .test_informer import Recorder

RULE = {
    "apiVersion": "resource.k8s.io/v1alpha3",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "maintenance"},
    "spec": {
        "deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "example.com/down", "effect": "NoSchedule"},
    },
}


async def test_the_served_version_is_found_and_watched(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path) as api:
        http = async_http(api.kubeconfig)
        try:
            recorder = Recorder()
            informer = DiscoveredInformer(
                http, "resource.k8s.io", ("v1", "v1beta2", "v1alpha3"), "devicetaintrules", recorder
            )
            task = asyncio.create_task(informer.run())
            await asyncio.wait_for(informer.synced.wait(), 10)
            assert informer.path == "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
            (await http.post("/apis/resource.k8s.io/v1alpha3/devicetaintrules", json=RULE)).raise_for_status()
            await eventually_async(lambda: recorder.events == [("add", "maintenance")])
            assert "maintenance" in str(informer.store)

            missing = DiscoveredInformer(http, "resource.k8s.io", ("v1", "v1beta2"), "devicetaintrules", Recorder())
            other = asyncio.create_task(missing.run())
            await asyncio.wait_for(missing.synced.wait(), 10)
            assert missing.informer is None and missing.store == {}
            for running in (task, other):
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
        finally:
            await http.aclose()
