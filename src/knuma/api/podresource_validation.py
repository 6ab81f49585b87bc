"""kube-apiserver's checks of a pod's resource requirements: each container's (`ValidateContainerResourceRequirements`)
and the pod-level ones (`validatePodResources`: supported names, requirement rules, consistency with the containers),
and their immutability on update (`ValidatePodUpdate`).

Resource requirements decide the QoS class and what the scheduler and the kubelet's managers reserve, so a pod
kube-apiserver would refuse for them (a request above its limit, pod-level resources below what its containers ask)
must not be scheduled by knuma's API server either. Pure: works on the raw spec mapping, before any other parsing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from knuma.api.goequality import POD_SPEC, semantic
from knuma.api.names import qualified_name_errors
from knuma.api.podvalidation import (
    FIELD_VALUE_FORBIDDEN,
    FIELD_VALUE_INVALID,
    FIELD_VALUE_NOT_SUPPORTED,
    FIELD_VALUE_REQUIRED,
    FieldError,
)
from knuma.api.resources import CPU, HUGEPAGES_PREFIX, MEMORY, is_extended_resource_name, is_hugepages, is_native
from knuma.quantity import Quantity, QuantityError, parse_quantity

__all__ = [
    "SUPPORTED_POD_LEVEL_RESOURCES",
    "UPDATABLE_POD_SPEC_FIELDS",
    "aggregate_container_requests",
    "is_supported_pod_level_resource",
    "overcommit_allowed",
    "pod_resources_errors",
    "pod_resources_update_errors",
    "resource_requirement_errors",
]

SUPPORTED_POD_LEVEL_RESOURCES = (CPU, HUGEPAGES_PREFIX, MEMORY)
"""`sets.List(resourcehelper.SupportedPodLevelResources())` (1.34): cpu, memory and every hugepages size, listed
sorted as the `Unsupported value` message lists them."""
STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
"""`helper.IsStandardResourceName`'s set (`pkg/apis/core/helper/helpers.go`); hugepages sizes are standard too."""
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
"""`helper.IsStandardContainerResourceName`'s set, hugepages sizes besides."""
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)
"""`updatablePodSpecFields` of `pkg/apis/core/validation/validation.go`, as `ValidatePodUpdate`'s message lists them."""


def overcommit_allowed(name: str) -> bool:
    """`helper.IsOvercommitAllowed`: native resources other than hugepages (extended resources such as GPUs and
    hugepages need a request equal to their limit)."""
    return is_native(name) and not is_hugepages(name)


def _quantities(raw: Any) -> dict[str, Quantity]:
    """Parsable quantities of a ResourceList (malformed ones are the decoder's business, a 400 before this)."""
    found: dict[str, Quantity] = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            try:
                found[str(name)] = parse_quantity(value)
            except (QuantityError, ValueError):
                continue
    return found


NameCheck = Callable[[str, str], list[FieldError]]
"""A resource-name check (`resourceNameFn`): the name and its field path in, the errors out."""


def _requirements_errors(resources: Mapping[str, Any], base: str, name_errors: NameCheck | None) -> list[FieldError]:
    """`validateResourceRequirements` (`pkg/apis/core/validation/validation.go`), shared by containers and the pod:
    each limit (its name, a non-negative quantity, a whole number of pages for hugepages), then each request (the
    same, and at most its limit, equal to it for resources that cannot be overcommitted, which also need a limit),
    then `HugePages require cpu or memory`. `name_errors` is the `resourceNameFn` (`validatePodResourceName` at pod
    level, `validateContainerResourceName` for a container)."""
    errors: list[FieldError] = []
    limits = _quantities(resources.get("limits"))
    requests = _quantities(resources.get("requests"))
    cpu_or_memory = hugepages = False
    for field, quantities in (("limits", limits), ("requests", requests)):
        for name, quantity in quantities.items():
            path = f"{base}.{field}[{name}]"
            if name_errors is not None:
                errors += name_errors(name, path)
            if quantity.nanos < 0:
                errors.append(
                    FieldError(
                        FIELD_VALUE_INVALID, path, f'Invalid value: "{quantity}": must be greater than or equal to 0'
                    )
                )
            if field == "requests":
                errors += _request_limit_errors(name, quantity, limits.get(name), base)
            if is_hugepages(name):
                hugepages = True
                errors += _hugepage_value_errors(name, quantity, path)
            cpu_or_memory = cpu_or_memory or name in (CPU, MEMORY)
    if hugepages and not cpu_or_memory:
        errors.append(FieldError(FIELD_VALUE_FORBIDDEN, base, "Forbidden: HugePages require cpu or memory"))
    return errors


