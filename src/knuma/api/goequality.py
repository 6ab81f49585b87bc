"""`apiequality.Semantic.DeepEqual` on API objects as JSON: what kube-apiserver compares when it decides whether an
update changed a field it may not (`ValidatePodUpdate`, the resize subresource's checks).

kube-apiserver compares Go structs (`third_party/forked/golang/reflect/deep_equal.go`, `deepValueEqual`), decoded from
the JSON, so equal JSON is not the test:

- a plain field absent and its zero value are the same struct (`hostNetwork: false`, `ports: []`, `image: ""`);
- a nil slice or map equals an empty one (`equateNilAndEmpty`);
- a pointer field is nil when absent, and nil differs from a pointer to a zero value: `automountServiceAccountToken:
  false` is a change from no value, as is `securityContext: {}` on a container;
- `resource.Quantity` compares by value (`Semantic`'s equality function): `1` equals `1000m`.

`semantic` turns a value into a form Python's `==` compares that way, reading which fields are pointers from
`knuma.api.gostructs` (generated from `k8s.io/api`'s Go declarations). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knuma.api.gostructs import POD_SPEC, STRUCTS
from knuma.quantity import QuantityError, parse_quantity

__all__ = ["POD_SPEC", "semantic"]

_RESOURCE_LISTS = frozenset({"requests", "limits", "overhead", "capacity", "allocatable"})
"""Keys whose values are `ResourceList`s (quantities by name), compared by value."""
_ZERO: tuple[Any, ...] = (None, False, 0, "", [], {})


def semantic(value: Any, struct: str | None = None, key: str = "") -> Any:
    """`value` as `Semantic.DeepEqual` sees it, when it is a `struct` (a `STRUCTS` name, e.g. `POD_SPEC`; None for a
    value of a type the table does not hold, whose zero-valued fields are then all taken for plain ones): absent and
    zero-valued plain fields dropped, pointer fields kept unless absent or null, quantities by value. `key` is the
    field holding `value` (a resource list's quantities are compared by value)."""
    if isinstance(value, Mapping):
        fields = STRUCTS.get(struct) if struct is not None else None
        out = {}
        for name, item in value.items():
            name = str(name)
            if key in _RESOURCE_LISTS and isinstance(item, str | int | float) and not isinstance(item, bool):
                item = _nanos(item)
            pointer, inner = fields.get(name, (False, None)) if fields is not None else (False, None)
            normalized = semantic(item, inner, name)
            if normalized is not None if pointer else normalized not in _ZERO:
                out[name] = normalized
        return out
    if isinstance(value, list):
        return [semantic(item, struct) for item in value]
    return value


def _nanos(value: str | int | float) -> Any:
    try:
        return ("quantity", parse_quantity(value).nanos)
    except (QuantityError, ValueError):
        return value
