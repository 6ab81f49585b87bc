"""NUMAResourcesOperator / NUMAResourcesScheduler parsing: v1 defaults, node groups on plain Kubernetes, and the
validation messages (upstream's where it has them) that end up in the Degraded condition."""

from __future__ import annotations

import pytest

from knuma.api.numaresources import (
    InfoRefreshMode,
    LogLevel,
    PodsFingerprinting,
    SpecError,
    parse_operator_spec,
    parse_scheduler_spec,
)
from knuma.api.numaresources_crd import operator_crds


def test_operator_defaults_are_v1s() -> None:
    spec = parse_operator_spec({"nodeGroups": [{"poolName": "worker-cnf"}]})
    [group] = spec.node_groups
    assert group.pool == "worker-cnf"
    assert group.node_selector == {"node-role.kubernetes.io/worker-cnf": ""}
    assert group.config.pods_fingerprinting is PodsFingerprinting.ENABLED_EXCLUSIVE_RESOURCES
    assert group.config.info_refresh_mode is InfoRefreshMode.PERIODIC
    assert group.config.info_refresh_period == 10.0
    assert spec.log_level is LogLevel.NORMAL and LogLevel.TRACE_ALL.verbosity == 8


def test_selector_groups_get_stable_pool_names() -> None:
    role = {"machineConfigPoolSelector": {"matchLabels": {"node-role.kubernetes.io/worker-gpu": ""}}}
    other = {"machineConfigPoolSelector": {"matchLabels": {"zone": "a", "tier": "numa"}}}
    spec = parse_operator_spec({"nodeGroups": [role, other]})
    assert spec.node_groups[0].pool == "worker-gpu"
    assert spec.node_groups[1].pool.startswith("sel-")
    again = parse_operator_spec({"nodeGroups": [other]})
    assert again.node_groups[0].pool == spec.node_groups[1].pool


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ({}, "node group 0 missing any pool specifier"),
        (
            {"poolName": "a", "machineConfigPoolSelector": {"matchLabels": {"a": "b"}}},
            "node group 0 must have only a single specifier set",
        ),
        ({"poolName": ""}, "pool name for pool #0 cannot be empty"),
        ({"poolName": "a", "config": {"infoRefreshMode": "Sometimes"}}, "expected one of Periodic, Events"),
        ({"poolName": "a", "config": {"infoRefreshPeriod": "soon"}}, "invalid duration 'soon'"),
        ({"poolName": "a", "annotations": {str(i): "x" for i in range(9)}}, "at most 8"),
        ({"machineConfigPoolSelector": {}}, "an empty selector would select every node"),
    ],
)
def test_invalid_node_groups(group: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        parse_operator_spec({"nodeGroups": [group]})


def test_duplicate_pools_are_rejected() -> None:
    with pytest.raises(SpecError, match="used by node groups 0 and 1"):
        parse_operator_spec({"nodeGroups": [{"poolName": "a"}, {"poolName": "a"}]})


def test_scheduler_defaults_and_errors() -> None:
    spec = parse_scheduler_spec({})
    assert (spec.cache_resync_period, spec.replicas, spec.scheduler_name) == (None, None, "")
    assert parse_scheduler_spec({"cacheResyncPeriod": "2500ms"}).cache_resync_period == 2.0  # whole seconds
    with pytest.raises(SpecError, match=r"spec\.replicas 0"):
        parse_scheduler_spec({"replicas": 0})
    with pytest.raises(SpecError, match="DNS label"):
        parse_scheduler_spec({"schedulerName": "Not_A_Name"})


def test_crds_are_cluster_scoped_singletons_with_status() -> None:
    nro, nrs = operator_crds()
    assert nro["metadata"]["name"] == "numaresourcesoperators.nodetopology.openshift.io"
    assert nro["spec"]["names"]["shortNames"] == ["numaresop"]
    assert nrs["spec"]["names"]["shortNames"] == ["numaressched"]
    for crd, name in ((nro, "numaresourcesoperator"), (nrs, "numaresourcesscheduler")):
        assert crd["spec"]["scope"] == "Cluster"
        version, alpha = crd["spec"]["versions"]
        assert version["name"] == "v1" and version["subresources"] == {"status": {}} and version["storage"]
        assert (alpha["name"], alpha["served"], alpha["storage"], alpha["deprecated"]) == (
            "v1alpha1",
            True,
            False,
            True,
        )
        assert crd["spec"]["conversion"] == {"strategy": "None"}
        [rule] = version["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
        assert rule["rule"] == f"has(self.metadata.name) && self.metadata.name == '{name}'"
