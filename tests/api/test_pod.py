"""The Pod model: defaulting, container kinds, QoS (ComputePodQOS), exclusive CPUs (guaranteedCPUs), and the
effective request (resourcehelper.PodRequests with KEP-753 sidecars, plus overhead)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.api.pod import ContainerKind, Pod, PodError, QOSClass
from knuma.quantity import parse_quantity


def c(name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any):
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def sidecar(name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None):
    return c(name, requests, limits, restartPolicy="Always")


def pod(containers, init=None, overhead=None, **meta: Any) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta}, "spec": spec})


G = {"cpu": "2", "memory": "1Gi"}  # Guaranteed when used as limits


# -- construction ----------------------------------------------------------------------------------------------------


def test_from_manifest_basics():
    p = pod(
        [c("app", limits=G)],
        init=[c("setup", limits=G), sidecar("proxy", limits=G)],
        namespace="ns",
        labels={"a": "b"},
        uid="u1",
    )
    assert p.key == "ns/p"
    assert [(x.name, x.kind) for x in p.all_containers] == [
        ("setup", ContainerKind.INIT),
        ("proxy", ContainerKind.SIDECAR),
        ("app", ContainerKind.APP),
    ]
    assert p.init_containers[1].is_init and not p.containers[0].is_init
    assert p.uid == "u1" and p.labels == {"a": "b"}
    assert p.scheduler_name == "default-scheduler"


def test_default_namespace_and_restart_policy_on_app_containers_is_ignored():
    p = pod([c("app", restartPolicy="Always")])
    assert p.namespace == "default"
    assert p.containers[0].kind is ContainerKind.APP


def test_requests_default_to_limits():
    p = pod([c("app", requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"})])
    assert p.containers[0].requests == {"cpu": 500, "memory": 1024**3, "example.com/gpu": 1}
    assert p.containers[0].limits == {"cpu": 1000, "memory": 1024**3, "example.com/gpu": 1}


def test_requested_names_skip_zero():
    p = pod([c("app", requests={"cpu": "0", "memory": "1Mi"})])
    assert p.requested_names == {"memory"}


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"kind": "Deployment", "spec": {}}, "expected kind Pod"),
        ({"kind": "Pod", "metadata": {"name": "p"}}, "missing spec"),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}, "at least one container"),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"container": [{"name": "a"}]}},
            r"at least one container \(spec has 'container': did you mean containers\?\)",
        ),
        (  # a real PodSpec key is not taken for a typo
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "a"}]}},
            r"at least one container$",
        ),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}}, "no name"),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c("a", requests={"cpu": "x1"})]}},
            r"container a requests.*'x1'",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c("a", {"cpu": "2"}, {"cpu": "1"})]}},
            "more cpu than its limit",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c("a", requests={"cpu": "-1"})]}},
            "negative cpu",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c("a")], "overhead": {"cpu": "?"}}},
            r"spec\.overhead",
        ),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c("a")], "priority": "high"}}, "priority"),
    ],
)
def test_invalid_pods_say_what_is_wrong(manifest, message):
    with pytest.raises(PodError, match=message):
        Pod.from_manifest(manifest)


def test_pod_error_is_a_value_error():
    assert issubclass(PodError, ValueError)


# -- QoS -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "init", "qos"),
    [
        ([c("a")], None, QOSClass.BEST_EFFORT),
        ([c("a", limits={"example.com/gpu": "1", "ephemeral-storage": "1Gi"})], None, QOSClass.BEST_EFFORT),
        ([c("a", limits={"cpu": "0", "memory": "0"})], None, QOSClass.BEST_EFFORT),
        ([c("a", limits=G)], None, QOSClass.GUARANTEED),
        ([c("a", requests=G, limits=G)], None, QOSClass.GUARANTEED),
        ([c("a", limits={**G, "example.com/gpu": "1", "hugepages-2Mi": "2Mi"})], None, QOSClass.GUARANTEED),
        ([c("a", limits={"cpu": "500m", "memory": "1Gi"})], None, QOSClass.GUARANTEED),
        ([c("a", requests=G)], None, QOSClass.BURSTABLE),
        ([c("a", requests={"cpu": "1", "memory": "1Gi"}, limits=G)], None, QOSClass.BURSTABLE),
        ([c("a", limits={"cpu": "2"})], None, QOSClass.BURSTABLE),
        ([c("a", limits=G), c("b")], None, QOSClass.BURSTABLE),
        ([c("a", limits=G), c("b", limits=G)], None, QOSClass.GUARANTEED),
        ([c("a", limits=G)], [c("i")], QOSClass.BURSTABLE),  # init containers count
        ([c("a", limits=G)], [sidecar("s", requests={"cpu": "100m"})], QOSClass.BURSTABLE),
        ([c("a", limits=G)], [c("i", limits=G), sidecar("s", limits=G)], QOSClass.GUARANTEED),
        ([c("a")], [c("i", requests={"memory": "1Mi"})], QOSClass.BURSTABLE),
        ([c("a", limits={"cpu": "0", "memory": "1Gi"})], None, QOSClass.BURSTABLE),  # a zero limit is no limit
    ],
)
def test_qos_examples(containers, init, qos):
    assert pod(containers, init).qos is qos


def go_compute_pod_qos(manifest_spec: dict[str, Any]) -> QOSClass:
    """qos.ComputePodQOS, transcribed, on exact quantities after API defaulting (requests default to limits)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in [*manifest_spec["containers"], *manifest_spec.get("initContainers", [])]:
        res = container.get("resources", {})
        lim = {k: parse_quantity(v).exact() for k, v in res.get("limits", {}).items()}
        req = {k: parse_quantity(v).exact() for k, v in res.get("requests", {}).items()}
        for k, v in lim.items():
            req.setdefault(k, v)
        for name, q in req.items():
            if name in ("cpu", "memory") and q > 0:
                requests[name] = requests.get(name, Fraction(0)) + q
        found = set()
        for name, q in lim.items():
            if name in ("cpu", "memory") and q > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + q
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed:
        for name, q in requests.items():
            if name not in limits or limits[name] != q:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


