"""CRD validation rules (`x-kubernetes-validations`) evaluated by a real `knuma apiserver` over HTTP, with
kube-apiserver's error wording: plain rules, messages, `messageExpression`, `reason` and `fieldPath`, transition rules
(`oldSelf`) through properties and map lists only, evaluation errors, rules that do not compile (CRD refused), and
knuma's own NUMAResourcesOperator CRD, whose only-one-name rule is CEL."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from knuma.api.numaresources import API_VERSION, OPERATOR_NAME
from knuma.api.numaresources_crd import operator_crd
from knuma.local.apiserver import celrules
from tests.local.apiserver.conftest import Http
from tests.local.apiserver.test_crd import CRDS, widget_crd

GADGETS = "/apis/example.knuma.io/v1/namespaces/default/gadgets"


def gadget_crd() -> dict[str, Any]:
    crd = widget_crd()
    crd["metadata"]["name"] = "gadgets.example.knuma.io"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["x-kubernetes-validations"] = [{"rule": "self.metadata.name.startsWith('g-')", "message": "names start g-"}]
    root["properties"]["spec"] = {
        "type": "object",
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "size": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "size may not shrink"}],
            },
            "color": {"type": "string"},
            "divisor": {"type": "integer"},
            "endpoint": {"type": "string", "x-kubernetes-validations": [{"rule": "url(self).getHost() != ''"}]},
            "tags": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.value == oldSelf.value", "message": "tag values are immutable"}
                    ],
                },
            },
            "notes": {
                "type": "array",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self.lowerAscii() == self", "message": "notes are lower case"},
                        {"rule": "self == oldSelf", "message": "never correlated: notes is not a map list"},
                    ],
                },
            },
        },
        "x-kubernetes-validations": [
            {
                "rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                "messageExpression": "'min ' + string(self.min) + ' exceeds max ' + string(self.max)",
            },
            {
                "rule": "!has(self.color) || self.color != 'black'",
                "message": "black is reserved",
                "reason": "FieldValueForbidden",
                "fieldPath": ".color",
            },
            {"rule": "!has(self.divisor) || 12 / self.divisor >= 1"},
        ],
    }
    return crd


def gadget(name: str = "g-1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.knuma.io/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert (reply.status, reply.json["reason"]) == (422, "Invalid"), reply.body
    return [(c["reason"], c["field"], c["message"]) for c in reply.json["details"]["causes"]]


@pytest.fixture
def gadgets(http_client: Http) -> Http:
    created = http_client.post(CRDS, gadget_crd())
    assert created.status == 201, created.body
    return http_client


def test_a_valid_object_passes_every_rule(gadgets: Http) -> None:
    reply = gadgets.post(GADGETS, gadget(min=1, max=3, size=2, color="red", divisor=4, notes=["ok"]))
    assert reply.status == 201, reply.body


def test_rules_at_the_root_and_in_spec_word_their_causes_as_kube_apiserver(gadgets: Http) -> None:
    reply = gadgets.post(GADGETS, gadget("bad-name", min=5, max=2, color="black"))
    assert causes(reply) == [
        ("FieldValueInvalid", "<nil>", 'Invalid value: "object": names start g-'),
        ("FieldValueInvalid", "spec", 'Invalid value: "object": min 5 exceeds max 2'),
        ("FieldValueForbidden", "spec.color", "Forbidden: black is reserved"),
    ]
    assert reply.json["message"].startswith('Gadget.example.knuma.io "bad-name" is invalid: ')
    assert gadgets.get(f"{GADGETS}/bad-name").status == 404


def test_items_are_checked_one_by_one_with_their_index(gadgets: Http) -> None:
    reply = gadgets.post(GADGETS, gadget(notes=["fine", "Shouting"]))
    assert causes(reply) == [("FieldValueInvalid", "spec.notes[1]", 'Invalid value: "string": notes are lower case')]


def test_an_evaluation_error_names_the_error_and_the_rule(gadgets: Http) -> None:
    reply = gadgets.post(GADGETS, gadget(divisor=0))
    assert causes(reply) == [
        (
            "FieldValueInvalid",
            "spec",
            'Invalid value: "object": division by zero evaluating rule: !has(self.divisor) || 12 / self.divisor >= 1',
        )
    ]


def test_transition_rules_run_on_update_where_the_old_value_correlates(gadgets: Http) -> None:
    created = gadgets.post(GADGETS, gadget(size=3, tags=[{"name": "a", "value": "1"}], notes=["x"]))
    assert created.status == 201, created.body
    current = created.json
    shrunk = copy.deepcopy(current)
    shrunk["spec"]["size"] = 2
    shrunk["spec"]["tags"] = [{"name": "b", "value": "9"}, {"name": "a", "value": "2"}]
    reply = gadgets.put(f"{GADGETS}/g-1", shrunk)
    assert causes(reply) == [
        ("FieldValueInvalid", "spec.size", 'Invalid value: "integer": size may not shrink'),
        ("FieldValueInvalid", "spec.tags[1]", 'Invalid value: "object": tag values are immutable'),
    ]
    grown = copy.deepcopy(current)
    grown["spec"]["size"] = 4
    grown["spec"]["tags"] = [{"name": "b", "value": "9"}, {"name": "a", "value": "1"}]  # a new key has no old value
    grown["spec"]["notes"] = ["y"]  # a plain list does not correlate: its transition rule never runs
    assert gadgets.put(f"{GADGETS}/g-1", grown).status == 200


def test_a_rule_calling_a_function_this_server_lacks_is_a_warning_not_a_rejection(gadgets: Http) -> None:
    reply = gadgets.post(GADGETS, gadget(endpoint="https://example.com/x"))
    assert reply.status == 201, reply.body
    assert "function 'url' is not supported" in reply.headers.get("warning", "")


@pytest.mark.parametrize(
    ("rule", "field", "words"),
    [
        ({"rule": "self.min <="}, "spec.x-kubernetes-validations[0].rule", "compilation failed"),
        ({"rule": "other.min == 1"}, "spec.x-kubernetes-validations[0].rule", "undeclared reference to 'other'"),
        ({"rule": ""}, "spec.x-kubernetes-validations[0].rule", "Required value"),
        ({"rule": "true", "reason": "Nope"}, "spec.x-kubernetes-validations[0].reason", "Unsupported value"),
        (
            {"rule": "true", "messageExpression": "'a' +"},
            "spec.x-kubernetes-validations[0].messageExpression",
            "compilation failed",
        ),
    ],
)
def test_a_crd_whose_rules_do_not_compile_is_refused(
    http_client: Http, rule: dict[str, Any], field: str, words: str
) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [rule]
    reply = http_client.post(CRDS, crd)
    found = causes(reply)
    path = f"spec.versions[0].schema.openAPIV3Schema.properties[{field.split('.', 1)[0]}].{field.split('.', 1)[1]}"
    assert [(f, m) for _, f, m in found if f == path and words in m], found


def test_the_numaresourcesoperator_crd_accepts_only_its_one_name(http_client: Http) -> None:
    assert http_client.post(CRDS, operator_crd()).status == 201
    path = f"/apis/{API_VERSION}/numaresourcesoperators"
    body = {"apiVersion": API_VERSION, "kind": "NUMAResourcesOperator", "spec": {"nodeGroups": []}}
    wrong = http_client.post(path, {**body, "metadata": {"name": "mine"}})
    assert causes(wrong) == [
        ("FieldValueInvalid", "<nil>", f'Invalid value: "object": the only accepted name is {OPERATOR_NAME}')
    ]
    assert http_client.post(path, {**body, "metadata": {"name": OPERATOR_NAME}}).status == 201


def test_the_kubernetes_string_and_list_functions_behave_as_cel_go_documents() -> None:
    """The functions knuma adds to the engine (cel-go's `ext.Strings`, Kubernetes' `library.Lists`)."""
    schema: dict[str, Any] = {"type": "object", "x-kubernetes-validations": []}
    checks = [
        "self.s.lowerAscii() == 'héllo world'",
        "self.s.upperAscii() == 'HéLLO WORLD'",
        "self.s.charAt(1) == 'é' && self.s.charAt(11) == ''",
        "self.s.indexOf('o') == 4 && self.s.indexOf('o', 5) == 7 && self.s.lastIndexOf('o') == 7",
        "self.s.split(' ') == ['Héllo', 'World'] && self.s.split('l', 2) == ['Hé', 'lo World']",
        "self.s.replace('l', 'L', 1) == 'HéLlo World' && self.s.substring(6) == 'World'",
        "'  x '.trim() == 'x' && ['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab'",
        "[1, 2, 2].isSorted() && ![2, 1].isSorted() && [1, 2, 3].sum() == 6",
        "[3, 4].indexOf(4) == 1 && [3, 4].indexOf(5) == -1",
        "quantity('1Gi').isGreaterThan(quantity('1G'))",
    ]
    schema["x-kubernetes-validations"] = [{"rule": rule} for rule in checks]
    verdict = celrules.evaluate(schema, {"metadata": {"name": "x"}, "s": "Héllo World"}, None)
    assert verdict.causes == [] and verdict.warnings == []
    schema["x-kubernetes-validations"] = [{"rule": "self.s.substring(20) == ''"}]
    failed = celrules.evaluate(schema, {"metadata": {"name": "x"}, "s": "short"}, None)
    assert len(failed.causes) == 1 and "index out of range" in failed.causes[0][2]
