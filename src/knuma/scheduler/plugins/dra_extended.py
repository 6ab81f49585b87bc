"""Extended resources backed by DRA (KEP-5004, `DRAExtendedResource`: beta and on by default from Kubernetes 1.36):
a pod asks for `example.com/nic: 1` in its containers' resources, and on a node whose allocatable does not list
`example.com/nic`, the device comes from a DeviceClass that names it, through a ResourceClaim the scheduler writes.

The pure part of kube-scheduler's DynamicResources for it (`pkg/scheduler/framework/plugins/dynamicresources/`):

- `ExtendedResourceMap` is `extendedresourcecache.ExtendedResourceCache`: every class is reachable under
  `deviceclass.resource.kubernetes.io/<class>`, and under its `spec.extendedResourceName`; when several classes name
  the same resource, the newest wins, then the alphabetically lower name (`betterDeviceClass`).
- `dra_requests` is `preFilterExtendedResources`' question (does the pod ask for a mapped resource at all) and
  `filterExtendedResources`' per-node split: a resource the node's allocatable has (a device plugin serves it) stays
  with NodeResourcesFit, one the node lacks and a class maps goes to DRA, one neither serves does not fit.
- `requests_and_mappings` is `createRequestsAndMappings`: one device request per long-lived container (app and
  sidecar) and resource, named `container-<i>-request-<j>`; short-lived init containers reuse the requests of the
  containers after them, then share the largest request they still need.
- `extended_claim` is the claim kube-scheduler keeps in memory until PreBind creates it: owned by the pod (controller),
  annotated `resource.kubernetes.io/extended-resource-claim: "true"`, `generateName` `<pod>-extended-resources-`.

And the kubelet's side, for the NUMA plugin's model of it: `served_on_node` names the resources DRA serves on a node,
`as_admitted` is the pod the kubelet's Topology Manager and device manager see there (without them).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knuma.api.dra.resourceclaim import ResourceClaim
from knuma.api.pod import Container, ContainerKind, Pod, without_requests
from knuma.api.resources import DEVICE_CLASS_RESOURCE_PREFIX, is_dra_extended_resource_name

__all__ = [
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION",
    "ExtendedClaim",
    "ExtendedResourceMap",
    "NodeSplit",
    "as_admitted",
    "dra_requests",
    "extended_claim",
    "owned_extended_claim",
    "requests_and_mappings",
    "served_on_node",
    "split_for_node",
]

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IN_MEMORY_NAME = "<extended-resources of {pod}>"
"""`specialClaimInMemName` (`<extended-resources>`), with the pod's name: not a valid object name, so it never
collides with a claim of the API server, and unique per pod (allocations in flight are keyed by claim)."""

JsonObj = dict[str, Any]


class ExtendedResourceMap:
    """Resource name -> DeviceClass name, from the DeviceClasses the scheduler knows. `version` changes whenever a
    mapping may have (the fast path keys its pod shapes by it)."""

    def __init__(self) -> None:
        self._classes: dict[str, tuple[str, str]] = {}
        """Class name -> (its `spec.extendedResourceName` or "", its creationTimestamp)."""
        self._mapping: dict[str, str] | None = {}
        self.version = 0

    def set_class(self, name: str, extended_resource_name: str, created: str) -> None:
        if self._classes.get(name) == (extended_resource_name, created):
            return
        self._classes[name] = (extended_resource_name, created)
        self._changed()

    def delete_class(self, name: str) -> None:
        if self._classes.pop(name, None) is not None:
            self._changed()

    def _changed(self) -> None:
        self._mapping = None
        self.version += 1

    def class_for(self, resource: str) -> str | None:
        """The DeviceClass that serves `resource` (`GetDeviceClass`), or None."""
        return self.mapping().get(resource)

    def maps(self, resource: str) -> bool:
        return resource in self.mapping()

    def mapping(self) -> Mapping[str, str]:
        if self._mapping is None:
            winners: dict[str, tuple[str, str]] = {}  # resource -> (created, class) of the best candidate
            for name, (explicit, created) in self._classes.items():
                if not explicit:
                    continue
                best = winners.get(explicit)
                # `betterDeviceClass`: the newer class, then the lower name (RFC 3339 times in one format sort as
                # text; kube-apiserver writes them to the second)
                if best is None or created > best[0] or (created == best[0] and name < best[1]):
                    winners[explicit] = (created, name)
            mapping = {resource: name for resource, (_, name) in winners.items()}
            for name in self._classes:  # unique per class: validation keeps explicit names out of this prefix
                mapping[DEVICE_CLASS_RESOURCE_PREFIX + name] = name
            self._mapping = mapping
        return self._mapping

    def __bool__(self) -> bool:
        return bool(self._classes)


def dra_requests(pod: Pod, extended: ExtendedResourceMap) -> dict[str, int]:
    """The pod's requests (`PodRequests`) of DRA extended resource names, when at least one of them is mapped to a
    class (`hasDeviceClassMappedExtendedResource`); empty otherwise (DRA plays no part for the pod's resources)."""
    if not extended:
        return {}
    wanted = {
        name: amount
        for name, amount in pod.effective_request.items()
        if amount > 0 and is_dra_extended_resource_name(name)
    }
    return wanted if any(extended.maps(name) for name in wanted) else {}


@dataclass(frozen=True)
class NodeSplit:
    """`filterExtendedResources` on one node."""

    dra: tuple[str, ...] = ()
    """The resources DRA provides there (sorted): mapped, and none in the node's allocatable."""
    unfit: str = ""
    """A resource neither the node nor a class provides (the pod does not fit)."""


def split_for_node(
    requests: Mapping[str, int], extended: ExtendedResourceMap, allocatable: Mapping[str, int]
) -> NodeSplit:
    """Which of the pod's DRA extended resources (`dra_requests`) the node's allocatable lacks and a class maps."""
    dra: list[str] = []
    for name in sorted(requests):
        listed = name in allocatable
        if extended.maps(name) and not allocatable.get(name, 0):
            dra.append(name)
        elif not listed:
            return NodeSplit(unfit=name)
    return NodeSplit(tuple(dra))


def served_on_node(
    names: Iterable[str], extended: ExtendedResourceMap | None, allocatable: Mapping[str, int]
) -> tuple[str, ...]:
    """Which of `names` (a pod's requested resources) DRA serves on a node with `allocatable` (sorted): a class maps
    them and the node has none (`split_for_node`'s `dra`, without the check that the others fit)."""
    if not extended:
        return ()
    return tuple(sorted(n for n in names if not allocatable.get(n, 0) and extended.maps(n)))


def as_admitted(pod: Pod, served: Collection[str]) -> Pod:
    """`pod` as the kubelet's admission sees it on a node where DRA serves its extended resources `served`: without
    their requests and limits. The kubelet does not count them against its own resources: the predicate admission
    drops every request the pod's extended resource claim maps (`removeMissingExtendedResources`'
    `isResourceBackedByDRA`, `pkg/kubelet/lifecycle/predicate.go`), and the device manager aligns and allocates only
    device-plugin resources (`isDevicePluginResource` in `GetTopologyHints` and `allocateContainerResources`,
    `pkg/kubelet/cm/devicemanager`: a plugin registered, or devices it allocated; not a resource whose plugin is gone,
    which the Node's allocatable shows at 0). The DRA devices are aligned as DRA devices (`Pod.dra_devices`). So
    NUMA zones that still list the resource (an NRT exporter that has not caught up with a node moving from a device
    plugin to DRA) hold none of it. QoS reads cpu and memory only: it does not change."""
    if not served:
        return pod
    return without_requests(pod, lambda _: served)


def _long_and_short(pod: Pod) -> tuple[list[Container], list[int], list[int]]:
    """`partitionContainerIndices`: all containers (init first), the long-lived ones' indices (app and sidecar),
    the short-lived init containers' indices."""
    containers = [*pod.init_containers, *pod.containers]
    short = [i for i, c in enumerate(containers) if c.kind is ContainerKind.INIT]
    long = [i for i, c in enumerate(containers) if c.kind is not ContainerKind.INIT]
    return containers, long, short


def _container_request(
    index: int, container: Container, resource: str, class_name: str, reusable: list[JsonObj | None]
) -> tuple[JsonObj | None, list[JsonObj]]:
    """`createResourceRequestAndMappings`: the container's own request for `resource` (None when it asks for none,
    or the `reusable` requests of later containers already cover it) and its mappings."""
    amount = container.requests.get(resource, 0)
    if not amount:
        return None, []
    mappings: list[JsonObj] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append({"containerName": container.name, "resourceName": resource, "requestName": request["name"]})
        if covered >= amount:
            return None, mappings
    position = sorted(container.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": amount - covered},
    }
    mappings.append({"containerName": container.name, "resourceName": resource, "requestName": name})
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Collection[str], extended: ExtendedResourceMap
) -> tuple[list[JsonObj], list[JsonObj]]:
    """`createRequestsAndMappings`: the device requests (sorted by name) for the pod's `resources`, and the
    container -> request mappings (per resource: long-lived containers, then short-lived ones)."""
    containers, long, short = _long_and_short(pod)
    requests: list[JsonObj] = []
    mappings: list[JsonObj] = []
    for resource in sorted(resources):
        class_name = extended.class_for(resource)
        if class_name is None:
            continue
        long_requests: list[JsonObj | None] = [None] * len(containers)
        long_mappings: list[JsonObj] = []
        for i in long:
            request, found = _container_request(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings.extend(found)
        largest: JsonObj | None = None
        short_names: set[str] = set()
        short_mappings: list[JsonObj] = []
        for i in short:
            request, found = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


@dataclass(frozen=True)
class ExtendedClaim:
    """The claim for a pod's DRA extended resources on one kind of node (the resources DRA provides there)."""

    claim: ResourceClaim
    """Parsed, named `<extended-resources of POD>` (`IN_MEMORY_NAME`): its key, unique per pod, is what allocations
    in flight are held under until PreBind creates it."""
    manifest: JsonObj
    """What PreBind creates (`createExtendedResourceClaimInAPI`)."""
    mappings: tuple[JsonObj, ...]
    """`status.extendedResourceClaimStatus.requestMappings` of the pod."""
    resources: tuple[str, ...]

    @property
    def key(self) -> str:
        return self.claim.key


def extended_claim(pod: Pod, resources: tuple[str, ...], extended: ExtendedResourceMap) -> ExtendedClaim:
    """The in-memory claim (`preFilterExtendedResources`) with the node's requests (`filterExtendedResources`)."""
    requests, mappings = requests_and_mappings(pod, resources, extended)
    manifest: JsonObj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{pod.name}-extended-resources-",
            "namespace": pod.namespace,
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
            ],
        },
        "spec": {"devices": {"requests": requests}},
    }
    parsed = ResourceClaim.from_dict({**manifest, "metadata": {"name": "placeholder", "namespace": pod.namespace}})
    claim = ResourceClaim(pod.namespace, IN_MEMORY_NAME.format(pod=pod.name), parsed.spec)
    return ExtendedClaim(claim, manifest, tuple(mappings), resources)


def owned_extended_claim(claim: Mapping[str, Any]) -> str:
    """The uid of the pod an extended resource claim belongs to (`findExtendedResourceClaim`: the annotation, and
    the pod as controller), or ""."""
    metadata = claim.get("metadata") or {}
    if (metadata.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
        return ""
    for ref in metadata.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Pod":
            return str(ref.get("uid") or "")
    return ""
