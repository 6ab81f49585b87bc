"""Built-in kinds are decoded and validated as kube-apiserver does: malformed quantities and wrong types are 400s,
unknown fields follow `fieldValidation` (Strict: 400; Warn, the default: `Warning` header; Ignore: silent), both
drop the field, and resource requirements are checked with kube-apiserver's 422 messages. Real upstream manifests
are accepted, and the project's decoding agrees with kubernetes-validate's strict upstream schemas on them and on
their mutations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from knuma.deploy.options import Component, DeployOptions
from knuma.deploy.render import render
from knuma.local.apiserver import fieldschema
from knuma.local.apiserver.fieldschema_gen import KUBERNETES_VERSION
from knuma.local.apiserver.fieldschema_gen import render as regenerate

from .conftest import Http, Kubectl, pod

UPSTREAM = Path(__file__).resolve().parents[2] / "fixtures" / "upstream-manifests"
SAMPLES = sorted(UPSTREAM.glob("*.yaml"))


def _gvk(obj: dict[str, Any]) -> tuple[str, str, str]:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    return group, version, str(obj["kind"])


def decode(obj: dict[str, Any]) -> fieldschema.Decoded:
    return fieldschema.decode(*_gvk(obj), copy.deepcopy(obj))


def upstream_rejects(obj: dict[str, Any]) -> bool:
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError:
        return True
    return False


def test_the_field_tree_is_regenerated_from_the_upstream_definitions() -> None:
    """The packaged data is what `python -m knuma.local.apiserver.fieldschema_gen` makes from kubernetes-validate."""
    assert fieldschema.DATA.read_bytes() == regenerate()


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]
    found: list[dict[str, Any]] = spec["containers"]
    return found


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_upstream_manifests_are_accepted_and_mutations_rejected_like_upstream(path: Path) -> None:
    obj = yaml.safe_load(path.read_text())
    accepted = decode(obj)
    assert (accepted.unknown, accepted.errors) == ([], []), path.name
    assert accepted.obj == obj
    assert not upstream_rejects(obj)

    typo = copy.deepcopy(obj)
    container = containers(typo)[0]
    container["resource"] = container.pop("resources", {"limits": {"cpu": "1"}})
    assert decode(typo).unknown == [f"{_container_path(typo)}.resource"]
    assert upstream_rejects(typo)

    wrong_type = copy.deepcopy(obj)
    containers(wrong_type)[0]["image"] = 3
    assert [e for e in decode(wrong_type).errors if "image" in e and "cannot unmarshal number" in e]
    assert upstream_rejects(wrong_type)


def _container_path(obj: dict[str, Any]) -> str:
    return "spec.template.spec.containers[0]" if "template" in obj["spec"] else "spec.containers[0]"


def test_the_stacks_own_manifests_decode_cleanly() -> None:
    for obj in render(list(Component), DeployOptions()):
        if fieldschema.has_schema(*_gvk(obj)):
            result = decode(obj)
            assert (result.unknown, result.errors) == ([], []), f"{obj['kind']} {obj['metadata']['name']}"


def test_quantities_are_checked_where_upstream_has_none() -> None:
    """kubernetes-validate's schema lets any string be a Quantity; kube-apiserver's decoder does not."""
    bad = pod("q")
    bad["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2x", "memory": "1Gi"}}
    assert not upstream_rejects(bad)
    errors = decode(bad).errors
    assert errors == [f'{fieldschema.QUANTITY_MESSAGE} (spec.containers[0].resources.limits.cpu: "2x")']


@pytest.mark.parametrize(
    ("kind_path", "value", "width"),
    [
        ("spec.replicas", 2**40, "int32"),
        ("spec.replicas", 2**31, "int32"),
        ("spec.replicas", -(2**31) - 1, "int32"),
        ("spec.template.spec.activeDeadlineSeconds", 2**63, "int64"),
        ("spec.template.spec.containers[0].ports[0].containerPort", 2**40, "int32"),
    ],
)
def test_integers_beyond_their_go_type_are_refused(kind_path: str, value: int, width: str) -> None:
    """kube-apiserver decodes into Go integers: 2^40 replicas do not fit an int32 (stored, the ReplicaSet controller
    would create pods without end); the largest value that fits is accepted."""
    deployment = _deployment()
    _set(deployment, kind_path, value)
    expected = f"json: cannot unmarshal number {value} into field {kind_path} of type {width}"
    assert decode(deployment).errors == [expected]
    bits = 32 if width == "int32" else 64
    _set(deployment, kind_path, 2 ** (bits - 1) - 1)
    assert decode(deployment).errors == []


def _deployment() -> dict[str, Any]:
    template = pod("web")
    template["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template},
    }


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.replace("[0]", ".0").split(".")
    cur: Any = obj
    for part in parts[:-1]:
        cur = cur[int(part)] if part.isdigit() else cur[part]
    cur[parts[-1]] = value


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("", None),
        ("aGVsbG8=", None),
        ("aGVs\nbG8=", None),
        ("YQ==", None),
        ("dGhpcyBpcyBhI@HRlc3Qgc3RyaW5nLg==", 13),  # Go's CorruptInputError example
        ("aGVsb?8=", 5),  # decodeQuantum's own example of a corrupt quantum
        ("not base64!", 3),
        ("abc", 0),  # a quantum cut short without padding
        ("YQ=", 3),  # "==" expected, input ended
        ("YQ==x", 4),  # garbage after the padding
        ("Y===", 1),
    ],
)
def test_base64_is_decoded_as_gos_standard_encoding(text: str, offset: int | None) -> None:
    assert fieldschema.base64_error_offset(text) == offset
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"key": text}}
    expected = [] if offset is None else [f"illegal base64 data at input byte {offset} (data.key)"]
    assert decode(secret).errors == expected


def test_kubectl_sees_kube_apiservers_answers(kubectl: Kubectl, http_client: Http) -> None:
    bad_quantity = pod("bad-quantity")
    bad_quantity["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2x"}}
    refused = kubectl("apply", "-f", "-", stdin=json.dumps(bad_quantity), check=False)
    assert refused.returncode == 1
    assert 'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression' in (
        refused.stderr
    )
    assert 'spec.containers[0].resources.limits.cpu: "2x"' in refused.stderr

    typo = pod("typo")
    typo["spec"]["containers"][0]["resource"] = {"limits": {"cpu": "2"}}
    strict = kubectl("apply", "-f", "-", stdin=json.dumps(typo), check=False)
    assert strict.returncode == 1
    assert 'strict decoding error: unknown field "spec.containers[0].resource"' in strict.stderr
    ignored = kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(typo))
    assert "Warning" not in ignored.stderr
    stored = json.loads(kubectl("get", "pod", "typo", "-o", "json").stdout)
    assert "resource" not in stored["spec"]["containers"][0]  # dropped, as kube-apiserver's decoder drops it

    warned = http_client.post(
        "/api/v1/namespaces/default/pods?fieldValidation=Warn", {**typo, "metadata": {"name": "w"}}
    )
    assert warned.status == 201
    assert warned.headers["warning"] == '299 - "unknown field \\"spec.containers[0].resource\\""'
    default = http_client.post("/api/v1/namespaces/default/pods", {**typo, "metadata": {"name": "d"}})
    assert default.status == 201 and "warning" in default.headers
    wrong = http_client.post("/api/v1/namespaces/default/pods?fieldValidation=Sometimes", pod("x"))
    assert wrong.status == 400 and "supported values" in wrong.json["message"]

    over = pod("over")
    over["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "3", "memory": "-1"}}
    invalid = kubectl("apply", "-f", "-", stdin=json.dumps(over), check=False)
    assert invalid.returncode == 1
    assert 'The Pod "over" is invalid' in invalid.stderr
    assert (
        'spec.containers[0].resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2'
        in (invalid.stderr)
    )
    assert 'spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0' in (
        invalid.stderr
    )
    huge = _deployment()
    huge["spec"]["replicas"] = 2**40
    refused_replicas = kubectl("apply", "-f", "-", stdin=json.dumps(huge), check=False)
    assert refused_replicas.returncode == 1
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 1099511627776 '
        "into field spec.replicas of type int32" in refused_replicas.stderr
    )
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "hunter2!"}}
    not_base64 = http_client.post("/api/v1/namespaces/default/secrets", secret)
    assert not_base64.status == 400
    assert not_base64.json["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 7 (data.password)'
    )
    gpu = pod("gpu")
    gpu["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "1"}}
    no_limit = http_client.post("/api/v1/namespaces/default/pods", gpu)
    assert no_limit.status == 422
    assert no_limit.json["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "field": "spec.containers[0].resources.limits",
        "message": "Required value: Limit must be set for non overcommitable resources",
    }


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_dra_objects_are_decoded_with_the_v1_field_tree() -> None:
    """`resource.k8s.io/v1` is 1.34's: the served version's definitions cover it, so a typo in a claim is an unknown
    field as on kube-apiserver, and every DRA object the examples hold decodes cleanly."""
    seen = 0
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if isinstance(obj, dict) and str(obj.get("apiVersion")) == "resource.k8s.io/v1":
                assert fieldschema.has_schema(*_gvk(obj)), obj["kind"]
                result = decode(obj)
                assert (result.unknown, result.errors) == ([], []), f"{path.name}: {obj['kind']}"
                assert not upstream_rejects(obj), f"{path.name}: {obj['kind']}"
                seen += 1
    assert seen >= 5
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClasName": "gpu.example.com"}}]}},
    }
    assert decode(claim).unknown == ["spec.devices.requests[0].exactly.deviceClasName"]
    assert upstream_rejects(claim)


def test_names_kube_apiserver_refuses_are_422_and_nothing_is_stored(http_client: Http) -> None:
    """Container names (DNS labels), `nodeName` (a DNS subdomain), container resource names and Secret keys, checked
    as `ValidatePodSpec` / `ValidateSecret` check them; a Deployment's template is a pod spec too."""
    cases = {
        "spec.containers[0].name": pod("upper", containers=[{"name": "App_1", "image": "x"}]),
        "spec.nodeName": pod("bad-node", nodeName="Bad Node!"),
        "spec.containers[0].resources.requests[cpuu]": pod(
            "typo", containers=[{"name": "app", "image": "x", "resources": {"requests": {"cpuu": "1"}}}]
        ),
    }
    for field, body in cases.items():
        reply = http_client.post("/api/v1/namespaces/default/pods", body)
        assert reply.status == 422, (field, reply.body[:300])
        assert reply.json["details"]["causes"][0]["field"] == field
        assert http_client.get(f"/api/v1/namespaces/default/pods/{body['metadata']['name']}").status == 404
    template = _deployment()
    template["spec"]["template"]["spec"]["containers"][0]["name"] = "Web"
    refused = http_client.post("/apis/apps/v1/namespaces/default/deployments", template)
    assert refused.status == 422
    assert refused.json["details"]["causes"][0]["field"] == "spec.template.spec.containers[0].name"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keys"}, "stringData": {"bogus key!": "x"}}
    bad_key = http_client.post("/api/v1/namespaces/default/secrets", secret)
    assert bad_key.status == 422
    assert bad_key.json["details"]["causes"][0]["field"] == "data[bogus key!]"
