"""knuma's allocator against the straightforward port of upstream's depth-first search, on random inputs: the same
verdict every time, and knuma's allocation valid (distinct devices, counts met, constraints held, devices usable)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.devices.allocator import Inventory, NodeView, allocate
from knuma.devices.reference import reference_allocate
from tests.devices.builders import DRIVER_A, DRIVER_B, LABELS, NODE1, claim, dev, device_class, first, req, slice_, sub

CLASSES = {"class-a": device_class("class-a", DRIVER_A), "class-b": device_class("class-b", DRIVER_B)}
TAINT = {"key": "example.com/t", "effect": "NoSchedule"}
TOLERATE = [{"key": "example.com/t", "operator": "Exists"}]
BIG = 'device.attributes["{}"].size >= 2'


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Any], list[ResourceClaim], frozenset[tuple[str, str, str]]]:
    slices = []
    in_use = set()
    for driver in (DRIVER_A, DRIVER_B):
        devices = []
        for i in range(draw(st.integers(0, 6))):
            attributes = {"numa": {"int": draw(st.integers(0, 2))}, "size": {"int": draw(st.integers(1, 3))}}
            taints = [TAINT] if draw(st.integers(0, 5)) == 0 else None
            devices.append(dev(f"d{i}", attributes=attributes, taints=taints))
            if draw(st.integers(0, 4)) == 0:
                in_use.add((driver, "pool", f"d{i}"))
        slices.append(slice_(f"s-{driver}", NODE1, "pool", driver, *devices))
    claims = []
    for c in range(draw(st.integers(1, 2))):
        requests = []
        for r in range(draw(st.integers(1, 3))):
            cls = draw(st.sampled_from(["class-a", "class-b"]))
            driver = DRIVER_A if cls == "class-a" else DRIVER_B
            selectors = [BIG.format(driver)] if draw(st.booleans()) else []
            tolerations = TOLERATE if draw(st.integers(0, 3)) == 0 else None
            kind = draw(st.integers(0, 5))
            if kind == 0:
                requests.append(req(f"r{r}", cls, None, *selectors, mode="All"))
            elif kind == 1:
                requests.append(
                    first(f"r{r}", sub("big", cls, draw(st.integers(1, 3)), *selectors), sub("small", cls, 1))
                )
            else:
                requests.append(req(f"r{r}", cls, draw(st.integers(1, 3)), *selectors, tolerations=tolerations))
        constraints = None
        if draw(st.booleans()):
            names = [x["name"] for x in requests]
            chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
            attribute = draw(st.sampled_from([f"{DRIVER_A}/numa", f"{DRIVER_B}/numa", f"{DRIVER_A}/size"]))
            constraints = (
                [{"requests": chosen, "matchAttribute": attribute}] if chosen else [{"matchAttribute": attribute}]
            )
        claims.append(claim(f"c{c}", *requests, constraints=constraints))
    return slices, claims, frozenset(in_use)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_same_verdict_as_upstream_search(scenario: tuple[list[Any], list[ResourceClaim], frozenset[Any]]) -> None:
    slices, claims, in_use = scenario
    inventory = Inventory(slices, CLASSES, in_use)
    view = NodeView(NODE1, LABELS[NODE1])
    ours = allocate(view, claims, inventory, budget=1_000_000)
    theirs = reference_allocate(view, claims, inventory)
    assert ours.allocatable == theirs.allocatable, (ours.reason, theirs)
    if not ours.allocatable:
        assert ours.reason and not ours.exhausted
        return
    taken: set[tuple[str, str, str]] = set()
    devices = {(s.driver, s.pool.name, d.name): d for s in slices for d in s.devices}
    for result, c in zip(ours.results, claims, strict=True):
        picked = [(d.request, d.device_id) for d in result.allocation.results]
        ids = [i for _, i in picked]
        assert len(set(ids)) == len(ids) and not set(ids) & taken and not set(ids) & in_use
        taken |= set(ids)
        for constraint in c.spec.constraints:
            scope = [
                i
                for name, i in picked
                if not constraint.requests or name in constraint.requests or name.split("/")[0] in constraint.requests
            ]
            ident = constraint.match_attribute.split("/")[1]
            assert len({devices[i].attributes[ident].value for i in scope}) <= 1
            assert all(constraint.match_attribute.split("/")[0] == i[0] for i in scope)
        for request in c.spec.requests:
            got = [i for name, i in picked if name.split("/")[0] == request.name]
            counts = {a.count for a in request.alternatives if a.allocation_mode == "ExactCount"}
            assert got and (len(got) in counts or any(a.allocation_mode == "All" for a in request.alternatives))
