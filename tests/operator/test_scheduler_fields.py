"""The NUMAResourcesScheduler fields that change the scheduler's behaviour reach the configuration knuma's scheduler
loads: scoringStrategy, cacheResyncDetection (foreignPodsDetect), schedulerInformer (informerMode) and
preemptionMode, with upstream's defaults and field-naming errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knuma.api.numaresources import SpecError, parse_scheduler_spec
from knuma.operator.desired import scheduler_objects
from knuma.scheduler.config.load import parse_config
from knuma.scheduler.plugins.numa_args import NumaArgs

OWNER = {"apiVersion": "nodetopology.openshift.io/v1", "kind": "X", "metadata": {"name": "numaresourcesscheduler"}}


def loaded(spec: dict[str, Any]) -> tuple[dict[str, Any], NumaArgs]:
    owner = {**OWNER, "metadata": {"name": "numaresourcesscheduler", "uid": "u"}}
    objects = scheduler_objects(owner, parse_scheduler_spec(spec), 1, "ops")
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "scheduler-config")
    document = yaml.safe_load(next(iter(cm["data"].values())))
    config = parse_config(document, "scheduler-config")
    [profile] = config.profiles
    args = document["profiles"][0]["pluginConfig"][0]["args"]
    return args, profile.numa


def test_every_field_reaches_the_scheduler() -> None:
    args, numa = loaded(
        {
            "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}]},
            "cacheResyncDetection": "Aggressive",
            "schedulerInformer": "Shared",
            "preemptionMode": "Enabled",
            "cacheResyncPeriod": "7s",
        }
    )
    assert args["scoringStrategy"] == {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}]}
    assert numa.scoring_type.value == "MostAllocated" and numa.resources == (("cpu", 3),)
    assert (numa.foreign_pods_detect, numa.informer_mode, numa.preemption_mode) == ("All", "Shared", "Enabled")
    assert numa.cache_resync_period_seconds == 7


def test_defaults_are_upstreams_but_the_scoring_is_knumas() -> None:
    args, numa = loaded({})
    # no scoringStrategy in the CR: knuma's own profile (upstream's CR defaults to LeastAllocated)
    assert args["scoringStrategy"] == {"type": "KnumaBinPacking"} and "preemptionMode" not in args
    assert args["cache"] == {
        "foreignPodsDetect": "OnlyExclusiveResources",
        "informerMode": "Dedicated",
        "resyncMethod": "Autodetect",
    }
    assert (numa.foreign_pods_detect, numa.informer_mode, numa.preemption_mode) == (
        "OnlyExclusiveResources",
        "Dedicated",
        None,  # unset, as the operator renders it: upstream's Disabled, knuma's NUMA-aware preemption
    )
    spec = parse_scheduler_spec({})
    assert spec.cache_resync_debug.value == "DumpJSONFile"


@pytest.mark.parametrize(("debug", "dumps"), [(None, True), ("DumpJSONFile", True), ("Disabled", False)])
def test_cache_resync_debug_sets_the_dump_directory_of_the_scheduler(debug: str | None, dumps: bool) -> None:
    """As numaresources-operator: `DumpJSONFile` (the default) gives the scheduler `PFP_STATUS_DUMP=/run/pfpstatus`
    and a memory volume there, where its overreserve cache dumps each resync check (`knuma.scheduler.cache.resyncdebug`,
    which reads that variable)."""
    from knuma.scheduler.cache.resyncdebug import DUMP_ENV

    owner = {**OWNER, "metadata": {"name": "numaresourcesscheduler", "uid": "u"}}
    spec = {"cacheResyncPeriod": "5s", **({"cacheResyncDebug": debug} if debug else {})}
    objects = scheduler_objects(owner, parse_scheduler_spec(spec), 1, "ops")
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    if dumps:
        assert env == {DUMP_ENV: "/run/pfpstatus"}
        volume = next(v for v in pod["volumes"] if v["name"] == mounts["/run/pfpstatus"])
        assert volume["emptyDir"]["medium"] == "Memory"
    else:
        assert DUMP_ENV not in env and "/run/pfpstatus" not in mounts


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"preemptionMode": "Sometimes"}, "spec.preemptionMode: unsupported value 'Sometimes'"),
        ({"schedulerInformer": "Private"}, "spec.schedulerInformer: unsupported value"),
        ({"cacheResyncDetection": "Lazy"}, "expected one of Relaxed, Aggressive"),
        ({"cacheResyncDebug": "Yes"}, "spec.cacheResyncDebug"),
        ({"scoringStrategy": {"type": "Random"}}, "spec.scoringStrategy.type: unsupported value 'Random'"),
        ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"weight": 2}]}}, "resources[0].name"),
        ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}, "expected a positive integer"),
    ],
)
def test_invalid_values_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_scheduler_spec(spec)


def test_the_operator_applies_them_from_a_custom_resource(tmp_path: Any) -> None:
    from knuma.deploy.cluster import connect
    from knuma.operator.manager import install_crds
    from knuma.operator.reconciler import Reconciler, Settings
    from knuma.testing.apiserver import apiserver_in_thread

    nrs = {
        "apiVersion": "nodetopology.openshift.io/v1",
        "kind": "NUMAResourcesScheduler",
        "metadata": {"name": "numaresourcesscheduler"},
        "spec": {
            "replicas": 1,
            "preemptionMode": "Enabled",
            "scoringStrategy": {"type": "BalancedAllocation"},
            "schedulerInformer": "Shared",
        },
    }
    with apiserver_in_thread(tmp_path / "api") as api, connect(str(api.kubeconfig)) as session:
        install_crds(session)
        reply = session.http.post("/apis/nodetopology.openshift.io/v1/numaresourcesschedulers", json=nrs)
        assert reply.status_code == 201, reply.text
        assert reply.json()["spec"]["preemptionMode"] == "Enabled", "the CRD schema keeps the field"
        Reconciler(session, Settings("ops")).reconcile_all()
        cm = session.http.get("/api/v1/namespaces/ops/configmaps/scheduler-config").json()
        status = session.http.get("/apis/nodetopology.openshift.io/v1/numaresourcesschedulers/numaresourcesscheduler")
        conditions = {c["type"]: c for c in status.json()["status"]["conditions"]}
    args = yaml.safe_load(next(iter(cm["data"].values())))["profiles"][0]["pluginConfig"][0]["args"]
    assert args["preemptionMode"] == "Enabled" and args["scoringStrategy"] == {"type": "BalancedAllocation"}
    assert args["cache"]["informerMode"] == "Shared"
    informer = conditions["DedicatedInformerActive"]
    assert (informer["status"], informer["reason"]) == ("False", "SharedInformer")
    assert conditions["Progressing"]["status"] == "True", "the base conditions are still there"


def test_set_condition_moves_the_transition_time_only_on_a_flip() -> None:
    from knuma.operator.conditions import set_condition

    first = set_condition([], "DedicatedInformerActive", True, "DedicatedInformer", "", 1, "t1")
    same = set_condition(first, "DedicatedInformerActive", True, "DedicatedInformer", "again", 2, "t2")
    flipped = set_condition(same, "DedicatedInformerActive", False, "SharedInformer", "", 3, "t3")
    assert [c["lastTransitionTime"] for c in (first[0], same[0], flipped[0])] == ["t1", "t1", "t3"]
    assert len(flipped) == 1 and flipped[0]["observedGeneration"] == 3


def test_the_scheduler_qos_request_annotation_makes_the_scheduler_pod_guaranteed() -> None:
    def scheduler_resources(annotations: dict[str, str]) -> dict[str, Any]:
        owner = {**OWNER, "metadata": {"name": "numaresourcesscheduler", "uid": "u", "annotations": annotations}}
        objects = scheduler_objects(owner, parse_scheduler_spec({}), 1, "ops")
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        resources: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
        return resources

    annotation = "config.numa-operator.openshift.io/scheduler-qos-request"
    guaranteed = scheduler_resources({annotation: "guaranteed"})
    assert guaranteed["requests"] == guaranteed["limits"] == {"cpu": "600m", "memory": "1200Mi"}
    for other in ({}, {annotation: "Guaranteed"}, {annotation: "burstable"}):  # upstream compares the exact value
        burstable = scheduler_resources(other)
        assert burstable["requests"] != burstable["limits"]
