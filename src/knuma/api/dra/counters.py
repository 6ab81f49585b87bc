"""Shared counters of partitionable devices (`resource.k8s.io/v1` `CounterSet` and `DeviceCounterConsumption`).

A driver that can hand out a device whole or in partitions (a GPU, or its MIG slices) publishes what they share as
counter sets in a ResourceSlice of the pool (`spec.sharedCounters`: e.g. set `gpu-0` with `memory: 80Gi` and
`slices: 7`), and each device says what it draws from them (`consumesCounters`: the whole GPU all of it, a 1g slice
`memory: 10Gi, slices: 1`). The allocator may give out devices only while their draws fit in what is left
(`knuma.devices.counters`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.dra.fields import FieldErrors, items, mapping
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["CounterSet", "parse_counter_sets"]

COUNTERS_MAX = 32
"""Counters per set (`ResourceSliceMaxCountersPerCounterSet`)."""


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A named set of counters: the amounts a pool shares (`sharedCounters`), or what one device draws from the set
    of that name (`consumesCounters`)."""

    name: str
    counters: Mapping[str, Quantity]


def parse_counter_sets(
    raw: object, path: str, errors: FieldErrors, name_key: str, limit: int
) -> tuple[CounterSet, ...]:
    """`sharedCounters` (`name_key` "name") or `consumesCounters` (`name_key` "counterSet"): a list of
    `{<name_key>: ..., counters: {<counter>: {value: <quantity>}}}`, each name once."""
    out: list[CounterSet] = []
    seen: set[str] = set()
    for i, entry in enumerate(items(raw, path, errors, limit)):
        where = f"{path}[{i}]"
        body = mapping(entry, where, errors)
        name = errors.check_name(f"{where}.{name_key}", body.get(name_key), rule="label")
        if name and name in seen:
            errors.duplicate(f"{where}.{name_key}", name)
        seen.add(name or "")
        counters: dict[str, Quantity] = {}
        raw_counters = mapping(body.get("counters"), f"{where}.counters", errors)
        if not raw_counters:
            errors.required(f"{where}.counters")
        if len(raw_counters) > COUNTERS_MAX:
            errors.too_many(f"{where}.counters", len(raw_counters), COUNTERS_MAX)
        for key, value in raw_counters.items():
            counter_path = f"{where}.counters[{key}]"
            errors.check_name(counter_path, key, rule="label")
            raw_value: Any = value.get("value") if isinstance(value, Mapping) else None
            if raw_value is None:
                errors.required(f"{counter_path}.value")
                continue
            try:
                counters[str(key)] = parse_quantity(raw_value)
            except QuantityError as err:
                errors.invalid(f"{counter_path}.value", raw_value, str(err))
        if name:
            out.append(CounterSet(name, counters))
    return tuple(out)
