"""Fabric-attached GPUs on `knuma up` (binding conditions, KEP-5007), as the README's session runs them: `knuma up
--fabric-gpus 2` publishes an `allNodes` slice of GPUs with `bindsToNode` and binding conditions, and its fabric
manager reports an allocated GPU attached to the node its allocation is pinned to a few seconds later.
`examples/dra/fabric-gpu.yaml`'s pod waits in PreBind (`BindingConditionsPending`), is bound only after the attach,
on the allocation's node, and runs. `examples/dra/fabric-gpu-broken.yaml`'s claim asks for a failed attach: the pod
stays Pending with FailedScheduling saying why, its claim deallocated and allocated afresh on every retry. The cluster
resumed without the flag offers no fabric GPUs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from knuma.testing.polling import eventually

from .test_up import Up, phase

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "dra"
DRIVER = "fabric.sim.knuma.io"
DELAY = 4


def events(up: Up, pod: str, reason: str) -> list[dict[str, Any]]:
    found = up.get("events", "--field-selector", f"involvedObject.name={pod}")["items"]
    return [e for e in found if e["reason"] == reason]


def claim_status(up: Up, name: str) -> dict[str, Any]:
    return dict(up.get("resourceclaim", name).get("status") or {})


def pinned_node(allocation: dict[str, Any]) -> str:
    (term,) = allocation["nodeSelector"]["nodeSelectorTerms"]
    (field,) = term["matchFields"]
    assert (field["key"], field["operator"]) == ("metadata.name", "In")
    (node,) = field["values"]
    return str(node)


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_a_fabric_gpu_is_bound_once_attached_and_a_failed_attach_is_retried(start: Callable[..., Up]) -> None:
    up = start(
        "--nodes", "2", "--shape", "small", "--exporters", "in-process",
        "--fabric-gpus", "2", "--fabric-attach-delay", f"{DELAY}s",
    )  # fmt: skip
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 2)
    (fabric,) = [s for s in up.get("resourceslices")["items"] if s["spec"]["driver"] == DRIVER]
    assert fabric["spec"]["allNodes"] is True and len(fabric["spec"]["devices"]) == 2

    up.kubectl("apply", "-f", str(EXAMPLES / "fabric-gpu.yaml"))
    eventually(lambda: events(up, "fabric-trainer", "BindingConditionsPending"), timeout=60)
    pending = up.get("pod", "fabric-trainer")
    allocation = claim_status(up, "fabric-gpu")["allocation"]
    node = pinned_node(allocation)
    assert events(up, "fabric-trainer", "BindingConditionsPending")[0]["message"].endswith(f"on node {node}")
    assert not pending["spec"].get("nodeName")  # waiting for the attach (DELAY seconds after the allocation)

    eventually(lambda: phase(up, "fabric-trainer") == "Running", timeout=60)
    assert up.get("pod", "fabric-trainer")["spec"]["nodeName"] == node
    status = claim_status(up, "fabric-gpu")
    assert status["allocation"] == allocation  # the same allocation, attached
    (device,) = status["devices"]
    result = allocation["devices"]["results"][0]
    assert (device["driver"], device["pool"], device["device"]) == (DRIVER, "fabric", result["device"])
    (attached,) = device["conditions"]
    assert (attached["type"], attached["status"]) == (f"{DRIVER}/attached", "True")
    assert attached["message"] == f"attached to {node}"
    (scheduled,) = events(up, "fabric-trainer", "Scheduled")
    attached_at = seconds(attached["lastTransitionTime"])
    assert attached_at - seconds(allocation["allocationTimestamp"]) >= DELAY - 1  # RFC 3339 seconds
    assert seconds(scheduled["lastTimestamp"]) >= attached_at  # bound only once attached

    up.kubectl("apply", "-f", str(EXAMPLES / "fabric-gpu-broken.yaml"))

    def failed() -> str:
        messages = [e["message"] for e in events(up, "broken-fabric-trainer", "FailedScheduling")]
        return messages[-1] if messages else ""

    message = eventually(failed, timeout=60)
    assert 'claim broken-fabric-gpu binding failed: reason=AttachFailed, message="attaching to worker-00' in message, (
        message
    )
    assert "(sim.knuma.io/fabric-attach=fail)" in message
    first = claim_status(up, "broken-fabric-gpu").get("allocation", {}).get("allocationTimestamp")

    def allocated_afresh() -> bool:
        """A new allocation, without the failed one's report: the claim was deallocated and the pod retried."""
        status = claim_status(up, "broken-fabric-gpu")
        stamp = (status.get("allocation") or {}).get("allocationTimestamp")
        return bool(stamp) and stamp != first and not status.get("devices")

    eventually(allocated_afresh, timeout=60)
    eventually(
        lambda: sum(e["count"] for e in events(up, "broken-fabric-trainer", "FailedScheduling")) >= 2,
        timeout=60,
        what="a second failed attach",
    )
    broken = up.get("pod", "broken-fabric-trainer")
    assert broken["status"]["phase"] == "Pending" and not broken["spec"].get("nodeName")
    assert phase(up, "fabric-trainer") == "Running"  # the failing claim never took the attached GPU

    # both pods gone: their claims are deallocated, the drivers' reports with them
    up.kubectl("delete", "pod", "fabric-trainer", "broken-fabric-trainer", "--wait=false")

    def released() -> bool:
        statuses = [claim_status(up, c) for c in ("fabric-gpu", "broken-fabric-gpu")]
        return not any(s.get(k) for s in statuses for k in ("allocation", "devices", "reservedFor"))

    eventually(released, timeout=60)
    assert up.stop() == 0

    # resumed without --fabric-gpus: no fabric manager runs, so its devices are not offered any more
    again = start()
    assert [s["metadata"]["name"] for s in again.get("resourceslices")["items"]] == []
    assert DRIVER not in again.kubectl("get", "deviceclasses", "-o", "name")
    assert again.stop() == 0
