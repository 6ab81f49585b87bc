"""Reservations: what a bound pod takes from a node's NUMA zones before the exporter's next NRT shows it.

NRT data lags: between a bind and the next published NodeResourceTopology, the zones still look free, and a second
pod placed on them is rejected by the kubelet (`TopologyAffinityError`). So the scheduler subtracts every pod the NRT
does not yet account for, on the zones the kubelet model predicts (not on every zone, as upstream's overreserve cache
does), and drops the reservation once an NRT reflects the pod.

"Reflects" is decided with the pod fingerprint the exporter publishes (`nodeTopologyPodsFingerprint`, pfp0v001 over
the pods it listed from the kubelet): the scheduler looks for the set of pods that produces the published value among
the plausible ones (the pods already reflected, plus the pending pods in bind order). All functions here are pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.fingerprint import Method, compute
from knuma.api.pod import Pod
from knuma.api.resources import CPU, is_numa_affine
from knuma.topology.kubelet import admit, kubelet_view
from knuma.topology.node import NodeTopology, is_device

__all__ = [
    "Reconciled",
    "apply_pod",
    "fingerprint_method",
    "holds_exclusive_resources",
    "reconcile",
    "take_everywhere",
]


def apply_pod(pod: Pod, topology: NodeTopology) -> NodeTopology:
    """The zones after the kubelet admits `pod`; if the model says it would not fit, take its request from every zone
    that reports the resource (pessimistic: we do not know where the kubelet put it), without the requests DRA backs
    (`kubelet_view`)."""
    admission = admit(pod, topology)
    if admission.admitted:
        return admission.node
    return take_everywhere(kubelet_view(pod).effective_request, topology)


def take_everywhere(request: Mapping[str, int], topology: NodeTopology) -> NodeTopology:
    """The zones with `request` taken from every zone that reports the resource (clamped at 0): wherever the kubelet
    put the pod, the result holds no more than the node has left."""
    available = {z.id: dict(z.available) for z in topology.zones}
    for zone in available.values():
        for name, amount in request.items():
            if name in zone:
                zone[name] = max(0, zone[name] - amount)
    return topology.with_available(available)


def holds_exclusive_resources(pod: Pod, topology: NodeTopology | None = None) -> bool:
    """Whether the kubelet pins NUMA resources for `pod` (and the exporter's `with-exclusive-resources` fingerprint
    counts it): exclusive CPUs of a Guaranteed pod with an integral CPU request, memory or hugepages pinned by the
    memory manager (when the node's zones report them), or NUMA-local devices."""
    for container in pod.all_containers:
        for name, amount in container.requests.items():
            if not amount:
                continue
            if is_device(name):
                return True
            if not pod.pinned_by_managers:
                continue
            if name == CPU and amount % 1000 == 0:
                return True
            if name != CPU and is_numa_affine(name) and topology is not None and topology.memory_managed(name):
                return True
    return False


@dataclass(frozen=True)
class Reconciled:
    """The outcome of matching a published fingerprint: which pods the NRT reflects and which stay reserved."""

    reflected: frozenset[str]
    pending: tuple[str, ...]


def reconcile(
    fingerprint: str,
    *,
    reflected: Iterable[str],
    pending: Sequence[str],
    started: Iterable[str] = (),
    gone: Iterable[str] = (),
    names: dict[str, tuple[str, str]],
) -> Reconciled | None:
    """Find the pod set behind `fingerprint`, or None when no plausible set produces it.

    Candidates, most likely first: every pod (the NRT is up to date); the reflected pods plus those the kubelet has
    started; the reflected pods plus each prefix of the pending ones in bind order (the kubelet admits in roughly that
    order). Pods deleted since the last match (`gone`) may or may not still be listed by the kubelet, so each candidate
    is tried with and without them. `names` maps a pod key to its (namespace, name).
    """
    base = [key for key in reflected if key in names]
    gone_keys = [key for key in gone if key in names]
    started_set = set(started)
    candidates: list[tuple[frozenset[str], tuple[str, ...]]] = [(frozenset([*base, *pending]), ())]
    running = [key for key in pending if key in started_set]
    if running:
        candidates.append((frozenset([*base, *running]), tuple(k for k in pending if k not in started_set)))
    candidates.extend((frozenset([*base, *pending[:k]]), tuple(pending[k:])) for k in range(len(pending)))
    seen: set[frozenset[str]] = set()
    for keys, still_pending in candidates:
        for with_gone in (keys, keys | frozenset(gone_keys)) if gone_keys else (keys,):
            if with_gone in seen:
                continue
            seen.add(with_gone)
            if compute(names[key] for key in with_gone) == fingerprint:
                return Reconciled(keys, still_pending)
    return None


def fingerprint_method(raw: str) -> Method:
    """The NRT's `nodeTopologyPodsFingerprintMethod`; absent means RTE's default (`with-exclusive-resources`)."""
    try:
        return Method.parse(raw) if raw else Method.WITH_EXCLUSIVE_RESOURCES
    except ValueError:
        return Method.WITH_EXCLUSIVE_RESOURCES
