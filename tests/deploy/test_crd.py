"""The NodeResourceTopology CRD generated from knuma's models is the upstream CRD, schema for schema."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from knuma.api.crd import CRD_NAME, nrt_crd, openapi_schema
from knuma.api.nrt import NodeResourceTopology, ResourceInfo, Zone
from knuma.testing.apiserver import apiserver_in_thread

#: The CRD as k8stopologyawareschedwg/noderesourcetopology-api publishes it (v1alpha1 + v1alpha2); the upstream
#: deployer embeds the same file.
UPSTREAM = Path(__file__).parents[1] / "local" / "apiserver" / "manifests" / "nrt-crd.yaml"


def _schema_only(node: Any) -> Any:
    """Drop descriptions (documentation, not validation) and order `required` lists."""
    if isinstance(node, dict):
        out = {k: _schema_only(v) for k, v in node.items() if k != "description"}
        if isinstance(out.get("required"), list):
            out["required"] = sorted(out["required"])
        return out
    if isinstance(node, list):
        return [_schema_only(v) for v in node]
    return node


def upstream() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(UPSTREAM.read_text())
    return crd


def test_identity_scope_and_versions_match_upstream() -> None:
    ours, theirs = nrt_crd(), upstream()
    assert ours["metadata"]["name"] == theirs["metadata"]["name"] == CRD_NAME
    assert ours["spec"]["names"] == theirs["spec"]["names"]
    assert ours["spec"]["names"]["shortNames"] == ["node-res-topo"]
    assert ours["spec"]["scope"] == theirs["spec"]["scope"] == "Cluster"
    flags = {v["name"]: (v["served"], v["storage"]) for v in ours["spec"]["versions"]}
    assert flags == {"v1alpha1": (True, False), "v1alpha2": (True, True)}
    assert flags == {v["name"]: (v["served"], v["storage"]) for v in theirs["spec"]["versions"]}
    assert ours["metadata"]["annotations"] == {
        "api-approved.kubernetes.io": theirs["metadata"]["annotations"]["api-approved.kubernetes.io"]
    }


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
def test_schema_equals_upstream(version: str) -> None:
    def schema(crd: dict[str, Any]) -> Any:
        found = next(v for v in crd["spec"]["versions"] if v["name"] == version)
        return _schema_only(found["schema"]["openAPIV3Schema"])

    assert schema(nrt_crd()) == schema(upstream())


def test_schema_follows_the_models() -> None:
    """Every model field is in the schema under its JSON name (metadata fields excepted)."""
    zone = openapi_schema(Zone)
    assert set(zone["properties"]) == {"name", "type", "parent", "costs", "attributes", "resources"}
    info = openapi_schema(ResourceInfo)
    assert set(info["properties"]) == {f.name for f in dataclasses.fields(ResourceInfo)}
    assert info["properties"]["capacity"]["x-kubernetes-int-or-string"] is True
    root = openapi_schema(NodeResourceTopology)
    assert set(root["properties"]) == {"zones", "attributes", "topologyPolicies"}


def test_unsupported_field_types_are_named() -> None:
    @dataclasses.dataclass
    class Odd:
        ratio: float

    with pytest.raises(TypeError, match=r"Odd\.ratio: no CRD schema for type"):
        openapi_schema(Odd)


def test_every_call_returns_a_fresh_copy() -> None:
    first = nrt_crd()
    first["spec"]["versions"].clear()
    assert len(nrt_crd()["spec"]["versions"]) == 2


def test_objects_the_models_write_are_valid_for_the_crd(tmp_path: Path) -> None:
    """Round trip through a real API server that validates against the generated schema."""
    nrt = NodeResourceTopology(
        name="node-a",
        zones=(Zone("node-0", costs={"node-0": 10}, resources=(ResourceInfo("cpu", 4000, 3000, 2000),)),),
        attributes={"topologyManagerPolicy": "single-numa-node"},
    )
    with apiserver_in_thread(tmp_path) as api:
        client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        crd: Any = CustomResourceDefinition.from_dict(nrt_crd())
        client.create(crd)
        kind = create_global_resource(
            "topology.node.k8s.io", "v1alpha2", "NodeResourceTopology", "noderesourcetopologies"
        )
        client.create(kind.from_dict(nrt.to_dict()))
        stored = NodeResourceTopology.from_dict(dict(client.get(kind, "node-a")))
        assert stored.zones == nrt.zones and stored.attributes == nrt.attributes
        bad = nrt.to_dict()
        bad["zones"][0]["resources"][0]["capacity"] = "lots"
        bad["metadata"]["name"] = "node-b"
        with pytest.raises(ApiError, match="capacity"):
            client.create(kind.from_dict(bad))
        client.close()
