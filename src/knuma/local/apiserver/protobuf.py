"""Decoding the Kubernetes protobuf encoding for the simple kinds kubectl's generators send that way.

`kubectl create namespace|configmap|secret|serviceaccount|priorityclass|poddisruptionbudget` POST
`application/vnd.kubernetes.protobuf` bodies, and `kubectl drain` sends its DeleteOptions and Evictions that way (none
of them fall back to JSON on 415). The envelope is the magic `k8s\\x00` followed by a `runtime.Unknown` message whose
`raw` field holds the object; the fields below are the protobuf field numbers of `k8s.io/api/core/v1`,
`k8s.io/api/scheduling/v1`, `k8s.io/api/policy/v1`, `apimachinery/pkg/apis/meta/v1` and `apimachinery/pkg/util/intstr`
`generated.proto`. Other kinds answer 415 with a hint to use `-f` (JSON/YAML).
"""

from __future__ import annotations

import base64

from knuma.api.types import JsonObj
from knuma.local.apiserver.errors import ApiError, bad_request

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# field number -> (json name, type); type: "string", "bytes", "int", "int32" (negative values sign-extended), "bool",
# "strings" (repeated string),
# "map" (string->string), "bytesmap" (string->bytes, base64 in JSON), a message name, or "[]" + message name.
Schema = dict[int, tuple[str, str]]

MESSAGES: dict[str, Schema] = {
    "ObjectMeta": {
        1: ("name", "string"),
        2: ("generateName", "string"),
        3: ("namespace", "string"),
        5: ("uid", "string"),
        6: ("resourceVersion", "string"),
        11: ("labels", "map"),
        12: ("annotations", "map"),
        13: ("ownerReferences", "[]OwnerReference"),
        14: ("finalizers", "strings"),
    },
    "OwnerReference": {
        1: ("kind", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
        5: ("apiVersion", "string"),
        6: ("controller", "bool"),
        7: ("blockOwnerDeletion", "bool"),
    },
    "ObjectReference": {
        1: ("kind", "string"),
        2: ("namespace", "string"),
        3: ("name", "string"),
        5: ("apiVersion", "string"),
    },
    "LocalObjectReference": {1: ("name", "string")},
    "NamespaceSpec": {1: ("finalizers", "strings")},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int"),
        2: ("preconditions", "Preconditions"),
        3: ("orphanDependents", "bool"),
        4: ("propagationPolicy", "string"),
        5: ("dryRun", "strings"),
    },
    "NamespaceStatus": {1: ("phase", "string")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "bytesmap"),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "bytesmap"),
        3: ("type", "string"),
        4: ("stringData", "map"),
        5: ("immutable", "bool"),
    },
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta"),
        2: ("secrets", "[]ObjectReference"),
        3: ("imagePullSecrets", "[]LocalObjectReference"),
        4: ("automountServiceAccountToken", "bool"),
    },
    "PriorityClass": {
        1: ("metadata", "ObjectMeta"),
        2: ("value", "int32"),
        3: ("globalDefault", "bool"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "string"),
    },
    "LabelSelectorRequirement": {1: ("key", "string"), 2: ("operator", "string"), 3: ("values", "strings")},
    "LabelSelector": {1: ("matchLabels", "map"), 2: ("matchExpressions", "[]LabelSelectorRequirement")},
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "intorstring"),
        2: ("selector", "LabelSelector"),
        3: ("maxUnavailable", "intorstring"),
        4: ("unhealthyPodEvictionPolicy", "string"),
    },
    "PodDisruptionBudget": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodDisruptionBudgetSpec")},
    "Eviction": {1: ("metadata", "ObjectMeta"), 2: ("deleteOptions", "DeleteOptions")},
}
SUPPORTED_KINDS = frozenset(
    {
        "Namespace",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "PriorityClass",
        "PodDisruptionBudget",
        "DeleteOptions",
        "Eviction",
    }
)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise bad_request("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message; varints as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise bad_request(f"unsupported protobuf wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise bad_request("malformed protobuf: expected a string")
    return value.decode()


def decode_message(data: bytes, name: str) -> JsonObj:
    schema = MESSAGES[name]
    out: JsonObj = {}
    for number, value in fields(data):
        if number not in schema:
            continue
        key, type_ = schema[number]
        if type_ == "string":
            text = _text(value)
            if text:  # gogo-protobuf always emits strings; JSON omits empty ones
                out[key] = text
        elif type_ == "bool":
            out[key] = bool(value)
        elif type_ == "int":
            out[key] = int(value) if isinstance(value, int) else 0
        elif type_ == "int32":  # a negative int32 is sent as its 64-bit two's complement
            number_value = int(value) if isinstance(value, int) else 0
            out[key] = number_value - (1 << 64) if number_value >= 1 << 63 else number_value
        elif type_ == "intorstring":  # intstr.IntOrString: type (0 int, 1 string), intVal, strVal
            parts = dict(fields(value if isinstance(value, bytes) else b""))
            if parts.get(1, 0) == 1:
                out[key] = _text(parts.get(3, b""))
            else:
                raw_count = parts.get(2, 0)
                count = raw_count if isinstance(raw_count, int) else 0
                out[key] = count - (1 << 64) if count >= 1 << 63 else count  # int32, sign-extended
        elif type_ == "strings":
            out.setdefault(key, []).append(_text(value))
        elif type_ in ("map", "bytesmap"):
            entry = dict(fields(value if isinstance(value, bytes) else b""))
            raw = entry.get(2, b"")
            raw_bytes = raw if isinstance(raw, bytes) else b""
            text = base64.b64encode(raw_bytes).decode() if type_ == "bytesmap" else raw_bytes.decode()
            out.setdefault(key, {})[_text(entry.get(1, b""))] = text
        elif type_.startswith("[]"):
            out.setdefault(key, []).append(decode_message(value if isinstance(value, bytes) else b"", type_[2:]))
        else:
            out[key] = decode_message(value if isinstance(value, bytes) else b"", type_)
    return out


def decode(body: bytes) -> JsonObj:
    """A Kubernetes protobuf request body as the equivalent JSON object."""
    if not body.startswith(MAGIC):
        raise bad_request("protobuf body does not start with the k8s magic prefix")
    unknown = dict(fields(body[len(MAGIC) :]))
    meta_raw = unknown.get(1, b"")
    type_meta = dict(fields(meta_raw if isinstance(meta_raw, bytes) else b""))
    api_version = _text(type_meta.get(1, b""))
    kind = _text(type_meta.get(2, b""))
    if kind not in SUPPORTED_KINDS:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"knuma apiserver decodes protobuf only for {', '.join(sorted(SUPPORTED_KINDS))}; "
            f"send {kind or 'this object'} as JSON or YAML (for example `kubectl create -f` / `kubectl apply -f`)",
        )
    raw = unknown.get(2, b"")
    obj = decode_message(raw if isinstance(raw, bytes) else b"", kind)
    return {"apiVersion": api_version, "kind": kind, **obj}
