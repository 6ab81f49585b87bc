"""The operator renders the deployer's objects (one source of truth): the same manifests, plus owner references, the
owned-by label and one exporter DaemonSet per node group."""

from __future__ import annotations

import copy
from typing import Any

from knuma.api.numaresources import parse_operator_spec, parse_scheduler_spec
from knuma.deploy.exporter import render_knuma_exporter
from knuma.deploy.options import DeployOptions
from knuma.deploy.scheduler import render_knuma_scheduler
from knuma.errors import InvalidInput
from knuma.operator.desired import OWNED_BY_LABEL, operator_objects, scheduler_objects, scheduler_options

OWNER = {
    "apiVersion": "nodetopology.openshift.io/v1",
    "kind": "X",
    "metadata": {"name": "numaresourcesoperator", "uid": "u1"},
}


def unowned(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("ownerReferences", None)
    out["metadata"].get("labels", {}).pop(OWNED_BY_LABEL, None)
    return out


def test_scheduler_objects_are_the_deployers() -> None:
    spec = parse_scheduler_spec({"schedulerName": "topo-aware-scheduler", "cacheResyncPeriod": "7s"})
    objects = scheduler_objects(OWNER, spec, replicas=3, namespace_name="ops")
    rendered = [o for o in render_knuma_scheduler(scheduler_options(spec, 3, "ops")) if o["kind"] != "Namespace"]
    assert [unowned(o) for o in objects[1:]] == rendered
    assert objects[0]["kind"] == "Namespace" and "ownerReferences" not in objects[0]["metadata"]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "u1" for o in objects[1:])
    assert all(o["metadata"].get("namespace") in (None, "ops") for o in objects)


def test_a_scheduler_cr_without_cache_resync_period_gets_knumas_cache_and_one_with_it_gets_upstreams() -> None:
    """numaresources-operator defaults `cacheResyncPeriod` to 5 s (overreserve); knuma's operator leaves the key out
    unless the CR sets it, so the scheduler it deploys selects knuma's own NRT cache, as `knuma deploy` does."""

    def numa_args(spec: dict[str, Any]) -> str:
        objects = scheduler_objects(OWNER, parse_scheduler_spec(spec), replicas=1, namespace_name="ops")
        config = next(o for o in objects if o["kind"] == "ConfigMap")
        return "".join(config["data"].values())

    assert "cacheResyncPeriodSeconds" not in numa_args({})
    assert "cacheResyncPeriodSeconds: 5" in numa_args({"cacheResyncPeriod": "5s"})


def test_one_daemonset_per_node_group_otherwise_the_deployers_exporter() -> None:
    spec = parse_operator_spec({"nodeGroups": [{"poolName": "a"}, {"poolName": "b"}]})
    objects = operator_objects(OWNER, spec, "ops")
    kinds = [o["kind"] for o in objects]
    assert kinds[0] == "CustomResourceDefinition" and "ownerReferences" not in objects[0]["metadata"]
    daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
    assert [d["metadata"]["name"] for d in daemonsets] == ["numaresourcesoperator-a", "numaresourcesoperator-b"]
    base = next(o for o in render_knuma_exporter(DeployOptions(namespace="ops")) if o["kind"] == "DaemonSet")
    a = unowned(daemonsets[0])
    pod = a["spec"]["template"]["spec"]
    assert pod.pop("nodeSelector") == {"node-role.kubernetes.io/a": ""}
    # the group's kubelet settings: its own ConfigMap, mounted and passed as --config
    assert pod["volumes"].pop() == {"name": "config", "configMap": {"name": "numaresourcesoperator-a"}}
    container = pod["containers"][0]
    assert container["volumeMounts"].pop() == {"name": "config", "mountPath": "/etc/knuma-exporter", "readOnly": True}
    assert container["args"].pop() == "--config=/etc/knuma-exporter/config.yaml"
    assert pod == base["spec"]["template"]["spec"]
    configmaps = [o for o in objects if o["kind"] == "ConfigMap"]
    assert [c["metadata"]["name"] for c in configmaps] == ["numaresourcesoperator-a", "numaresourcesoperator-b"]
    assert kinds.index("ConfigMap") < kinds.index("DaemonSet"), "a DaemonSet's ConfigMap exists before its pods"
    assert configmaps[0]["data"] == {"config.yaml": "{}\n"}
    assert configmaps[0]["metadata"]["labels"]["nodegroup.nodetopology.openshift.io/machineconfigpool"] == "a"
    selectors = [d["spec"]["selector"]["matchLabels"] for d in daemonsets]
    assert selectors[0] != selectors[1], "two DaemonSets must not select each other's pods"


def test_info_refresh_pause_stops_the_groups_exporters_from_publishing_and_is_in_the_status_config() -> None:
    spec = parse_operator_spec(
        {"nodeGroups": [{"poolName": "paused", "config": {"infoRefreshPause": "Enabled"}}, {"poolName": "live"}]}
    )
    daemonsets = {o["metadata"]["name"]: o for o in operator_objects(OWNER, spec, "ops") if o["kind"] == "DaemonSet"}
    args = {name: ds["spec"]["template"]["spec"]["containers"][0]["args"] for name, ds in daemonsets.items()}
    assert "--no-publish" in args["numaresourcesoperator-paused"]
    assert "--no-publish" not in args["numaresourcesoperator-live"]
    paused, live = spec.node_groups
    assert paused.config.to_dict()["infoRefreshPause"] == "Enabled"
    assert live.config.to_dict()["infoRefreshPause"] == "Disabled"  # v1's default, as upstream's status shows it
    try:
        parse_operator_spec({"nodeGroups": [{"poolName": "x", "config": {"infoRefreshPause": "Yes"}}]})
    except InvalidInput as err:
        assert "infoRefreshPause" in str(err) and "Enabled" in str(err)
    else:
        raise AssertionError("an unknown infoRefreshPause must be refused")