quantities = st.sampled_from(["0", "100m", "500m", "1", "2", "1Mi", "1Gi"])
resource_lists = st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu"]), quantities, max_size=3)


@st.composite
def containers(draw, prefix: str, restartable: bool = False):
    out = []
    for i in range(draw(st.integers(0 if prefix == "i" else 1, 3))):
        limits = draw(resource_lists)
        # requests never above limits (the API server rejects that); often equal (copied from limits)
        requests = {k: v for k, v in limits.items() if draw(st.booleans())}
        if draw(st.booleans()):
            requests = {k: draw(st.sampled_from(["0", v])) for k, v in requests.items()}
        for k, v in draw(resource_lists).items():
            if k not in limits:
                requests[k] = v
        container = c(f"{prefix}{i}", requests, limits)
        if restartable and draw(st.booleans()):
            container["restartPolicy"] = "Always"
        out.append(container)
    return out


@settings(max_examples=300, deadline=None)
@given(apps=containers("a"), inits=containers("i", restartable=True))
def test_qos_matches_compute_pod_qos(apps, inits):
    spec = {"containers": apps, "initContainers": inits}
    assert pod(apps, inits).qos is go_compute_pod_qos(spec)


# -- exclusive CPUs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [("2", 2), ("2000m", 2), ("1500m", 0), ("0.5", 0), ("1.0001", 0), ("2.0000000001", 0), ("1999.9999m", 2)],
)
def test_exclusive_cpus_guaranteed(cpu, expected):
    p = pod([c("a", limits={"cpu": cpu, "memory": "1Gi"})])
    assert p.is_guaranteed
    assert p.exclusive_cpus(p.containers[0]) == expected


def test_exclusive_cpus_only_for_guaranteed_pods():
    p = pod([c("a", limits={"cpu": "2", "memory": "1Gi"}), c("b", requests={"cpu": "2"})])
    assert p.qos is QOSClass.BURSTABLE
    assert p.exclusive_cpus(p.containers[0]) == 0


# -- effective request -----------------------------------------------------------------------------------------------


