"""Shared NICs on `knuma up` (consumable capacity, KEP-5075), as the README's session runs them: a `shared-nic` node
has one 100G NIC per NUMA node that allows multiple allocations. `examples/dra/shared-nic.yaml` runs three pods
asking 40G and one asking 25G: they share the two NICs, each claim with its own shareID and the bandwidth it
consumes rounded up to the NIC's 10G steps (25G -> 30G), no NIC given more than 100G, each pod's CPUs on its NIC's
NUMA node. `examples/dra/shared-nic-full.yaml` asks 40G more, which no NIC has left (20G and 30G): the pod stays
Pending with the reason, and runs once a 40G pod is deleted and its claim frees that bandwidth."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knuma.quantity import parse_quantity
from knuma.testing.polling import eventually

from .test_up import Up, phase

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "dra"
NIC = "nic.sim.knuma.io"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
G = 10**9


def shares(up: Up) -> dict[str, dict[str, Any]]:
    """Pod name -> the one allocation result of its claim (`<pod>-nic-xxxxx`), for the allocated claims."""
    out = {}
    for claim in up.get("resourceclaims")["items"]:
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation:
            (result,) = allocation["devices"]["results"]
            out[claim["metadata"]["name"].rsplit("-nic-", 1)[0]] = result
    return out


def test_pods_share_nics_by_bandwidth_on_shared_nic_nodes(start: Callable[..., Up]) -> None:
    up = start("--nodes", "1", "--shape", "shared-nic", "--exporters", "in-process")
    eventually(lambda: len(up.get("resourceslices")["items"]) == 1)
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    up.kubectl("apply", "-f", str(EXAMPLES / "shared-nic.yaml"))
    pods = ["web-0", "web-1", "web-2", "stream"]
    eventually(lambda: all(phase(up, p) == "Running" for p in pods), timeout=60)

    got = shares(up)
    assert sorted(got) == sorted(pods)
    assert len({r["shareID"] for r in got.values()}) == 4 and all(UUID.fullmatch(r["shareID"]) for r in got.values())
    assert {p: r["consumedCapacity"] for p, r in got.items()} == {
        "web-0": {"bandwidth": "40G"},
        "web-1": {"bandwidth": "40G"},
        "web-2": {"bandwidth": "40G"},
        "stream": {"bandwidth": "30G"},  # asked 25G: the NIC's validRange has 10G steps
    }
    load: dict[str, int] = {}
    for result in got.values():
        assert (result["driver"], result["pool"]) == (NIC, "worker-000")
        load[result["device"]] = (
            load.get(result["device"], 0) + parse_quantity(result["consumedCapacity"]["bandwidth"]).value()
        )
    assert sorted(load.values()) == [70 * G, 80 * G]  # 40G + 40G on one NIC, 40G + 30G on the other
    for pod in pods:
        annotations = up.get("pod", pod)["metadata"]["annotations"]
        devices = json.loads(annotations["sim.knuma.io/devices"])["app"]
        assert devices == {f"{NIC}/{got[pod]['device']}": json.loads(annotations["sim.knuma.io/numa"])["app"][0]}

    up.kubectl("apply", "-f", str(EXAMPLES / "shared-nic-full.yaml"))

    def reason() -> str:
        events = up.get("events", "--field-selector", "involvedObject.name=web-3")["items"]
        messages = [e["message"] for e in events if "cannot allocate all claims" in e["message"]]
        return messages[-1] if messages else ""

    message = eventually(reason)
    assert "web-3-nic-" in message
    assert phase(up, "web-3") == "Pending"
    assert "web-3" not in shares(up)

    # a 40G pod goes: its claim is deallocated and deleted, and web-3 gets the bandwidth it freed
    gone = got["web-0"]["device"]
    up.kubectl("delete", "pod", "web-0", "--wait=false")
    eventually(lambda: phase(up, "web-3") == "Running", timeout=60)
    after = shares(up)
    assert after["web-3"]["device"] == gone
    # the other claims keep their shares: the one claim released freed only its own
    assert {p: after[p] for p in ("web-1", "web-2", "stream")} == {p: got[p] for p in ("web-1", "web-2", "stream")}
    assert "web-0" not in after
    assert up.stop() == 0