def _request_limit_errors(name: str, request: Quantity, limit: Quantity | None, base: str) -> list[FieldError]:
    """A request against its limit: `validateResourceRequirements`' `Check that request <= limit`."""
    overcommit = overcommit_allowed(name)
    if limit is not None and not overcommit and request.nanos != limit.nanos:
        message = f'Invalid value: "{request}": must be equal to {name} limit of {limit}'
        return [FieldError(FIELD_VALUE_INVALID, f"{base}.requests", message)]
    if limit is not None and request.nanos > limit.nanos:
        message = f'Invalid value: "{request}": must be less than or equal to {name} limit of {limit}'
        return [FieldError(FIELD_VALUE_INVALID, f"{base}.requests", message)]
    if limit is None and not overcommit:
        message = "Required value: Limit must be set for non overcommitable resources"
        return [FieldError(FIELD_VALUE_REQUIRED, f"{base}.limits", message)]
    return []


def _hugepage_value_errors(name: str, quantity: Quantity, path: str) -> list[FieldError]:
    """`validateResourceQuantityHugePageValue`: a whole number of pages (`IsHugePageResourceValueDivisible`: the size
    after `hugepages-` is a positive whole quantity that divides the value); new objects never get the
    `AllowIndivisibleHugePagesValues` leniency, which only spares objects stored before the check existed."""
    try:
        page = parse_quantity(name.removeprefix(HUGEPAGES_PREFIX))
    except QuantityError:
        page = None
    if page is not None and page.nanos > 0 and page.milli_value() % 1000 == 0 and quantity.value() % page.value() == 0:
        return []
    return [
        FieldError(
            FIELD_VALUE_INVALID,
            path,
            f'Invalid value: "{quantity}": {quantity} is not positive integer multiple of {name}',
        )
    ]