def test_effective_request_init_max_vs_app_sum():
    p = pod(
        [c("a", requests={"cpu": "1", "memory": "1Gi"}), c("b", requests={"cpu": "1", "memory": "1Gi"})],
        init=[c("i1", requests={"cpu": "3", "memory": "1Gi"}), c("i2", requests={"cpu": "1", "memory": "4Gi"})],
    )
    assert p.effective_request == {"cpu": 3000, "memory": 4 * 1024**3}


def test_effective_request_with_sidecars_kep_753():
    # sidecar before a regular init container: the init container runs next to it
    p = pod(
        [c("app", requests={"cpu": "200m"})],
        init=[sidecar("s1", requests={"cpu": "100m"}), c("i1", requests={"cpu": "500m"})],
    )
    assert p.effective_request == {"cpu": 600}
    # sidecar after a regular init container: not added to it, but held with the app containers
    p = pod(
        [c("app", requests={"cpu": "300m"})],
        init=[c("i1", requests={"cpu": "1"}), sidecar("s1", requests={"cpu": "200m"})],
    )
    assert p.effective_request == {"cpu": 1000}
    p = pod(
        [c("app", requests={"cpu": "900m"})],
        init=[c("i1", requests={"cpu": "1"}), sidecar("s1", requests={"cpu": "200m"})],
    )
    assert p.effective_request == {"cpu": 1100}
    # two sidecars accumulate for later init containers
    p = pod(
        [c("app", requests={"cpu": "100m"})],
        init=[
            sidecar("s1", requests={"cpu": "1"}),
            sidecar("s2", requests={"cpu": "1"}),
            c("i", requests={"cpu": "1"}),
        ],
    )
    assert p.effective_request == {"cpu": 3000}


def test_effective_request_adds_overhead():
    p = pod([c("a", requests={"cpu": "1", "memory": "1Gi"})], overhead={"cpu": "250m", "memory": "120Mi"})
    assert p.effective_request == {"cpu": 1250, "memory": 1024**3 + 120 * 1024**2}


def go_aggregate_container_requests(apps, inits) -> dict[str, int]:
    """resourcehelper.AggregateContainerRequests, transcribed (maps of integer base units)."""
    reqs: dict[str, int] = {}
    for container in apps:
        for k, v in container.requests.items():
            reqs[k] = reqs.get(k, 0) + v
    restartable: dict[str, int] = {}
    init_reqs: dict[str, int] = {}
    for container in inits:
        if container.kind is ContainerKind.SIDECAR:
            for k, v in container.requests.items():
                reqs[k] = reqs.get(k, 0) + v
                restartable[k] = restartable.get(k, 0) + v
            container_reqs = dict(restartable)
        else:
            container_reqs = dict(container.requests)
            for k, v in restartable.items():
                container_reqs[k] = container_reqs.get(k, 0) + v
        for k, v in container_reqs.items():  # maxResourceList
            if k not in init_reqs or v > init_reqs[k]:
                init_reqs[k] = v
    for k, v in init_reqs.items():
        if k not in reqs or v > reqs[k]:
            reqs[k] = v
    return reqs


@settings(max_examples=300, deadline=None)
@given(apps=containers("a"), inits=containers("i", restartable=True), overhead=resource_lists)
def test_effective_request_matches_pod_requests(apps, inits, overhead):
    p = pod(apps, inits, overhead=overhead)
    expected = go_aggregate_container_requests(p.containers, p.init_containers)
    for k, v in p.overhead.items():
        expected[k] = expected.get(k, 0) + v
    assert p.effective_request == expected


def test_invalid_resources_raise_pod_error():
    with pytest.raises(PodError, match="resources must be a mapping"):
        Pod.from_manifest(
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "resources": "x"}]}}
        )
    with pytest.raises(PodError, match="expected a mapping"):
        pod([c("a", requests=["cpu"])])  # type: ignore[arg-type]


def test_dra_numa_annotation_is_read_leniently() -> None:
    from knuma.api.pod import DRA_NUMA_ANNOTATION

    def with_annotation(value: str) -> Pod:
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "annotations": {DRA_NUMA_ANNOTATION: value}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        return Pod.from_manifest(manifest)

    assert with_annotation('{"c":{"gpu.sim.knuma.io/n/gpu-1":1,"x/n/y":null}}').dra_devices == {
        "c": {"gpu.sim.knuma.io/n/gpu-1": 1, "x/n/y": None}
    }
    assert with_annotation("not json").dra_devices == {}
    assert with_annotation("[1]").dra_devices == {}


