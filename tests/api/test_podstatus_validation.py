"""`validatePodExtendedResourceClaimStatus`: the claim of DRA-backed extended resources in a pod's status must fit
the pod's spec (the API-server side is in tests/local/apiserver/test_extended_resources.py)."""

from __future__ import annotations

from typing import Any

from knuma.api.podstatus_validation import extended_resource_claim_status_errors

NIC = "example.com/nic"


def spec() -> dict[str, Any]:
    return {
        "initContainers": [{"name": "setup", "resources": {"requests": {NIC: "1"}}}],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
    }


def status(*mappings: tuple[str, str, str], claim: str = "p-extended-resources-x") -> dict[str, Any]:
    entries = [{"containerName": c, "resourceName": r, "requestName": q} for c, r, q in mappings]
    return {"extendedResourceClaimStatus": {"resourceClaimName": claim, "requestMappings": entries}}


def test_no_extended_resource_claim_is_nothing_to_check() -> None:
    assert extended_resource_claim_status_errors(spec(), {"phase": "Running"}) == []


def test_an_init_container_may_get_the_devices() -> None:
    assert extended_resource_claim_status_errors(spec(), status(("setup", NIC, "container-0-request-0"))) == []


def test_each_rule_reports_its_field() -> None:
    errors = extended_resource_claim_status_errors(spec(), status(("app", NIC, "r"), ("ghost", NIC, "r"), claim="X"))
    assert [(e.reason, e.field) for e in errors] == [
        ("FieldValueInvalid", "status.extendedResourceClaimStatus.requestMappings[0].resourceName"),
        ("FieldValueInvalid", "status.extendedResourceClaimStatus.requestMappings[1].containerName"),
        ("FieldValueInvalid", "status.extendedResourceClaimStatus.resourceClaimName"),
    ]
