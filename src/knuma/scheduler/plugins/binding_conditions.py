"""Device binding conditions (KEP-5007, `DRADeviceBindingConditions`, beta and on by default from Kubernetes 1.35):
a device that must be made ready for the pod before it runs (attached to the node over a fabric, a CXL memory pool
mapped to the host) publishes `bindingConditions` and `bindingFailureConditions`; the allocation copies them into
each result, the device's driver sets them in the claim's `status.devices[].conditions`, and the scheduler binds the
pod only once every binding condition of every device is True.

Follows `isClaimReadyForBinding`, `isClaimTimeout` and `isPodReadyForBinding` of kube-scheduler's DynamicResources
(`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`): a device whose status is not reported yet
is not ready; a binding failure condition that is True fails the claim, with the condition's reason and message; a
claim not ready `bindingTimeout` after its `allocationTimestamp` has timed out.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.kube.events import parse_timestamp

__all__ = ["Binding", "BindingState", "binding_state", "pods_binding_state"]


class Binding(enum.Enum):
    READY = "ready"
    WAITING = "waiting"
    FAILED = "failed"
    TIMED_OUT = "timed out"


@dataclass(frozen=True)
class BindingState:
    state: Binding
    reason: str = ""
    """For FAILED and TIMED_OUT: what to tell the user (upstream's error text)."""


def binding_state(claim: ResourceClaim, timeout: float, now: datetime | None = None) -> BindingState:
    """Whether `claim`'s allocated devices are ready for the pod to be bound (`isClaimReadyForBinding`, then
    `isClaimTimeout` for one that is not)."""
    allocation = claim.allocation
    if allocation is None:
        return BindingState(Binding.WAITING)
    for result in allocation.results:
        if not result.binding_conditions:
            continue
        status = next(
            (d for d in claim.devices if (d.driver, d.pool, d.device) == (result.driver, result.pool, result.device)),
            None,
        )
        ready = status is not None
        if status is not None:
            for kind in result.binding_failure_conditions:
                failed = status.condition(kind)
                if failed is not None and failed.status == "True":
                    quoted = json.dumps(failed.message)  # Go's %q
                    why = f"claim {claim.name} binding failed: reason={failed.reason}, message={quoted}"
                    return BindingState(Binding.FAILED, why)
            ready = all(
                (c := status.condition(kind)) is not None and c.status == "True" for kind in result.binding_conditions
            )
        if not ready:
            since = parse_timestamp(allocation.allocation_timestamp)
            if since is not None and (now or datetime.now(UTC)).timestamp() > since.timestamp() + timeout:
                return BindingState(Binding.TIMED_OUT, f"claim {claim.name} binding timeout")
            return BindingState(Binding.WAITING)
    return BindingState(Binding.READY)


def pods_binding_state(claims: Iterable[ResourceClaim], timeout: float, now: datetime | None = None) -> BindingState:
    """The first claim of a pod that is not ready (`isPodReadyForBinding`), or READY."""
    for claim in claims:
        found = binding_state(claim, timeout, now)
        if found.state is not Binding.READY:
            return found
    return BindingState(Binding.READY)
