"""Fuzzing the API object parsers: a NodeResourceTopology or Pod with any field replaced by any value either parses
or raises the parser's own error (`NRTError`, `PodError`, both `knuma.errors.InvalidInput`) naming the object."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings

from knuma.api.nrt import NodeResourceTopology, NRTError
from knuma.api.pod import Pod, PodError
from knuma.errors import InvalidInput
from tests.strategies import JSON_VALUES, mutations

VALID_NRT: dict[str, Any] = {
    "apiVersion": "topology.node.k8s.io/v1alpha2",
    "kind": "NodeResourceTopology",
    "metadata": {"name": "node-a", "labels": {"a": "b"}, "annotations": {"topology.node.k8s.io/fingerprint": "pfp0"}},
    "topologyPolicies": ["SingleNUMANodeContainerLevel"],
    "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
    "zones": [
        {
            "name": "node-0",
            "type": "Node",
            "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
            "attributes": [{"name": "x", "value": "y"}],
            "resources": [
                {"name": "cpu", "capacity": "8", "allocatable": "7", "available": "6"},
                {"name": "memory", "capacity": "16Gi", "allocatable": "15Gi", "available": 1024},
            ],
        },
        {"name": "node-1", "type": "Node", "resources": [{"name": "cpu", "capacity": 8}]},
    ],
}

VALID_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
    "spec": {
        "priority": 5,
        "schedulerName": "knuma",
        "overhead": {"cpu": "100m"},
        "initContainers": [
            {"name": "init", "resources": {"requests": {"cpu": "1"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"memory": "1Gi"}}},
        ],
        "containers": [
            {"name": "main", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2"}}}
        ],
    },
}


def test_the_valid_documents_parse() -> None:
    assert len(NodeResourceTopology.from_dict(VALID_NRT).numa_zones()) == 2
    assert Pod.from_manifest(VALID_POD).effective_request["cpu"] == 2100


@settings(max_examples=500, deadline=None)
@given(mutations(VALID_NRT))
def test_a_mutated_nrt_parses_or_raises_nrt_error(obj: Any) -> None:
    try:
        nrt = NodeResourceTopology.from_dict(obj)
    except NRTError as err:
        assert isinstance(err, InvalidInput) and "NodeResourceTopology" in str(err)
    else:
        nrt.numa_zones()
        _ = nrt.topology_manager, nrt.fingerprint
        NodeResourceTopology.from_dict(nrt.to_dict())


def test_an_integer_string_of_thousands_of_digits_is_an_nrt_error_not_a_crash() -> None:
    """Found by the mutation fuzzer: Python refuses to convert strings of more than 4300 digits (ValueError), so a
    cost or zone id far beyond int64 must be refused before any conversion."""
    zones = [{**VALID_NRT["zones"][0], "costs": [{"name": "node-1", "value": "9" * 4400}]}]
    try:
        NodeResourceTopology.from_dict({**VALID_NRT, "zones": zones})
    except NRTError as err:
        assert "out of range" in str(err) and len(str(err)) < 300
    else:
        raise AssertionError("a cost beyond int64 must be refused")
    long_id = {**VALID_NRT, "zones": [{**VALID_NRT["zones"][1], "name": "node-" + "1" * 4400}]}
    assert NodeResourceTopology.from_dict(long_id).numa_zones() == []  # not a NUMA zone name, as upstream's Atoi


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_any_value_as_an_nrt_parses_or_raises_nrt_error(obj: Any) -> None:
    with contextlib.suppress(NRTError):
        NodeResourceTopology.from_dict(obj)


@settings(max_examples=500, deadline=None)
@given(mutations(VALID_POD))
def test_a_mutated_pod_parses_or_raises_pod_error(obj: Any) -> None:
    try:
        pod = Pod.from_manifest(obj)
    except PodError as err:
        assert isinstance(err, InvalidInput) and ("pod" in str(err).lower() or "Pod" in str(err))
    else:
        _ = pod.qos, pod.effective_request, pod.requested_names, pod.key


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_any_value_as_a_pod_parses_or_raises_pod_error(obj: Any) -> None:
    with contextlib.suppress(PodError):
        Pod.from_manifest(obj)
