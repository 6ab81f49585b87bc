"""`knuma.api.goequality`: API objects compared as `apiequality.Semantic.DeepEqual` compares the Go structs, with the
pointer table `knuma.api.gostructs` read from upstream's Go declarations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from knuma.api import gostructs_gen
from knuma.api.goequality import POD_SPEC, semantic
from knuma.api.gostructs import STRUCTS
from knuma.api.podresize import pod_resize_errors
from knuma.local.apiserver import fieldschema

EXCERPT = Path(__file__).with_name("data") / "types_excerpt.go"
CORE = "io.k8s.api.core.v1."


def test_the_parser_reads_pointers_inline_structs_lists_and_named_maps() -> None:
    structs = gostructs_gen.parse_structs(EXCERPT.read_text())
    probe = structs["Probe"]
    assert probe["terminationGracePeriodSeconds"] == gostructs_gen.GoField(True, None)  # *int64
    assert probe["periodSeconds"] == gostructs_gen.GoField(False, None)  # int32
    assert probe["exec"] == gostructs_gen.GoField(True, "ExecAction")  # from the inlined ProbeHandler
    assert structs["HTTPGetAction"]["httpHeaders"] == gostructs_gen.GoField(False, "HTTPHeader")  # []HTTPHeader
    assert structs["HTTPGetAction"]["port"] == gostructs_gen.GoField(False, None)  # intstr: another package
    requirements = structs["ResourceRequirements"]
    assert requirements["limits"] == gostructs_gen.GoField(False, None)  # ResourceList: a map of quantities
    assert requirements["claims"] == gostructs_gen.GoField(False, "ResourceClaim")
    assert list(gostructs_gen.reachable(structs, "Probe")) == ["Probe", "ExecAction", "HTTPGetAction", "HTTPHeader"]


def test_the_generated_module_is_what_the_generator_renders_for_its_table() -> None:
    source = Path(gostructs_gen.__file__).with_name("gostructs.py").read_text()
    table = {
        struct: {name: gostructs_gen.GoField(*field) for name, field in fields.items()}
        for struct, fields in STRUCTS.items()
    }
    assert gostructs_gen.render(table, "v0.34.0") == source


def _referenced(node: Any) -> str | None:
    """The definition a property of the OpenAPI field tree holds, directly or as list or map elements."""
    while isinstance(node, dict):
        if "r" in node:
            return str(node["r"])
        node = node.get("l", node.get("m"))
    return None


def test_the_table_agrees_with_the_openapi_definitions() -> None:
    """Two upstream sources, one truth: the Go declarations (pointers) and the OpenAPI definitions (the field tree
    `knuma apiserver` decodes with) name the same fields, and the same struct behind each."""
    with gzip.open(fieldschema.DATA) as raw:
        definitions = json.load(raw)["defs"]
    assert POD_SPEC in STRUCTS and len(STRUCTS) > 90
    for struct, fields in STRUCTS.items():
        properties = definitions[CORE + struct]["p"]
        assert set(fields) == set(properties), struct
        for name, (_, inner) in fields.items():
            referenced = _referenced(properties[name])
            if inner is not None:
                assert referenced == CORE + inner, (struct, name)
            else:
                assert referenced is None or not referenced.startswith(CORE), (struct, name)


@pytest.mark.parametrize(
    ("before", "after", "equal"),
    [
        ({}, {"hostNetwork": False, "volumes": [], "nodeSelector": {}, "hostname": ""}, True),  # plain zero values
        ({}, {"automountServiceAccountToken": False}, False),  # *bool: nil is not false
        ({}, {"automountServiceAccountToken": None}, True),  # null is nil
        ({}, {"securityContext": {}}, False),  # *PodSecurityContext: nil is not an empty struct
        ({"securityContext": {}}, {"securityContext": {"runAsUser": None, "sysctls": []}}, True),
        ({"securityContext": {}}, {"securityContext": {"runAsUser": 0}}, False),  # *int64 inside
        ({"containers": [{"name": "a"}]}, {"containers": [{"name": "a", "ports": [], "stdin": False}]}, True),
        ({"containers": [{"name": "a"}]}, {"containers": [{"name": "a", "restartPolicy": ""}]}, False),  # *string
        (
            {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
            {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1000m"}}}]},
            True,
        ),
        ({"containers": [{"name": "a"}]}, {"containers": [{"name": "a", "resources": {}}]}, True),  # a struct
        ({}, {"resources": {}}, False),  # pod-level: a pointer
    ],
)
def test_a_pod_spec_compares_as_the_go_struct(before: dict[str, Any], after: dict[str, Any], equal: bool) -> None:
    assert (semantic(before, POD_SPEC) == semantic(after, POD_SPEC)) is equal


def test_a_resize_body_with_an_empty_resize_policy_changes_no_init_container() -> None:
    """`resizePolicy: []` is a nil slice to Go: no change to a non-sidecar init container (whose resources a resize
    may not change), where equal JSON would have said there was one."""
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    old = {
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [{"name": "init", "image": "i", "resources": resources}],
            "containers": [{"name": "app", "image": "a", "resources": resources}],
        },
        "status": {"qosClass": "Guaranteed"},
    }
    new = json.loads(json.dumps(old))
    new["spec"]["initContainers"][0]["resizePolicy"] = []
    assert pod_resize_errors(old, new) == []
    new["spec"]["initContainers"][0]["resizePolicy"] = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    assert [e.message for e in pod_resize_errors(old, new)] == [
        "Forbidden: resources for non-sidecar init containers are immutable"
    ]


def test_the_generator_refuses_a_file_it_cannot_use_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gostructs_gen.main([str(tmp_path / "missing.go"), "v0.34.0"]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot read {tmp_path / 'missing.go'}: ")
    not_core = tmp_path / "types.go"
    not_core.write_text(EXCERPT.read_text())  # real declarations, but no PodSpec
    assert gostructs_gen.main([str(not_core), "v0.34.0"]) == 2
    assert "declares no `type PodSpec struct`: give k8s.io/api's core/v1/types.go" in capsys.readouterr().err
    assert gostructs_gen.main([str(not_core)]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m knuma.api.gostructs_gen")
