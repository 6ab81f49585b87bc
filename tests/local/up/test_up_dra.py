"""End-to-end DRA on `knuma up` with kubectl, as the README's session runs it: DGX-like nodes publish their GPU and
NIC slices, a pod from a ResourceClaimTemplate (one GPU and one NIC on one PCIe root, 16 exclusive CPUs) runs with
its devices and CPUs on one NUMA node, a pod that cannot be aligned stays Pending with the reason, and deleting the
pod deletes its claim. NICs asked for as an extended resource (`example.com/nic`) come from the DeviceClass that names
it (KEP-5004): the scheduler creates the claim, the kubelet aligns the NIC with the pod's CPUs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def test_an_extended_resource_a_device_class_serves_on_dgx_nodes(start: Callable[..., Up]) -> None:
    """`examples/dra/nic-extended-resource.yaml` after a 50-CPU pod took most of one NUMA node: the pod asking for
    `example.com/nic: 1` and 8 CPUs runs on the other NUMA node with a NIC of that NUMA node, through a claim the
    scheduler created, owned by the pod and deleted with it."""
    up = start("--nodes", "1", "--shape", "dgx", "--exporters", "in-process")
    eventually(lambda: len(up.get("resourceslices")["items"]) == 2)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    limits = {"cpu": "50", "memory": "8Gi"}
    big = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {
            "schedulerName": "topology-aware-scheduler",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": limits}}],
        },
    }
    up.kubectl("apply", "-f", "-", stdin=json.dumps(big))
    eventually(lambda: phase(up, "big") == "Running")
    (taken,) = json.loads(up.get("pod", "big")["metadata"]["annotations"]["sim.knuma.io/numa"])["c"]
    up.kubectl("apply", "-f", str(EXAMPLES / "nic-extended-resource.yaml"))
    eventually(lambda: phase(up, "nic-user") == "Running")
    pod = up.get("pod", "nic-user")
    annotations = pod["metadata"]["annotations"]
    (numa,) = json.loads(annotations["sim.knuma.io/numa"])["app"]
    devices = json.loads(annotations["sim.knuma.io/devices"])["app"]
    ((device, device_numa),) = devices.items()
    assert numa != taken and device_numa == numa and device.startswith("nic.sim.knuma.io/")
    name = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    claim = up.get("resourceclaim", name)
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["status"]["reservedFor"][0]["name"] == "nic-user"
    up.kubectl("delete", "pod", "nic-user", "--wait=false")
    eventually(lambda: not up.get("resourceclaims")["items"])
    assert up.stop() == 0


def test_a_no_execute_device_taint_rule_evicts_and_keeps_the_gpu_out(start: Callable[..., Up]) -> None:
    """`examples/dra/gpu-down.yaml` after the trainer got gpu-0: the device taint eviction controller deletes the
    trainer, and the trainer created again gets another GPU. Before, `gpu-down-dry-run.yaml` (effect `None`) says
    what it would evict and evicts nothing; after, the rule's condition says it is done (the README's session)."""
    up = start(
        "--nodes", "1", "--shape", "dgx", "--exporters", "in-process", "--load", str(EXAMPLES / "gpu-nic-template.yaml")
    )
    eventually(lambda: len(up.get("resourceslices")["items"]) == 2)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    up.kubectl("apply", "-f", str(EXAMPLES / "trainer.yaml"))
    eventually(lambda: phase(up, "trainer") == "Running")

    def gpu() -> str:
        (claim,) = up.get("resourceclaims")["items"]
        return str(
            next(r["device"] for r in claim["status"]["allocation"]["devices"]["results"] if r["request"] == "gpu")
        )

    assert gpu() == "gpu-0"
    uid = up.get("pod", "trainer")["metadata"]["uid"]
    up.kubectl("apply", "-f", str(EXAMPLES / "gpu-down-dry-run.yaml"))
    message = '{.status.conditions[?(@.type=="EvictionInProgress")].message}'

    def dry_run() -> str:
        return up.kubectl("get", "devicetaintrule", "gpu-down-dry-run", "-o", f"jsonpath={message}")

    eventually(lambda: dry_run() != "")
    assert dry_run() == (
        "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the "
        "effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger "
        "an update."
    )
    assert phase(up, "trainer") == "Running"
    up.kubectl("apply", "-f", str(EXAMPLES / "gpu-down.yaml"))
    waited = up.kubectl("wait", "--for=condition=EvictionInProgress=false", "devicetaintrule/gpu-down", "--timeout=25s")
    assert "condition met" in waited
    done = up.kubectl("get", "devicetaintrule", "gpu-down", "-o", f"jsonpath={message}")
    assert done == "1 pod evicted since starting the controller."

    def evicted() -> bool:
        pods = up.get("pods")["items"]
        return not [p for p in pods if p["metadata"]["uid"] == uid]

    eventually(evicted)
    events = up.get("events", "--field-selector", "involvedObject.name=trainer")["items"]
    assert any(e["reason"] == "DeviceTaintManagerEviction" for e in events)
    eventually(lambda: not up.get("resourceclaims")["items"])
    up.kubectl("apply", "-f", str(EXAMPLES / "trainer.yaml"))
    eventually(lambda: phase(up, "trainer") == "Running")
    assert gpu() != "gpu-0"
    assert up.stop() == 0


def _template(name: str, device_class: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _pod(name: str, template: str) -> dict[str, Any]:
    resources = {"limits": {"cpu": "2", "memory": "4Gi"}, "claims": [{"name": "gpu"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "topology-aware-scheduler",
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}],
        },
    }


def test_mig_partitions_and_whole_gpus_share_counters_on_a_mig_node(start: Callable[..., Up]) -> None:
    """One `mig` node: 4 GPUs, each published whole and as 3g.40gb and 1g.10gb partitions sharing its counters. Two
    pods take a 3g.40gb partition each; then four pods ask for a whole GPU: a GPU with a partition given out cannot
    be, so only the others run, and the rest wait with FailedScheduling naming the counters."""
    up = start("--nodes", "1", "--shape", "mig")
    eventually(lambda: len(up.get("resourceslices")["items"]) == 2)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    classes = set(up.kubectl("get", "deviceclasses", "-o", "name").split())
    assert "deviceclass.resource.k8s.io/3g-40gb.gpu.sim.knuma.io" in classes
    templates = [_template("slice", "3g-40gb.gpu.sim.knuma.io"), _template("whole", "gpu.sim.knuma.io")]
    partitions = [_pod(f"part-{i}", "slice") for i in range(2)]
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([*templates, *partitions]))
    eventually(lambda: all(phase(up, p["metadata"]["name"]) == "Running" for p in partitions), timeout=90)
    wholes = [_pod(f"whole-{i}", "whole") for i in range(4)]
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(wholes))

    def devices() -> list[str]:
        claims = up.get("resourceclaims")["items"]
        return [
            r["device"]
            for c in claims
            for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        ]

    def settled() -> bool:
        running = [w for w in wholes if phase(up, w["metadata"]["name"]) == "Running"]
        parents = {d.split("-3g-")[0] for d in devices() if "-3g-" in d}
        return len(running) == 4 - len(parents) and sum("-3g-" in d for d in devices()) == 2

    eventually(settled, timeout=90)
    allocated = devices()
    parents = {d.split("-3g-")[0] for d in allocated if "-3g-" in d}
    whole_gpus = {d for d in allocated if d.count("-") == 1}
    assert parents and not parents & whole_gpus  # never a GPU given whole and in part
    waiting = [w["metadata"]["name"] for w in wholes if phase(up, w["metadata"]["name"]) != "Running"]
    assert len(waiting) == len(parents)

    def refused() -> str:
        events = up.get("events", "--field-selector", f"involvedObject.name={waiting[0]}")["items"]
        messages = [e["message"] for e in events if e["reason"] == "FailedScheduling"]
        return messages[-1] if messages else ""

    assert "0 left after the counters stage" in eventually(refused, timeout=60)
    assert up.stop() == 0
