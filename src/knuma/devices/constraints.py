"""`matchAttribute` constraints: the attribute lookup and the values a constraint may take.

Lookup follows upstream's `lookupAttribute`: the fully qualified name first, then the bare identifier when the domain
is the device's driver. Values compare by type and value (an int 1 never equals a string "1"; versions compare by
their exact string, as semver 2.0.0 text is canonical). A list attribute (DRAListTypeAttributes) matches when the
lists of all devices intersect, so a constraint's candidate values are the union of the elements; choosing one value
v and keeping the devices whose attribute contains v is exact for both scalars and lists.
"""

from __future__ import annotations

from knuma.api.dra.device import DeviceAttribute
from knuma.devices.pools import Candidate

__all__ = ["attribute_of", "constraint_values"]

AttributeKey = tuple[str, object]
"""(type family, value): `("int", 3)`, `("string", "pci0")`, `("version", "1.2.3")`, `("bool", True)`."""


_FAMILY = {
    "int": "int",
    "ints": "int",
    "bool": "bool",
    "bools": "bool",
    "string": "string",
    "strings": "string",
    "version": "version",
    "versions": "version",
}


def attribute_of(candidate: Candidate, name: str) -> DeviceAttribute | None:
    attributes = candidate.device.attributes
    found = attributes.get(name)
    if found is not None:
        return found
    domain, slash, ident = name.partition("/")
    if slash and domain == candidate.driver:
        return attributes.get(ident)
    return None


def constraint_values(candidate: Candidate, name: str) -> frozenset[AttributeKey]:
    """The values the device offers for `name` (empty when it lacks the attribute)."""
    attribute = attribute_of(candidate, name)
    if attribute is None:
        return frozenset()
    family = _FAMILY[attribute.type]
    return frozenset((family, str(v) if family == "version" else v) for v in attribute.values)
