"""NodeResourceTopology: reading v1alpha1/v1alpha2, NUMA zone ids, Topology Manager config, writing v1alpha2."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.api.nrt import (
    MAX_ZONE_CPUS,
    NodeResourceTopology,
    NRTError,
    Policy,
    ResourceInfo,
    Scope,
    TopologyManagerConfig,
    Zone,
    legacy_policy_name,
    numa_id_from_zone_name,
)
from knuma.topology.node import NodeTopology


def zone(name: str, *, type: str = "Node", **resources: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type, "resources": []}
    for rname, value in resources.items():
        rname = rname.replace("_", "-").replace("example-com-gpu", "example.com/gpu")
        if isinstance(value, dict):
            out["resources"].append({"name": rname, **value})
        else:
            out["resources"].append({"name": rname, "capacity": value, "allocatable": value, "available": value})
    return out


def nrt(
    zones: list[dict[str, Any]],
    *,
    attributes: dict[str, str] | None = None,
    policies: list[str] | None = None,
    version: str = "v1alpha2",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": f"topology.node.k8s.io/{version}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "worker-1"},
        "zones": zones,
    }
    if attributes is not None:
        out["attributes"] = [{"name": k, "value": v} for k, v in attributes.items()]
    if policies is not None:
        out["topologyPolicies"] = policies
    return out


def config(**kwargs: Any) -> TopologyManagerConfig:
    return NodeResourceTopology.from_dict(nrt([zone("node-0", cpu="4")], **kwargs)).topology_manager


# -- reading ---------------------------------------------------------------------------------------------------------


def test_read_v1alpha2():
    obj = nrt(
        [
            {
                **zone("node-0", cpu="16", memory="64Gi", hugepages_2Mi="1Gi", example_com_gpu="2"),
                "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
                "attributes": [{"name": "cpu.exclusive", "value": "true"}],
            },
            zone("node-1", cpu={"capacity": "16", "allocatable": "14", "available": "3500m"}),
        ],
        attributes={"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"},
    )
    topo = NodeResourceTopology.from_dict(obj)
    assert topo.name == "worker-1"
    assert topo.topology_manager == TopologyManagerConfig(Policy.SINGLE_NUMA_NODE, Scope.POD, 8)
    [(id0, z0), (id1, z1)] = topo.numa_zones()
    assert (id0, id1) == (0, 1)
    assert {r.name: r.available for r in z0.resources} == {
        "cpu": 16000,
        "memory": 64 * 1024**3,
        "hugepages-2Mi": 1024**3,
        "example.com/gpu": 2,
    }
    assert z0.costs == {"node-0": 10, "node-1": 21}
    assert z0.attributes == {"cpu.exclusive": "true"}
    assert z1.resources == (ResourceInfo("cpu", 16000, 14000, 3500),)


def test_read_v1alpha1_with_legacy_policy():
    obj = nrt(
        [zone("node-0", cpu="4"), zone("node-1", cpu="4")], policies=["SingleNUMANodePodLevel"], version="v1alpha1"
    )
    topo = NodeResourceTopology.from_dict(obj)
    assert [i for i, _ in topo.numa_zones()] == [0, 1]
    assert topo.topology_manager == TopologyManagerConfig(Policy.SINGLE_NUMA_NODE, Scope.POD, 8)


def test_missing_or_zero_allocatable_is_accepted():
    obj = nrt(
        [
            zone("node-0", cpu={"capacity": "8", "available": "6"}),
            zone("node-1", cpu={"capacity": "8", "allocatable": "0", "available": "6"}),
            zone("node-2", cpu={"available": "6"}),
        ]
    )
    topo = NodeResourceTopology.from_dict(obj)
    infos = [z.resources[0] for _, z in topo.numa_zones()]
    assert infos == [
        ResourceInfo("cpu", 8000, 0, 6000),
        ResourceInfo("cpu", 8000, 0, 6000),
        ResourceInfo("cpu", 0, 0, 6000),
    ]
    node = NodeTopology.from_nrt(topo)
    assert [z.total("cpu") for z in node.zones] == [8000, 8000, 6000]  # falls back to capacity, then available


@pytest.mark.parametrize(
    ("name", "type_", "expected"),
    [
        ("node-0", "Node", 0),
        ("node-7", "Node", 7),
        ("node-64", "Node", 64),
        ("node-65", "Node", None),  # upstream maxNUMAId = 64
        ("node-1000", "Node", None),
        ("node-03", "Node", 3),  # strconv.Atoi accepts leading zeros...
        ("node-+3", "Node", 3),  # ...and a sign
        ("node--1", "Node", None),
        ("numa-node-0", "Node", None),  # the upstream README's name: skipped
        ("node-", "Node", None),
        ("node-a", "Node", None),
        ("node-1 ", "Node", None),
        ("node-\u0663", "Node", None),  # ARABIC-INDIC DIGIT THREE: not an ASCII digit, Atoi rejects it
        ("Node-0", "Node", None),
        ("node-0", "Socket", None),
        ("node-0", "node", None),
        ("node-0", "", None),
    ],
)
def test_zone_numa_ids(name, type_, expected):
    assert Zone(name, type_).numa_id == expected


def test_other_zones_are_kept_but_ignored():
    obj = nrt([zone("socket-0", type="Socket", cpu="8"), zone("node-2", cpu="4"), zone("node-0", cpu="4")])
    topo = NodeResourceTopology.from_dict(obj)
    assert [z.name for z in topo.zones] == ["socket-0", "node-2", "node-0"]
    assert [i for i, _ in topo.numa_zones()] == [0, 2]  # sorted by id, non-contiguous ids kept
    node = NodeTopology.from_nrt(topo)
    assert node.numa_ids == (0, 2)


def test_numa_id_helper():
    assert numa_id_from_zone_name("node-12") == 12
    assert numa_id_from_zone_name("gpu-0") is None


# -- Topology Manager config -----------------------------------------------------------------------------------------


def test_defaults():
    assert config() == TopologyManagerConfig(Policy.NONE, Scope.CONTAINER, 8)


@pytest.mark.parametrize(
    ("legacy", "policy", "scope"),
    [
        ("SingleNUMANodePodLevel", Policy.SINGLE_NUMA_NODE, Scope.POD),
        ("SingleNUMANodeContainerLevel", Policy.SINGLE_NUMA_NODE, Scope.CONTAINER),
        ("BestEffortPodLevel", Policy.BEST_EFFORT, Scope.POD),
        ("BestEffortContainerLevel", Policy.BEST_EFFORT, Scope.CONTAINER),
        ("RestrictedPodLevel", Policy.RESTRICTED, Scope.POD),
        ("RestrictedContainerLevel", Policy.RESTRICTED, Scope.CONTAINER),
        ("None", Policy.NONE, Scope.CONTAINER),  # bare values map to nothing
        ("BestEffort", Policy.NONE, Scope.CONTAINER),
        ("Restricted", Policy.NONE, Scope.CONTAINER),
        ("single-numa-node", Policy.NONE, Scope.CONTAINER),
        ("garbage", Policy.NONE, Scope.CONTAINER),
    ],
)
def test_legacy_topology_policies(legacy, policy, scope):
    assert config(policies=[legacy]) == TopologyManagerConfig(policy, scope, 8)


def test_only_first_legacy_policy_is_used():
    assert config(policies=["None", "SingleNUMANodePodLevel"]).policy is Policy.NONE
    assert config(policies=["RestrictedPodLevel", "SingleNUMANodeContainerLevel"]) == TopologyManagerConfig(
        Policy.RESTRICTED, Scope.POD, 8
    )


def test_attributes_override_legacy():
    got = config(
        policies=["SingleNUMANodePodLevel"],
        attributes={"topologyManagerPolicy": "restricted"},
    )
    assert got == TopologyManagerConfig(Policy.RESTRICTED, Scope.POD, 8)
    got = config(policies=["SingleNUMANodePodLevel"], attributes={"topologyManagerScope": "container"})
    assert got == TopologyManagerConfig(Policy.SINGLE_NUMA_NODE, Scope.CONTAINER, 8)


@pytest.mark.parametrize("value", ["SingleNUMANode", "Restricted", "single_numa_node", "", " restricted", "bogus"])
def test_invalid_policy_attribute_is_ignored(value):
    got = config(policies=["BestEffortPodLevel"], attributes={"topologyManagerPolicy": value})
    assert got == TopologyManagerConfig(Policy.BEST_EFFORT, Scope.POD, 8)


@pytest.mark.parametrize("value", ["Pod", "POD", "Container", "node", ""])
def test_invalid_scope_attribute_is_ignored(value):
    got = config(policies=["BestEffortPodLevel"], attributes={"topologyManagerScope": value})
    assert got.scope is Scope.POD


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", 2),
        ("16", 16),
        ("1024", 1024),
        ("4096", 1024),  # capped
        ("+16", 16),  # strconv.Atoi accepts a sign
        ("016", 16),
        ("1", 8),  # must be > 1
        ("0", 8),
        ("-4", 8),
        ("abc", 8),
        ("", 8),
        (" 8", 8),
        ("8.0", 8),
        ("\u00b2", 8),  # SUPERSCRIPT TWO: str.isdigit() is true but it is no number
        ("\u0663\u0662", 8),  # Arabic-Indic 32: Python's int() accepts it, Atoi does not
        ("99999999999999999999", 8),  # out of int64 range: Atoi fails
    ],
)
def test_max_numa_nodes_attribute(value, expected):
    assert config(attributes={"topologyManagerMaxNUMANodes": value}).max_numa_nodes == expected


def test_legacy_policy_name():
    assert legacy_policy_name(TopologyManagerConfig(Policy.RESTRICTED, Scope.POD)) == "RestrictedPodLevel"
    assert legacy_policy_name(TopologyManagerConfig()) is None


def test_policy_and_scope_parse_errors_list_choices():
    assert Policy.parse("restricted") is Policy.RESTRICTED
    with pytest.raises(ValueError, match="single-numa-node"):
        Policy.parse("SingleNUMANode")
    with pytest.raises(ValueError, match="'Pod'"):
        Scope.parse("Pod")


# -- fingerprint, node topology ---------------------------------------------------------------------------------------


def test_fingerprint_attribute_then_legacy_annotation():
    obj = nrt([zone("node-0", cpu="4")], attributes={"nodeTopologyPodsFingerprint": "pfp0v001abc"})
    assert NodeResourceTopology.from_dict(obj).fingerprint == "pfp0v001abc"
    obj = nrt([zone("node-0", cpu="4")])
    obj["metadata"]["annotations"] = {"topology.node.k8s.io/fingerprint": "pfp0v001def"}
    assert NodeResourceTopology.from_dict(obj).fingerprint == "pfp0v001def"


def test_node_topology_from_nrt_maps_costs_to_ids():
    z0 = {**zone("node-0", cpu="4"), "costs": [{"name": "node-0", "value": 10}, {"name": "node-2", "value": 21}]}
    z2 = {**zone("node-2", cpu="4"), "costs": [{"name": "node-0", "value": 21}, {"name": "node-2", "value": 10}]}
    obj = nrt([z0, z2], attributes={"topologyManagerOptionPreferClosestNumaNodes": "true"})
    node = NodeTopology.from_nrt(NodeResourceTopology.from_dict(obj))
    assert node.distances == {0: {0: 10, 2: 21}, 2: {0: 21, 2: 10}}
    assert node.prefer_closest


# -- errors ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda o: o.update(apiVersion="topology.node.k8s.io/v1beta1"), "unsupported apiVersion"),
        (lambda o: o.update(apiVersion="v1"), "unsupported apiVersion"),
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o.update(zones="node-0"), "zones must be a list"),
        (lambda o: o["zones"][0]["resources"][0].update(available="lots"), "'lots'"),
        (lambda o: o["zones"][0]["resources"][0].update(available="lots"), "cpu"),
        (lambda o: o["zones"][0].update(costs=[{"name": "node-0"}]), "costs"),
        (lambda o: o["zones"][0].pop("name"), "zone without a name"),
        (lambda o: o.update(attributes=[{"value": "x"}]), "name"),
        # a zone claiming more CPUs than any machine has: the packing score's tables grow with free CPUs
        (lambda o: o["zones"][0]["resources"][0].update(available="1000000000"), "more than any NUMA zone has"),
    ],
)
def test_errors_name_the_field(mutate, message):
    obj = nrt([zone("node-0", cpu="4")])
    mutate(obj)
    with pytest.raises(NRTError, match=message):
        NodeResourceTopology.from_dict(obj)


def test_not_a_mapping():
    with pytest.raises(NRTError):
        NodeResourceTopology.from_dict(["zones"])  # type: ignore[arg-type]


# -- writing ---------------------------------------------------------------------------------------------------------


def test_to_dict_is_v1alpha2_and_sorted():
    obj = nrt(
        [zone("node-10", cpu="2"), zone("node-2", memory="1Gi", cpu="1500m")],
        attributes={"topologyManagerScope": "pod", "topologyManagerPolicy": "restricted"},
        version="v1alpha1",
    )
    out = NodeResourceTopology.from_dict(obj).to_dict()
    assert out["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert out["kind"] == "NodeResourceTopology"
    assert [z["name"] for z in out["zones"]] == ["node-2", "node-10"]
    assert out["zones"][0]["resources"] == [
        {"name": "cpu", "capacity": "1500m", "allocatable": "1500m", "available": "1500m"},
        {"name": "memory", "capacity": "1Gi", "allocatable": "1Gi", "available": "1Gi"},
    ]
    assert out["attributes"] == [
        {"name": "topologyManagerPolicy", "value": "restricted"},
        {"name": "topologyManagerScope", "value": "pod"},
    ]


RESOURCE_NAMES = ["cpu", "memory", "hugepages-2Mi", "hugepages-1Gi", "example.com/gpu", "ephemeral-storage"]


@st.composite
def topologies(draw):
    ids = sorted(draw(st.sets(st.integers(0, 70), min_size=1, max_size=5)))
    zones = []
    for numa_id in ids:
        names = draw(st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, max_size=4))
        top = {"cpu": MAX_ZONE_CPUS * 1000}  # millicores; more is refused as no machine's
        resources = tuple(
            ResourceInfo(n, *draw(st.tuples(*[st.integers(0, top.get(n, 2**40))] * 3))) for n in sorted(names)
        )
        costs = {f"node-{other}": draw(st.integers(10, 255)) for other in ids}
        zones.append(Zone(f"node-{numa_id}", "Node", "", costs, {}, resources))
    attrs = draw(
        st.dictionaries(
            st.sampled_from(["topologyManagerPolicy", "topologyManagerScope", "topologyManagerMaxNUMANodes"]),
            st.sampled_from(["none", "pod", "restricted", "single-numa-node", "16", "x"]),
        )
    )
    policies = tuple(draw(st.lists(st.sampled_from(["SingleNUMANodePodLevel", "None"]), max_size=2)))
    return NodeResourceTopology("worker-1", tuple(zones), attrs, policies)


@settings(max_examples=100, deadline=None)
@given(topo=topologies())
def test_round_trip(topo):
    again = NodeResourceTopology.from_dict(topo.to_dict())
    assert again == topo
    assert again.topology_manager == topo.topology_manager
    assert again.to_dict() == topo.to_dict()
