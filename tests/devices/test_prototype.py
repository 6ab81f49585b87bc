"""The prototype's `SelectNode`: its test table (`pkg/schedule/schedule_test.go`, `TestSelectNode`, same verdicts),
its CEL rule and result strings, and the bugs knuma fixes."""

from __future__ import annotations

from typing import Any

import pytest

from knuma.api.devmgmt.types import DeviceClaim, DevicePool, parse_prototype
from knuma.devices.prototype import select_node
from knuma.testbed.devices import prototype_pools


def pools(*shapes: tuple[str, int]) -> list[DevicePool]:
    out = []
    for shape, n in shapes:
        for doc in prototype_pools(shape, n):
            pool, _ = parse_prototype(doc)
            assert isinstance(pool, DevicePool)
            out.append(pool)
    return out


def claim(name: str = "myclaim", **spec: Any) -> DeviceClaim:
    parsed, _ = parse_prototype(
        {"kind": "DeviceClaim", "metadata": {"name": name}, "spec": {"deviceClass": "not implemented yet", **spec}}
    )
    assert isinstance(parsed, DeviceClaim)
    return parsed


MIXED = (("shape-zero", 2), ("shape-three", 2))
CASES = {
    "single by driver": ([claim(driver="example.com-foozer")], MIXED, True),
    "single with constraint met": ([claim(constraints="device.model == 'foozer-1000'")], MIXED, True),
    "single with constraint not met": ([claim(constraints="device.model == 'foozer-8000'")], MIXED, False),
    "multiple single pool": ([claim(driver="example.com-foozer", minDeviceCount=2)], (("shape-zero", 2),), True),
    "split across pools": ([claim(driver="example.com-foozer", minDeviceCount=4)], (("shape-one", 2),), True),
    "two claims not satisfiable by a single node": (
        [
            claim("foozer-claim", driver="example.com-foozer", minDeviceCount=2),
            claim("barzer-claim", driver="example.com-barzer", minDeviceCount=2),
        ],
        MIXED,
        False,
    ),
    "two claims satisfiable by a single node": (
        [
            claim("foozer-claim", driver="example.com-foozer", minDeviceCount=2),
            claim("barzer-claim", driver="example.com-barzer", minDeviceCount=2),
        ],
        (("shape-foozer-barzer", 2),),
        True,
    ),
    "claim cannot be met due to NUMA MatchAttribute": (
        [claim(driver="example.com-foozer", minDeviceCount=4, matchAttributes=["numa"])],
        (("shape-one", 2),),
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_select_node_verdicts(name: str) -> None:
    claims, shapes, success = CASES[name]
    _, allocations, _ = select_node(claims, pools(*shapes))
    assert (allocations is not None) is success


def test_split_across_pools_takes_the_smallest_set() -> None:
    selected, allocations, results = select_node(
        [claim(driver="example.com-foozer", minDeviceCount=4)], pools(("shape-one", 2))
    )
    assert selected == "shape-one-00"
    assert allocations == [
        {"devicePoolName": "shape-one-00-foozer-00", "deviceCount": 2},
        {"devicePoolName": "shape-one-00-foozer-01", "deviceCount": 2},
    ]
    claim_result = results[0].claim_results[0]
    assert claim_result.best == 2  # sets of one pool ([0], [1]) fail first
    assert results[0].summary() == "shape-one-00: satisfied all claims with score 100"


def test_ignored_pool_reasons() -> None:
    _, _, results = select_node(
        [claim(driver="example.com-foozer", constraints="device.model == 'foozer-1000'")],
        pools(("shape-three", 1), ("shape-zero", 1)),
    )
    three = next(r for r in results if r.node_name == "shape-three-00")
    assert {p.failure_reason for p in three.claim_results[0].ignored_pools} == {"claim and pool driver do not match"}
    assert three.claim_results[0].pool_set_results is None
    assert three.to_dict()["DeviceClaimResults"][0]["poolSetResults"] is None
    _, _, results = select_node([claim(constraints="device.model = 'x'")], pools(("shape-zero", 1)))
    reason = results[0].claim_results[0].ignored_pools[0].failure_reason
    assert reason.startswith("error evaluating constraints: ")


def test_two_claims_cannot_double_book_one_pool() -> None:
    # shape-zero has one pool of 2 per node: the prototype gave both claims the same 2 devices; knuma does not.
    claims = [
        claim("a", driver="example.com-foozer", minDeviceCount=2),
        claim("b", driver="example.com-foozer", minDeviceCount=2),
    ]
    selected, allocations, results = select_node(claims, pools(("shape-zero", 2)))
    assert selected is None and allocations is None
    assert results[0].summary() == "shape-zero-00: could not satisfy these claims: b"
    reasons = {p.failure_reason for p in results[0].claim_results[1].ignored_pools}
    assert reasons == {"no available devices"}


def test_no_claims_is_a_fit_not_a_panic() -> None:
    selected, allocations, _ = select_node([], pools(("shape-zero", 1)))
    assert selected == "shape-zero-00" and allocations == []