def resource_requirement_errors(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """`ValidateContainerResourceRequirements` (`pkg/apis/core/validation/validation.go`) for every container: no
    negative quantity; a request at most its limit, and equal to it for resources that cannot be overcommitted
    (hugepages, extended resources such as GPUs), which also need a limit; whole hugepages, which need cpu or memory
    beside them. Messages as kube-apiserver's:
    `spec.containers[0].resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2`."""
    errors: list[FieldError] = []
    for key in ("initContainers", "containers"):
        raw = spec.get(key) or []
        if not isinstance(raw, list):
            continue
        for index, container in enumerate(raw):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if isinstance(resources, Mapping):
                errors += _requirements_errors(
                    resources, f"{path}.{key}[{index}].resources", _container_resource_name_errors
                )
    return errors


def _resource_name_messages(name: str) -> list[str]:
    """`validateResourceName`: a qualified name (`IsQualifiedName`), and without a domain a standard one."""
    messages = qualified_name_errors(name)
    if not messages and "/" not in name and name not in STANDARD_RESOURCES and not _quota_hugepages(name):
        messages.append("must be a standard resource type or fully qualified")
    return messages


def _container_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """`validateContainerResourceName`: `validateResourceName`, then without a domain one of `cpu`, `memory`,
    `ephemeral-storage` or a hugepages size (`IsStandardContainerResourceName`: `requests.cpu` is a quota's name, not a
    container's), with a domain an extended resource name unless the domain is `kubernetes.io/`. A misspelt `cpuu`
    would otherwise be an unknown extended resource no node has: the pod would stay Pending for ever."""
    messages = _resource_name_messages(name)
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
            messages.append("must be a standard resource for containers")
    elif not is_native(name) and not is_extended_resource_name(name):
        messages.append("doesn't follow extended resource name standard")
    shown = json.dumps(name, ensure_ascii=False)
    return [FieldError(FIELD_VALUE_INVALID, path, f"Invalid value: {shown}: {message}") for message in messages]


def is_supported_pod_level_resource(name: str) -> bool:
    """`resourcehelper.IsSupportedPodLevelResource` (1.34): cpu, memory and hugepages."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def _pod_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """`validatePodResourceName`: a valid resource name (`validateResourceName`), then one pod-level resources
    support."""
    shown = json.dumps(name, ensure_ascii=False)
    invalid = _resource_name_messages(name)
    if invalid:
        return [FieldError(FIELD_VALUE_INVALID, path, f"Invalid value: {shown}: {message}") for message in invalid]
    if is_supported_pod_level_resource(name):
        return []
    listed = ", ".join(f'"{n}"' for n in SUPPORTED_POD_LEVEL_RESOURCES)
    return [FieldError(FIELD_VALUE_NOT_SUPPORTED, path, f"Unsupported value: {shown}: supported values: {listed}")]


def _quota_hugepages(name: str) -> bool:
    """`helper.IsQuotaHugePageResourceName`: `hugepages-<size>` or `requests.hugepages-<size>`."""
    return is_hugepages(name) or name.startswith("requests." + HUGEPAGES_PREFIX)


def _add(total: dict[str, Quantity], more: Mapping[str, Quantity]) -> None:
    """`addResourceList`: a sum keeps the format of its first operand (Go `Quantity.Add`; a zero takes the other's)."""
    for name, quantity in more.items():
        have = total.get(name)
        if have is None:
            total[name] = quantity
        else:
            total[name] = Quantity(have.nanos + quantity.nanos, have.format if have.nanos else quantity.format)


def _max(total: dict[str, Quantity], more: Mapping[str, Quantity]) -> None:
    """`maxResourceList`: the larger quantity, as written."""
    for name, quantity in more.items():
        have = total.get(name)
        if have is None or quantity.nanos > have.nanos:
            total[name] = quantity


def _containers(spec: Mapping[str, Any], key: str) -> Iterable[Mapping[str, Any]]:
    raw = spec.get(key) or []
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def _requirement(container: Mapping[str, Any], field: str) -> dict[str, Quantity]:
    resources = container.get("resources")
    return _quantities(resources.get(field)) if isinstance(resources, Mapping) else {}


def aggregate_container_requests(spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """`resourcehelper.AggregateContainerRequests` (no status, no overhead) over the raw spec: app containers and
    sidecars (`restartPolicy: Always` init containers) add up; each other init container needs its own request plus
    the sidecars started before it; the larger of the two per resource."""
    total: dict[str, Quantity] = {}
    for container in _containers(spec, "containers"):
        _add(total, _requirement(container, "requests"))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in _containers(spec, "initContainers"):
        requests = _requirement(container, "requests")
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            need = dict(sidecars)
        else:
            need = {}
            _add(need, requests)
            _add(need, sidecars)
        _max(init_peak, need)
    _max(total, init_peak)
    return total


def _consistency_errors(spec: Mapping[str, Any], resources: Mapping[str, Any], base: str) -> list[FieldError]:
    """`validatePodResourceConsistency` (1.34): a pod-level request (0 when the pod states none) at least the
    containers' aggregate request of each resource pod-level resources support (1.34.0 skips the others,
    kubernetes#132551), then each app container's limit at most the pod-level limit of the same resource. Go walks
    the aggregate in map order; knuma reports resources sorted by name."""
    errors: list[FieldError] = []
    requests = _quantities(resources.get("requests"))
    for name, aggregate in sorted(aggregate_container_requests(spec).items()):
        if not is_supported_pod_level_resource(name):
            continue
        stated = requests.get(name, Quantity(0))
        if aggregate.nanos > stated.nanos:
            message = (
                f'Invalid value: "{stated}": must be greater than or equal to aggregate container requests of '
                f"{aggregate}"
            )
            errors.append(FieldError(FIELD_VALUE_INVALID, f"{base}.requests[{name}]", message))
    limits = _quantities(resources.get("limits"))
    for index, container in enumerate(spec.get("containers") or []):
        if not isinstance(container, Mapping):
            continue
        for name, limit in _requirement(container, "limits").items():
            pod_limit = limits.get(name)
            if pod_limit is not None and limit.nanos > pod_limit.nanos:
                message = f'Invalid value: "{limit}": must be less than or equal to pod limits of {pod_limit}'
                errors.append(FieldError(FIELD_VALUE_INVALID, f"{base}.containers[{index}][{name}].limits", message))
    return errors


def pod_resources_errors(spec: Mapping[str, Any], path: str = "spec", *, consistency: bool = True) -> list[FieldError]:
    """Pod-level resources (`spec.resources`, KEP-2837, beta and on by default in 1.34) as `ValidatePodSpec` checks
    them (`validatePodResources`, after the containers): no `claims`; the requirements themselves
    (`validatePodResourceRequirements`: only cpu, memory and hugepages, then the container rules); their consistency
    with the containers (`validatePodResourceConsistency`).

    kube-apiserver validates a Pod after its defaulting (`SetDefaults_Pod`: container requests from limits, then
    `defaultHugePagePodLimits` and `defaultPodRequests`), and a workload's pod template as written; give `spec` in the
    form the caller's kind is validated in. Messages as kube-apiserver's:
    `spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests
    of 2`."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return []
    base = f"{path}.resources"
    errors: list[FieldError] = []
    if resources.get("claims") is not None:
        errors.append(
            FieldError(
                FIELD_VALUE_FORBIDDEN, f"{base}.claims", "Forbidden: claims cannot be set for Resources at pod-level"
            )
        )
    errors += _requirements_errors(resources, base, _pod_resource_name_errors)
    if consistency:
        errors += _consistency_errors(spec, resources, base)
    return errors


def pod_resources_update_errors(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[FieldError]:
    """`ValidatePodUpdate` (1.34) allows a pod's spec to change only in `UPDATABLE_POD_SPEC_FIELDS`, so pod-level
    resources are immutable (in-place resize of them is 1.35's alpha `InPlacePodLevelResourcesVerticalScaling`; the
    1.34 `resize` subresource refuses pods with pod-level resources). kube-apiserver's message ends with a `cmp.Diff`
    of the two Go specs; knuma's names the old and the new `spec.resources` instead."""
    old, new = old_spec.get("resources"), new_spec.get("resources")
    if semantic({"resources": old}, POD_SPEC) == semantic({"resources": new}, POD_SPEC):
        return []
    message = (
        f"Forbidden: pod updates may not change fields other than {','.join(UPDATABLE_POD_SPEC_FIELDS)}\n"
        f"spec.resources: {json.dumps(old, sort_keys=True)} -> {json.dumps(new, sort_keys=True)}"
    )
    return [FieldError(FIELD_VALUE_FORBIDDEN, "spec", message)]
