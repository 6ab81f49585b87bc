"""What a pod's claims ask for, resolved against the DeviceClasses: one `Alternative` per request (or per
sub-request of a `firstAvailable` request), with its class and request selectors compiled.

Checks that upstream's `validateDeviceRequest` and `Allocate` make before searching, with their messages: an unknown
class, admin access outside an allowed namespace, more than 32 devices in one claim
(`AllocationResultsMaxSize`), constraints of an unknown kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.dra.deviceclass import DeviceClass
from knuma.api.dra.requests import ALL, Constraint, ExactRequest
from knuma.api.dra.resourceclaim import ALLOCATION_RESULTS_MAX, ResourceClaim
from knuma.devices.cel import Selector, compile_selector
from knuma.errors import InvalidInput

__all__ = ["Alternative", "ClaimDemand", "DeviceAllocationError", "RequestDemand", "resolve"]


class DeviceAllocationError(InvalidInput):
    """The claims cannot be allocated anywhere as written (upstream: `Allocate` returns an error, not "no fit")."""


@dataclass(frozen=True)
class Alternative:
    request: ExactRequest
    parent: str
    """The request's name (for a sub-request, the name of its `firstAvailable` request)."""
    device_class: DeviceClass
    class_selectors: tuple[Selector, ...]
    selectors: tuple[Selector, ...]

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def all_devices(self) -> bool:
        return self.request.allocation_mode == ALL


@dataclass(frozen=True)
class RequestDemand:
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class ClaimDemand:
    claim: ResourceClaim
    requests: tuple[RequestDemand, ...]
    constraints: tuple[Constraint, ...]

    @property
    def key(self) -> str:
        return self.claim.key


def _compile(expressions: Sequence[str], where: str) -> tuple[Selector, ...]:
    return tuple(compile_selector(e, f"{where}: selector #{i}") for i, e in enumerate(expressions))


def resolve(
    claims: Sequence[ResourceClaim],
    classes: Mapping[str, DeviceClass],
    admin_access_allowed: Callable[[str], bool],
) -> list[ClaimDemand]:
    """Resolve every claim; raise `DeviceAllocationError` (or `CELError`) naming the claim and request."""
    out = []
    for claim in claims:
        requests = []
        minimum = 0
        for request in claim.spec.requests:
            alternatives = []
            for exact in request.alternatives:
                cls = classes.get(exact.device_class_name)
                if cls is None:
                    raise DeviceAllocationError(
                        f"claim {claim.key}, request {exact.name}: could not retrieve device class "
                        f"{exact.device_class_name}: deviceclass.resource.k8s.io {exact.device_class_name!r} not found"
                    )
                if exact.admin_access and not admin_access_allowed(claim.namespace):
                    raise DeviceAllocationError(
                        f"claim {claim.key}, request {exact.name}: admin access to devices requires the "
                        f'`resource.kubernetes.io/admin-access: "true"` label on namespace {claim.namespace}'
                    )
                alternatives.append(
                    Alternative(
                        exact,
                        request.name,
                        cls,
                        _compile(cls.selectors, f"class {cls.name}"),
                        _compile(exact.selectors, f"claim {claim.key}, request {exact.name}"),
                    )
                )
            minimum += min(0 if a.all_devices else a.request.count for a in alternatives)
            requests.append(RequestDemand(request.name, tuple(alternatives)))
        if minimum > ALLOCATION_RESULTS_MAX:
            raise DeviceAllocationError(
                f"claim {claim.key}: number of requested devices {minimum} exceeds the claim limit of "
                f"{ALLOCATION_RESULTS_MAX}"
            )
        out.append(ClaimDemand(claim, tuple(requests), claim.spec.constraints))
    return out
