"""What the simulated kubelet learns from a pod's ResourceClaims, the claim of DRA-backed extended resources
(`status.extendedResourceClaimStatus`, KEP-5004) included: why it waits, which devices each container gets, which
claims PodResources reports for it."""

from __future__ import annotations

from typing import Any

from knuma.local.nodes.claims import (
    container_claims,
    container_devices,
    extended_claim_name,
    uses_claims,
    waiting_reason,
    without_dra_backed,
)
from knuma.podresources.model import ClaimResource, DynamicResource

NODE = "dgx-000"
NUMA_OF = {"nic.sim.knuma.io/nic-0": 0, "nic.sim.knuma.io/nic-5": 1, "gpu.sim.knuma.io/gpu-5": 1}
CLAIM = "trainer-extended-resources-abcde"


def extended_pod(**status: Any) -> dict[str, Any]:
    """A pod asking for two NICs through the extended resource `example.com/nic` (app) and one through the class's
    implicit name (a sidecar), with a GPU claim of its own; the scheduler's mappings in its status."""
    return {
        "metadata": {"name": "trainer", "namespace": "default", "uid": "uid-trainer"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "trainer-gpu"}],
            "initContainers": [
                {
                    "name": "proxy",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"deviceclass.resource.kubernetes.io/nic.sim.knuma.io": "1"}},
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "resources": {"requests": {"cpu": "4", "example.com/nic": "2"}, "claims": [{"name": "gpu"}]},
                },
                {"name": "idle", "resources": {"requests": {"cpu": "1"}}},
            ],
        },
        "status": {
            "extendedResourceClaimStatus": {
                "resourceClaimName": CLAIM,
                "requestMappings": [
                    {
                        "containerName": "proxy",
                        "resourceName": "deviceclass.resource.kubernetes.io/nic.sim.knuma.io",
                        "requestName": "container-0-request-0",
                    },
                    {"containerName": "app", "resourceName": "example.com/nic", "requestName": "container-1-request-0"},
                ],
            },
            **status,
        },
    }


def allocated(name: str, results: list[tuple[str, str, str]], *, reserved: bool = True) -> dict[str, Any]:
    """A claim allocated to `results` (request, driver, device) on NODE, reserved for the trainer pod or not."""
    status: dict[str, Any] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": request, "driver": driver, "pool": NODE, "device": device}
                    for request, driver, device in results
                ]
            }
        }
    }
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": "trainer", "uid": "uid-trainer"}]
    return {"metadata": {"name": name, "namespace": "default"}, "status": status}


def claims(*, extended_reserved: bool = True) -> dict[str, dict[str, Any]]:
    nics = [
        ("container-0-request-0", "nic.sim.knuma.io", "nic-0"),
        ("container-1-request-0", "nic.sim.knuma.io", "nic-5"),
        ("container-1-request-0", "nic.sim.knuma.io", "nic-4"),
    ]
    return {
        "trainer-gpu": allocated("trainer-gpu", [("gpu", "gpu.sim.knuma.io", "gpu-5")]),
        CLAIM: allocated(CLAIM, nics, reserved=extended_reserved),
    }


def test_the_extended_resource_claim_is_one_more_claim_to_wait_for() -> None:
    pod = extended_pod()
    assert uses_claims(pod) and extended_claim_name(pod) == CLAIM
    assert waiting_reason(pod, claims()) == ""
    only_gpu = {"trainer-gpu": claims()["trainer-gpu"]}
    assert waiting_reason(pod, only_gpu) == f"resource claim {CLAIM} not found"
    unallocated = {**claims(), CLAIM: {"metadata": {"name": CLAIM}, "status": {}}}
    assert waiting_reason(pod, unallocated) == f"resource claim {CLAIM} is not allocated"
    assert (
        waiting_reason(pod, claims(extended_reserved=False)) == f"resource claim {CLAIM} is not reserved for this pod"
    )