# -- pod-level resources (PodLevelResources, beta and on in 1.34) ----------------------------------------------------


def pod_level(containers: list[dict[str, Any]], resources: dict[str, Any]) -> Pod:
    spec = {"containers": containers, "resources": resources}
    return Pod.from_manifest({"metadata": {"name": "p"}, "spec": spec})


def test_pod_level_resources_decide_qos_request_and_keep_the_managers_away() -> None:
    """`ComputePodQOS` reads `spec.resources` alone; `PodRequests` takes its CPU and memory over the containers';
    the static CPU and memory managers skip the pod (`IsPodLevelResourcesSet`)."""
    whole = {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    guaranteed = pod_level([c("app", limits={"cpu": "2", "memory": "1Gi"}), c("side")], whole)
    assert guaranteed.qos is QOSClass.GUARANTEED
    assert guaranteed.effective_request == {"cpu": 4000, "memory": 8 << 30}
    assert guaranteed.pod_level_resources and not guaranteed.pinned_by_managers
    assert guaranteed.exclusive_cpus(guaranteed.containers[0]) == 0
    twin = pod([c("app", limits={"cpu": "2", "memory": "1Gi"})])
    assert twin.pinned_by_managers and twin.exclusive_cpus(twin.containers[0]) == 2
    assert guaranteed.admission_key != pod_level([c("app", limits={"cpu": "2", "memory": "1Gi"})], {}).admission_key

    cpu_only = pod_level([c("app", requests={"cpu": "1", "memory": "1Gi"})], {"requests": {"cpu": "3"}})
    assert cpu_only.qos is QOSClass.BURSTABLE
    assert cpu_only.effective_request == {"cpu": 3000, "memory": 1 << 30}  # memory from the containers

    # `spec.resources` present but empty: the QoS class is computed from it, BestEffort
    empty = pod_level([c("app", limits={"cpu": "2", "memory": "1Gi"})], {})
    assert empty.qos is QOSClass.BEST_EFFORT and not empty.pod_level_resources


def test_pod_level_requests_default_as_the_api_server_does() -> None:
    """`defaultPodRequests`: with pod-level limits, a missing CPU or memory request is the containers' aggregate
    request when they state one, else the pod-level limit (kubernetes' `TestPodResourcesDefaults`)."""
    limits_only = pod_level([c("app", requests={"cpu": "1"})], {"limits": {"cpu": "4", "memory": "2Gi"}})
    assert limits_only.pod_requests == {"cpu": 1000, "memory": 2 << 30}
    assert limits_only.qos is QOSClass.BURSTABLE and limits_only.effective_request["cpu"] == 1000
    no_container_requests = pod_level([c("app")], {"limits": {"cpu": "4", "memory": "2Gi"}})
    assert no_container_requests.pod_requests == {"cpu": 4000, "memory": 2 << 30}
    assert no_container_requests.qos is QOSClass.GUARANTEED


def test_pod_level_hugepages_limits_default_to_the_containers_aggregate() -> None:
    """`defaultHugePagePodLimits`: a hugepages size the pod-level resources do not name gets the containers'
    aggregate limit, and its request that limit; a stated hugepages limit is requested as stated."""
    containers = [
        c("a", limits={"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "512Mi"}),
        c("b", limits={"hugepages-2Mi": "1Gi"}),
    ]
    derived = pod_level(containers, {"limits": {"cpu": "2", "memory": "2Gi"}})
    assert derived.pod_limits == {"cpu": 2000, "memory": 2 << 30, "hugepages-2Mi": 1536 << 20}
    assert derived.pod_requests == {"cpu": 1000, "memory": 1 << 30, "hugepages-2Mi": 1536 << 20}
    stated = pod_level(containers, {"limits": {"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "2Gi"}})
    assert stated.pod_requests["hugepages-2Mi"] == 2 << 30
    with pytest.raises(PodError, match=r"spec.resources must be a mapping"):
        Pod.from_manifest({"metadata": {"name": "p"}, "spec": {"containers": [c("a")], "resources": "4"}})
