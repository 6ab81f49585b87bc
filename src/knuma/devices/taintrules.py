"""DeviceTaintRules applied to ResourceSlices: the slices as the allocator sees them, each device carrying the taints
of the rules that select it after the ones its driver published (the ResourceSlice tracker's `applyPatches`,
`staging/src/k8s.io/dynamic-resource-allocation/resourceslice/tracker`). The allocator then keeps a tainted device
from requests that do not tolerate its `NoSchedule` / `NoExecute` taints, whichever put it there
(`knuma.devices.filtering`).

A rule selects a device when every criterion it sets holds: its `driver`, `pool` and `device` names, the CEL
selectors of its `deviceClassName` (a class that does not exist selects nothing) and its own `selectors`. A selector
that fails at runtime on a device does not select it (upstream: the device is skipped, with an event). A rule
without a `deviceSelector` selects nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from knuma.api.dra.device import Device
from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.devicetaintrule import DeviceTaintRule
from knuma.api.dra.resourceslice import ResourceSlice
from knuma.devices.cel import CELError, compile_selector, device_environment

__all__ = ["with_taint_rules"]


def with_taint_rules(
    slice_: ResourceSlice, rules: Sequence[DeviceTaintRule], classes: Mapping[str, DeviceClass]
) -> ResourceSlice:
    """`slice_` with the taints of `rules` added to the devices they select (the same object when none applies)."""
    added: dict[int, list[DeviceTaintRule]] = {}
    for rule in rules:
        if not rule.selects:
            continue
        if rule.driver is not None and rule.driver != slice_.driver:
            continue
        if rule.pool is not None and rule.pool != slice_.pool.name:
            continue
        expressions: list[str] = []
        if rule.device_class_name is not None:
            device_class = classes.get(rule.device_class_name)
            if device_class is None:
                continue
            expressions += device_class.selectors
        expressions += rule.selectors
        for index, device in enumerate(slice_.devices):
            if rule.device is not None and rule.device != device.name:
                continue
            if expressions and not _selected(expressions, slice_.driver, device, rule.name):
                continue
            added.setdefault(index, []).append(rule)
    if not added:
        return slice_
    devices = tuple(
        replace(device, taints=(*device.taints, *(r.taint for r in added[i]))) if i in added else device
        for i, device in enumerate(slice_.devices)
    )
    return replace(slice_, devices=devices)


def _selected(expressions: Sequence[str], driver: str, device: Device, rule: str) -> bool:
    environment = device_environment(driver, device)
    try:
        return all(
            compile_selector(expression, f"DeviceTaintRule {rule}").matches(environment, f"DeviceTaintRule {rule}")
            for expression in expressions
        )
    except CELError:
        return False
