"""Decoding request bodies (JSON and YAML) within bounds, so that no single request can stall or break the server.

Why: the server runs every request on one event loop. A 409-byte YAML document with 7 levels of 10 aliases
(the "billion laughs" class, CVE-2019-11253 in kube-apiserver) decodes to a tree PyYAML shares by reference, but
whatever walks it afterwards (validation, copying, storing) expands it to 10^7 nodes: seconds of stall and a 131 MB
object. Deeply nested JSON (hundreds of levels) makes the recursive code paths raise `RecursionError` (a 500 and a
log flood). So every body is decoded here, then walked once, iteratively, with a budget:

- nesting deeper than `MAX_DEPTH` levels -> 400 BadRequest (kube-apiserver's decoders refuse very deep documents too);
- more than `MAX_DECODED_BYTES` of decoded content (aliases expanded, counted as JSON would print it) -> 413
  RequestEntityTooLarge, like a body over the 3 MiB request limit.

The walk stops as soon as a budget is exceeded, so refusing a bomb costs about as much as accepting a large valid
body. The same bounds apply to server-side apply configurations and patches.

Numbers must be finite, as kube-apiserver's decoders require: `NaN`, `Infinity` and `-Infinity` are not JSON (Go's
`encoding/json`, which `sigs.k8s.io/json` derives from, stops at the `N`), a number beyond float64 (`1e400`) does not
unmarshal, and YAML's `.nan` / `.inf` fail the YAML-to-JSON conversion (`json.Marshal`: unsupported value). Python's
`json` would accept all of them and print them back as invalid JSON, so they are a 400 here; every stored object is
then plain JSON, which lets the watch encoder (`store.WatchEvent.encode`) use msgspec.
"""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

from knuma.errors import InvalidInput
from knuma.local.apiserver import errors

#: kube-apiserver's `MaxRequestBodyBytes` (3 MiB): a decoded body may not be larger than a raw one may.
MAX_DECODED_BYTES = 3 * 1024 * 1024
#: Deeper than any real object (a CRD embedding a PodTemplateSpec schema is about 30 levels deep), and shallow enough
#: for the recursive validation, pruning, patching and copying code to stay far from Python's recursion limit.
MAX_DEPTH = 200


def too_large(what: str) -> errors.ApiError:
    return errors.ApiError(
        413,
        "RequestEntityTooLarge",
        f"the {what} is too large once decoded: more than {MAX_DECODED_BYTES} bytes (YAML aliases count every time "
        "they are used)",
    )


def too_deep(what: str) -> errors.ApiError:
    return errors.bad_request(f"the {what} is nested more than {MAX_DEPTH} levels deep")


def _scalar_size(value: Any) -> int:
    return len(value) + 2 if isinstance(value, str) else 8


def not_finite(what: str, value: object) -> errors.ApiError:
    return errors.bad_request(f"the {what} holds {value}, which is not a JSON number (numbers must be finite)")


def _refuse_constant(text: str) -> float:
    """`json.loads`' hook for `NaN`, `Infinity` and `-Infinity`, which are not JSON."""
    raise ValueError(f"{text} is not a JSON value (numbers must be finite)")


def _finite_float(text: str) -> float:
    """`json.loads`' hook for a number with a fraction or exponent: beyond float64 (`1e400`) is an error, as Go's
    `strconv.ParseFloat` range error is for kube-apiserver."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range (numbers must be finite)")
    return value


def check_bounds(value: Any, what: str = "request body") -> None:
    """Raise 400/413 when `value` is nested too deeply or too large with every shared node counted as often as it is
    used. Each distinct container is measured once (YAML aliases decode to shared objects, so memoizing by identity
    keeps this linear in the document, not in its expansion); a container that contains itself is refused."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (size in bytes, height in levels)
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    keep: list[Any] = []  # keeps measured containers alive, so their ids stay unique while measuring
    if isinstance(value, float) and not math.isfinite(value):
        raise not_finite(what, value)
    while stack:
        item, children_done = stack.pop()
        if not isinstance(item, dict | list):
            continue
        key = id(item)
        if not children_done:
            if key in measured:
                continue
            if key in open_ids:
                raise errors.bad_request(f"the {what} refers to itself (a recursive YAML alias)")
            open_ids.add(key)
            stack.append((item, True))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, False) for child in children if isinstance(child, dict | list))
            continue
        open_ids.discard(key)
        children = item.values() if isinstance(item, dict) else item
        size = 2 + len(item)
        height = 1
        for child in children:
            if isinstance(child, dict | list):
                child_size, child_height = measured[id(child)]
            else:
                if isinstance(child, float) and not math.isfinite(child):
                    raise not_finite(what, child)
                child_size, child_height = _scalar_size(child), 0
            size += child_size
            height = max(height, child_height + 1)
        if isinstance(item, dict):
            size += sum(len(k) + 3 if isinstance(k, str) else 8 for k in item)
        if height > MAX_DEPTH:
            raise too_deep(what)
        if size > MAX_DECODED_BYTES:
            raise too_large(what)
        measured[key] = (size, height)
        keep.append(item)


def check_depth(value: Any, what: str = "request body") -> None:
    """Raise 400 when `value` is nested more than `MAX_DEPTH` levels (enough for JSON, which cannot share nodes:
    its decoded size is bounded by the raw body's)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise too_deep(what)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def check_finite(value: Any, what: str) -> None:
    """Raise 400 when `value` holds a number that is not finite (for documents not decoded here, e.g. `--load`
    manifests)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise not_finite(what, item)


MAX_INTEGER_DIGITS = 4300
"""Python's own limit on converting digits to an int (`sys.get_int_max_str_digits`); no Go integer type comes near
(int64 has 19 digits), so the message says what is wrong instead of Python's advice to raise the limit."""


def _bounded_int(text: str) -> int:
    """`json.loads`' hook for an integer."""
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise ValueError(f"a number of {digits} digits is out of range (at most int64, 19 digits)")
    return int(text)


def decode_json(raw: bytes, what: str = "request body") -> Any:
    """JSON within bounds; a syntax error or too deep a document is a 400 naming `what`."""
    try:
        value = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise too_deep(what) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding {what} as JSON: {exc}") from exc
    if isinstance(value, dict | list):
        check_depth(value, what)
    return value


class MergeKeyBomb(InvalidInput):
    """YAML merge keys that would multiply beyond the decoded-size budget (answered 413)."""


class _BoundedLoader(yaml.SafeLoader):
    """`SafeLoader` whose merge keys (`<<: *a`) cannot multiply: PyYAML flattens merges by copying the merged pairs
    into each mapping node, so merges of merges grow exponentially before any dict removes duplicates."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        super().flatten_mapping(node)
        if len(node.value) > MAX_DECODED_BYTES // 8:
            raise MergeKeyBomb


def decode_yaml(raw: bytes, what: str = "request body") -> Any:
    """YAML (one document, safe types only) within bounds; errors are 400, expansion beyond the budget 413."""
    try:
        value = yaml.load(raw.decode(), Loader=_BoundedLoader)
    except MergeKeyBomb:
        raise too_large(what) from None
    except RecursionError:
        raise too_deep(what) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding {what} as YAML: {exc}") from exc
    check_bounds(value, what)
    return value