def test_a_pod_without_spec_claims_uses_its_extended_resource_claim_alone() -> None:
    pod = extended_pod()
    del pod["spec"]["resourceClaims"]
    del pod["spec"]["containers"][0]["resources"]["claims"]
    assert uses_claims(pod)
    assert waiting_reason(pod, {}) == f"resource claim {CLAIM} not found"
    assert container_devices(pod, claims(), NODE, NUMA_OF) == {
        "proxy": {"nic.sim.knuma.io/dgx-000/nic-0": 0},
        "app": {"nic.sim.knuma.io/dgx-000/nic-5": 1, "nic.sim.knuma.io/dgx-000/nic-4": None},
    }
    plain = extended_pod()
    del plain["status"]["extendedResourceClaimStatus"]
    del plain["spec"]["resourceClaims"]
    assert not uses_claims(plain) and extended_claim_name(plain) is None


def test_each_container_gets_the_devices_of_its_mapped_requests() -> None:
    """`Manager.GetResources`: the requests that `requestMappings` name for the container, next to the claims it
    lists in `resources.claims`; a container with no mapping gets nothing."""
    devices = container_devices(extended_pod(), claims(), NODE, {**NUMA_OF, "nic.sim.knuma.io/nic-4": 1})
    assert devices == {
        "proxy": {"nic.sim.knuma.io/dgx-000/nic-0": 0},
        "app": {
            "gpu.sim.knuma.io/dgx-000/gpu-5": 1,
            "nic.sim.knuma.io/dgx-000/nic-5": 1,
            "nic.sim.knuma.io/dgx-000/nic-4": 1,
        },
    }


def test_a_mapping_for_a_resource_the_container_does_not_request_gives_nothing() -> None:
    pod = extended_pod()
    pod["spec"]["containers"][0]["resources"]["requests"]["example.com/nic"] = "0"
    assert "nic.sim.knuma.io/dgx-000/nic-5" not in container_devices(pod, claims(), NODE, NUMA_OF)["app"]
    del pod["spec"]["containers"][0]["resources"]["requests"]["example.com/nic"]
    assert container_devices(pod, claims(), NODE, NUMA_OF)["app"] == {"gpu.sim.knuma.io/dgx-000/gpu-5": 1}


def test_podresources_reports_the_whole_extended_claim_for_every_mapped_container() -> None:
    """`GetContainerClaimInfos`: whole claims, the extended one for every container a mapping names."""
    nics = DynamicResource(
        CLAIM,
        "default",
        (
            ClaimResource("nic.sim.knuma.io", NODE, "nic-0"),
            ClaimResource("nic.sim.knuma.io", NODE, "nic-4"),
            ClaimResource("nic.sim.knuma.io", NODE, "nic-5"),
        ),
    )
    gpu = DynamicResource("trainer-gpu", "default", (ClaimResource("gpu.sim.knuma.io", NODE, "gpu-5"),))
    assert container_claims(extended_pod(), claims(), NODE) == {"proxy": (nics,), "app": (gpu, nics)}


def test_the_fit_check_does_not_count_what_the_extended_resource_claim_provides() -> None:
    """`removeMissingExtendedResources`: a mapped request goes, per container, even the implicit
    `deviceclass.resource.kubernetes.io/<class>` name that looks native; the rest stays, and the pod is not changed."""
    pod = extended_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "4", "example.com/nic": "2"}
    pod["spec"]["containers"][1]["resources"]["requests"]["example.com/nic"] = "1"  # not mapped for `idle`
    seen = without_dra_backed(pod)
    proxy = seen["spec"]["initContainers"][0]
    app, idle = seen["spec"]["containers"]
    assert proxy["resources"]["requests"] == {}
    assert app["resources"] == {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}, "claims": [{"name": "gpu"}]}
    assert idle["resources"]["requests"] == {"cpu": "1", "example.com/nic": "1"}
    assert pod["spec"]["containers"][0]["resources"]["requests"]["example.com/nic"] == "2"
    plain = extended_pod()
    del plain["status"]["extendedResourceClaimStatus"]
    assert without_dra_backed(plain) is plain
