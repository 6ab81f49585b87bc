"""End-to-end DRA on `knuma up` with kubectl, as the README's session runs it: DGX-like nodes publish their GPU and
NIC slices, a pod from a ResourceClaimTemplate (one GPU and one NIC on one PCIe root, 16 exclusive CPUs) runs with
its devices and CPUs on one NUMA node, a pod that cannot be aligned stays Pending with the reason, and deleting the
pod deletes its claim."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from knuma.testing.polling import eventually

from .test_up import Up, phase

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "dra"


def test_dra_session_on_dgx_nodes(start: Callable[..., Up]) -> None:
    up = start(
        "--nodes", "1", "--shape", "dgx", "--exporters", "process", "--load", str(EXAMPLES / "gpu-nic-template.yaml")
    )
    # --load created the template before the nodes started
    assert up.kubectl("get", "resourceclaimtemplates", "-o", "name").split() == [
        "resourceclaimtemplate.resource.k8s.io/gpu-and-nic"
    ]
    assert up.kubectl("get", "deviceclasses", "-o", "name").split() == [
        "deviceclass.resource.k8s.io/gpu.sim.knuma.io",
        "deviceclass.resource.k8s.io/nic.sim.knuma.io",
    ]
    eventually(lambda: len(up.get("resourceslices")["items"]) == 2)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    up.kubectl("apply", "-f", str(EXAMPLES / "trainer.yaml"))
    eventually(lambda: phase(up, "trainer") == "Running")
    annotations = up.get("pod", "trainer")["metadata"]["annotations"]
    devices = json.loads(annotations["sim.knuma.io/devices"])["train"]
    numa = json.loads(annotations["sim.knuma.io/numa"])["train"]
    assert len(devices) == 2 and set(devices.values()) == set(numa) and len(numa) == 1

    # the exporter process (--dra-devices) lists the devices per NUMA zone, the two taken ones not free
    def free_devices() -> int:
        zones = up.get("noderesourcetopologies", "worker-000")["zones"]
        return sum(
            int(r["available"]) for z in zones for r in z["resources"] if r["name"].endswith(".sim.knuma.io/devices")
        )

    eventually(lambda: free_devices() == 14)
    (claim,) = up.get("resourceclaims")["items"]
    assert claim["metadata"]["name"].startswith("trainer-devices-")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["request"] for r in results) == ["gpu", "nic"]
    assert claim["status"]["reservedFor"][0]["name"] == "trainer"

    up.kubectl("apply", "-f", str(EXAMPLES / "too-big.yaml"))

    def reason() -> str:
        events = up.get("events", "--field-selector", "involvedObject.name=too-big")["items"]
        messages = [e["message"] for e in events if "cannot allocate all claims" in e["message"]]
        return messages[-1] if messages else ""

    message = eventually(reason)
    assert "single-numa-node" in message and "cpu=60" in message
    assert phase(up, "too-big") == "Pending"

    up.kubectl("delete", "pod", "trainer", "--wait=false")
    eventually(
        lambda: not [c for c in up.get("resourceclaims")["items"] if c["metadata"]["name"].startswith("trainer")]
    )
    assert up.stop() == 0
