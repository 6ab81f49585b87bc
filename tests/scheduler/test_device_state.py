"""`DeviceState` keeps the devices in use and each node's device state up to date as claims, allocations in flight,
pods and slices change, without reading every claim after each change: after every step of random sequences the
incremental answers equal the ones computed from scratch (every claim parsed, the allocation in flight where the
informer's copy has none, allocations in flight for claims the informer has not delivered)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from knuma.api.dra.fields import FieldErrors
from knuma.api.dra.resourceclaim import AllocationResult
from knuma.api.pod import Pod
from knuma.devices.allocator import (
    add_consumption,
    allocated_devices,
    allocation_devices,
    allocation_shares,
    consumed_capacity,
)
from knuma.scheduler.plugins.device_state import DeviceState
from knuma.scheduler.plugins.dra_zones import device_resource
from knuma.testbed.dra import resource_slices
from knuma.testbed.shapes import BUILTIN_SHAPES

from .builders import device_state

GPU = "gpu.sim.knuma.io"


def _allocation(node: str, devices: list[str], admin: bool = False, share: int = 0) -> dict[str, Any]:
    """`share` > 0: shares of devices that allow multiple allocations, each consuming `share` Gi of memory."""
    results = [
        {"request": "gpu", "driver": GPU, "pool": node, "device": name, **({"adminAccess": True} if admin else {})}
        for name in devices
    ]
    for result in results if share else ():
        result["shareID"] = str(uuid.uuid4())
        result["consumedCapacity"] = {"memory": f"{share}Gi"}
    return {"devices": {"results": results}}


def _claim(name: str, allocation: dict[str, Any] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
    }
    if allocation is not None:
        obj["status"] = {"allocation": allocation}
    return obj


def _pod(name: str) -> Pod:
    container = {"name": "c", "image": "x"}
    return Pod.from_manifest({"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [container]}})


def _from_scratch(state: DeviceState) -> tuple[frozenset[Any], dict[Any, dict[str, int]]]:
    parsed = [c for key in state.claims if (c := state.parsed_claim(key)) is not None]
    in_use = set(allocated_devices(parsed))
    consumed = consumed_capacity(parsed)
    for key, (_, allocation) in state.in_flight.items():
        if key not in state.claims:
            in_use.update(allocation_devices(allocation))
            for device, taken in allocation_shares(allocation):
                add_consumption(consumed, device, taken)
    return frozenset(in_use), consumed


@pytest.mark.parametrize("seed", range(6))
def test_devices_in_use_and_node_states_follow_every_change(seed: int) -> None:
    rng = random.Random(seed)
    shape = BUILTIN_SHAPES["dgx"]
    nodes = [f"n{i}" for i in range(4)]
    state = device_state(shape, nodes)
    gpus = sorted(d.name for s in state.slices.values() if s.driver == GPU for d in s.devices)
    claims = [f"c{i}" for i in range(12)]
    pods = [f"p{i}" for i in range(5)]
    changed_nodes = shared_nodes = 0
    for step in range(300):
        before = {node: state.node_devices(node) for node in nodes}
        action = rng.choice(("claim", "claim", "written", "delete", "reserve", "unreserve", "pod gone", "slice"))
        name = rng.choice(claims)
        node = rng.choice(nodes)
        share = rng.choice((0, 0, 1, 2))
        allocation = _allocation(node, rng.sample(gpus, rng.randint(1, 2)), admin=rng.random() < 0.1, share=share)
        if action == "claim":
            state.set_claim(_claim(name, None))
        elif action == "written":
            state.set_claim(_claim(name, allocation))
        elif action == "delete":
            state.delete_claim(_claim(name, None))
        elif action == "reserve":
            parsed = AllocationResult.from_dict(allocation, "allocation", FieldErrors())
            state.reserve(_pod(rng.choice(pods)), {f"default/{name}": parsed})
        elif action == "unreserve":
            state.unreserve(_pod(rng.choice(pods)))
        elif action == "pod gone":
            state.delete_pod({"metadata": {"namespace": "default", "name": rng.choice(pods)}})
        elif step % 50 == 0:  # a driver republishes a node's slices
            for body in resource_slices(node, shape):
                state.set_slice(body)
        in_use, consumed = _from_scratch(state)
        assert state.inventory().in_use == in_use, f"step {step}: {action}"
        assert state.inventory().consumed == consumed, f"step {step}: {action}"
        for each in nodes:
            ids = {(s.driver, s.pool.name, d.name) for s in state.slices.values() for d in s.devices}
            busy = frozenset(d for d in ids if d in in_use and d[1] == each)
            shares = frozenset((d, tuple(sorted(c.items()))) for d, c in consumed.items() if d[1] == each)
            current = state.node_devices(each)
            expected = (state.slices_version, state.classes_version, busy, shares)
            assert current == expected, f"step {step}: {action} {each}"
            changed_nodes += current != before[each]
            shared_nodes += bool(shares)
    assert changed_nodes > 50  # the sequences did change node states
    assert shared_nodes > 50  # and consumed shares of devices


def test_a_shared_device_counts_free_in_its_zone_while_one_more_share_fits() -> None:
    """Consumable capacity: a 100G NIC shared in 10G steps stays a free device of its NUMA zone with 90G taken
    (one more share fits) and is counted taken at 100G; the node is reported changed each time the shares move."""
    state = device_state(BUILTIN_SHAPES["shared-nic"], ["n0"])
    name = "nic.sim.knuma.io"
    assert state.zone_devices("n0")[0] == {device_resource(name): (1, 1)}
    state.zone_devices_changed()

    def share(claim: str, gigabits: int) -> None:
        result = {
            "request": "nic",
            "driver": name,
            "pool": "n0",
            "device": "nic-0",
            "shareID": str(uuid.uuid4()),
            "consumedCapacity": {"bandwidth": f"{gigabits}G"},
        }
        state.set_claim(_claim(claim, {"devices": {"results": [result]}}))

    share("a", 90)
    assert state.zone_devices("n0")[0] == {device_resource(name): (1, 1)}
    assert state.zone_devices_changed() == {"n0"}
    share("b", 10)
    assert state.zone_devices("n0")[0] == {device_resource(name): (1, 0)}
    assert state.zone_devices("n0")[1] == {device_resource(name): (1, 1)}  # the other zone's NIC is untouched
    assert state.zone_devices_changed() == {"n0"}
    assert state.zone_devices_changed() == set()
    state.delete_claim(_claim("b", None))
    assert state.zone_devices("n0")[0] == {device_resource(name): (1, 1)}
    assert state.zone_devices_changed() == {"n0"}
