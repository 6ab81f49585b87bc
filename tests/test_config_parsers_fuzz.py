"""Fuzzing more parsers (issue 18 item 12): durations, the kubelet configuration the exporter reads, and the API
server's body decoder. Any input gives a value or the parser's own error, never another exception."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.duration import DurationError, parse_duration
from knuma.errors import InvalidInput
from knuma.exporter.tmconfig import kubelet_settings
from knuma.local.apiserver import bodies, errors
from tests.strategies import JSON_VALUES, mutations

VALID_KUBELET: dict[str, Any] = {
    "kind": "KubeletConfiguration",
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod",
    "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "8", "prefer-closest-numa-nodes": "true"},
    "cpuManagerPolicy": "static",
    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "memoryManagerPolicy": "Static",
    "reservedSystemCPUs": "0-1",
}


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=20), st.from_regex(r"[0-9.]{0,8}(ns|us|µs|ms|s|m|h){0,3}", fullmatch=True)))
def test_any_text_is_a_duration_or_a_duration_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except DurationError as err:
        assert isinstance(err, InvalidInput)
    else:
        assert seconds == seconds  # not NaN


@settings(max_examples=300, deadline=None)
@given(mutations(VALID_KUBELET))
def test_a_mutated_kubelet_configuration_is_read_or_refused_with_its_path(raw: Any) -> None:
    if not isinstance(raw, dict):
        return
    try:
        kubelet_settings(raw, "kubelet.yaml", "kubelet.yaml: ")
    except InvalidInput as err:
        assert "kubelet.yaml" in str(err)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_any_document_decodes_or_is_a_4xx(value: Any) -> None:
    try:
        text = yaml.safe_dump(value)
    except yaml.YAMLError:
        return
    for decode, raw in ((bodies.decode_yaml, text.encode()), (bodies.decode_json, text.encode())):
        try:
            decode(raw)
        except errors.ApiError as err:
            assert 400 <= err.code < 500


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_are_a_4xx(raw: bytes) -> None:
    for decode in (bodies.decode_yaml, bodies.decode_json):
        try:
            decode(raw)
        except errors.ApiError as err:
            assert 400 <= err.code < 500
