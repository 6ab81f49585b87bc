"""DeviceTaintRule (`resource.k8s.io/v1alpha3` in Kubernetes 1.34, `v1beta2` from 1.36, cluster-scoped): one taint an
administrator puts on every device its selector matches, as if the driver had published it in the ResourceSlice
(KEP-5055, `DRADeviceTaints`: beta and on by default from 1.36). A `NoSchedule` or `NoExecute` taint keeps the
device from claims that do not tolerate it, e.g. a GPU an administrator takes out for maintenance.

Validation follows `ValidateDeviceTaintRule`: the selector's `driver` and `deviceClassName` are DNS subdomains, `pool`
a pool name, `device` a DNS label, at most 32 CEL `selectors` (v1alpha3; later versions dropped `deviceClassName` and
`selectors`, which knuma still reads); the taint's `key` is a qualified name, `value` a label value, `effect` one of
`NoSchedule`, `NoExecute`, `None`. How a rule selects devices is `knuma.devices.taintrules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.dra.device import TAINT_EFFECTS
from knuma.api.dra.deviceclass import parse_selectors
from knuma.api.dra.fields import FieldErrors, document, mapping, optional_str
from knuma.api.dra.resourceslice import check_pool_name
from knuma.api.taints import Taint

__all__ = ["DeviceTaintRule"]

KIND = "DeviceTaintRule"
LABEL_VALUE_MAX = 63


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    name: str
    taint: Taint
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    device_class_name: str | None = None
    selectors: tuple[str, ...] = ()
    """CEL expressions every selected device must satisfy."""
    selects: bool = True
    """False without a `deviceSelector`: "Without a selector, no devices are matched"."""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DeviceTaintRule:
        errors = FieldErrors()
        obj = document(obj, errors)
        meta = mapping(obj.get("metadata"), "metadata", errors)
        name = errors.check_name("metadata.name", meta.get("name"))
        spec = mapping(obj.get("spec"), "spec", errors)
        raw_selector = spec.get("deviceSelector")
        selector = mapping(raw_selector, "spec.deviceSelector", errors)
        path = "spec.deviceSelector"
        driver = optional_str(selector, "driver", path, errors) or None
        if driver is not None:
            errors.check_name(f"{path}.driver", driver)
        device_class = optional_str(selector, "deviceClassName", path, errors) or None
        if device_class is not None:
            errors.check_name(f"{path}.deviceClassName", device_class)
        pool = optional_str(selector, "pool", path, errors) or None
        if pool is not None:
            check_pool_name(pool, f"{path}.pool", errors)
        device = optional_str(selector, "device", path, errors) or None
        if device is not None:
            errors.check_name(f"{path}.device", device, rule="label")
        selectors = parse_selectors(selector.get("selectors"), f"{path}.selectors", errors)
        taint_raw = spec.get("taint")
        if taint_raw is None:
            errors.required("spec.taint")
        taint = mapping(taint_raw, "spec.taint", errors)
        key = errors.check_qualified_name("spec.taint.key", taint.get("key"))
        value = optional_str(taint, "value", "spec.taint", errors)
        if len(value) > LABEL_VALUE_MAX:
            errors.invalid("spec.taint.value", value, f"must be no more than {LABEL_VALUE_MAX} characters")
        effect = optional_str(taint, "effect", "spec.taint", errors)
        if not effect:
            errors.required("spec.taint.effect")
        elif effect not in TAINT_EFFECTS:
            errors.unsupported("spec.taint.effect", effect, TAINT_EFFECTS)
        errors.raise_if_any(f"{KIND}.resource.k8s.io", name)
        return cls(
            name,
            Taint(key, value, effect),
            driver,
            pool,
            device,
            device_class,
            selectors,
            selects=raw_selector is not None,
        )
