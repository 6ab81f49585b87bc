"""v1alpha1 <-> v1 conversion of the NUMAResources kinds, field by field as numaresources-operator's
`*_conversion.go` and v1alpha1's `NormalizeConfig`."""

from __future__ import annotations

import pytest

from knuma.api.numaresources_conversion import ALPHA_API_VERSION, ConversionError, convert

V1 = "nodetopology.openshift.io/v1"
META = {"name": "numaresourcesoperator", "uid": "u1", "resourceVersion": "7", "labels": {"a": "b"}}


def test_an_alpha_operator_gets_v1alpha1s_defaults_and_its_deprecated_flag() -> None:
    alpha = {
        "apiVersion": ALPHA_API_VERSION,
        "kind": "NUMAResourcesOperator",
        "metadata": META,
        "spec": {
            "nodeGroups": [
                {"machineConfigPoolSelector": {"matchLabels": {"pool": "cnf"}}, "disablePodsFingerprinting": True},
                {"machineConfigPoolSelector": {"matchLabels": {"pool": "b"}}, "config": {"infoRefreshMode": "Events"}},
                {
                    "machineConfigPoolSelector": {"matchLabels": {"pool": "c"}},
                    "disablePodsFingerprinting": True,
                    "config": {"podsFingerprinting": "Enabled", "infoRefreshPeriod": "20s"},
                },
            ],
            "logLevel": "Debug",
            "podExcludes": [{"namespace": "kube-*", "name": "*"}],
        },
        "status": {"daemonsets": [{"namespace": "ns", "name": "ds"}], "conditions": [{"type": "Available"}]},
    }
    v1 = convert(alpha, V1)
    assert v1["apiVersion"] == V1 and v1["metadata"] == META
    groups = v1["spec"]["nodeGroups"]
    assert groups[0] == {
        "machineConfigPoolSelector": {"matchLabels": {"pool": "cnf"}},
        "config": {
            "podsFingerprinting": "Disabled",
            "infoRefreshMode": "PeriodicAndEvents",
            "infoRefreshPeriod": "10s",
        },
    }
    assert groups[1]["config"] == {
        "podsFingerprinting": "Enabled",
        "infoRefreshMode": "Events",
        "infoRefreshPeriod": "10s",
    }
    # the group's own config wins over the deprecated flag (mergeNodeGroupConfig after ResetFromNodeGroup)
    assert groups[2]["config"]["podsFingerprinting"] == "Enabled" and groups[2]["config"]["infoRefreshPeriod"] == "20s"
    assert v1["spec"]["logLevel"] == "Debug" and v1["spec"]["podExcludes"] == [{"namespace": "kube-*", "name": "*"}]
    assert v1["status"] == alpha["status"]


def test_v1_to_alpha_drops_what_v1alpha1_lacks() -> None:
    v1 = {
        "apiVersion": V1,
        "kind": "NUMAResourcesOperator",
        "metadata": META,
        "spec": {
            "nodeGroups": [
                {"poolName": "worker-cnf", "config": {"podsFingerprinting": "EnabledExclusiveResources"}},
                {
                    "machineConfigPoolSelector": {"matchLabels": {"pool": "cnf"}},
                    "config": {"tolerations": [{"operator": "Exists"}], "infoRefreshMode": "Periodic"},
                    "annotations": {"x": "y"},
                },
            ]
        },
        "status": {"nodeGroups": [{"selector": "worker-cnf"}], "relatedObjects": [{"name": "x"}]},
    }
    alpha = convert(v1, ALPHA_API_VERSION)
    assert alpha["spec"]["nodeGroups"] == [
        {"config": {"podsFingerprinting": "Enabled"}},
        {"machineConfigPoolSelector": {"matchLabels": {"pool": "cnf"}}, "config": {"infoRefreshMode": "Periodic"}},
    ]
    assert "status" not in alpha  # nodeGroups and relatedObjects are v1-only


def test_scheduler_rote_conversion_both_ways() -> None:
    v1 = {
        "apiVersion": V1,
        "kind": "NUMAResourcesScheduler",
        "metadata": {"name": "numaresourcesscheduler"},
        "spec": {"imageSpec": "img", "schedulerName": "s", "cacheResyncPeriod": "5s", "schedulerInformer": "Shared"},
        "status": {"deployment": {"namespace": "n", "name": "d"}, "cacheResyncPeriod": "5s"},
    }
    alpha = convert(v1, ALPHA_API_VERSION)
    assert alpha["spec"] == {"imageSpec": "img", "schedulerName": "s", "cacheResyncPeriod": "5s"}
    assert alpha["status"] == {"deployment": {"namespace": "n", "name": "d"}}
    back = convert(alpha, V1)
    assert back["spec"] == alpha["spec"] and back["apiVersion"] == V1
    assert convert(v1, V1) == v1  # already there


@pytest.mark.parametrize(
    ("obj", "desired", "message"),
    [
        ({"apiVersion": V1, "kind": "Pod"}, V1, "cannot convert kind 'Pod'"),
        ({"apiVersion": "x/v2", "kind": "NUMAResourcesScheduler"}, V1, "apiVersion 'x/v2' is not one of"),
        ({"apiVersion": V1, "kind": "NUMAResourcesScheduler"}, "nodetopology.openshift.io/v9", "desiredAPIVersion"),
    ],
)
def test_what_cannot_be_converted_says_why(obj: dict[str, str], desired: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(obj, desired)
