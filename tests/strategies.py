"""Hypothesis strategies shared by the parser fuzz tests: hostile JSON/YAML-like values and mutations of a valid
document, so every parser is shown to either accept its input or raise knuma's own error naming the place."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

#: Scalars a YAML or JSON document can hold, biased towards the values that broke parsers before: huge and
#: non-finite numbers, other scripts' digits, superscripts, empty strings, booleans where numbers are expected.
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "0", "-1", "1.5", "٣", "²", "1e400", "9" * 4400, "0-20000000", "node-3", "cpu", "Node"]),
    st.text(max_size=12),
)

JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            out += _paths(item, (*prefix, n))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.copy(value)
    out[path[0]] = _replace(value[path[0]], path[1:], new)
    return out


@st.composite
def mutations(draw: st.DrawFn, valid: Any, rounds: int = 3) -> Any:
    """`valid` with up to `rounds` of its fields (at any depth) replaced by hostile values or removed."""
    doc = copy.deepcopy(valid)
    for _ in range(draw(st.integers(min_value=1, max_value=rounds))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if path and draw(st.booleans()) and isinstance(_get(doc, path[:-1]), dict):
            parent = copy.copy(_get(doc, path[:-1]))
            parent.pop(path[-1], None)
            doc = _replace(doc, path[:-1], parent)
        else:
            doc = _replace(doc, path, draw(JSON_VALUES))
    return doc


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value
