"""Fuzzing the scheduler configuration reader: a valid `KubeSchedulerConfiguration` with every plugin's arguments,
mutated at any depth, is read or refused with a `SchedulerConfigError` that names the file, never another exception
(a daemon that crashes on a typo in its ConfigMap restarts in a loop without saying why)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from knuma.scheduler.config.load import build_profiles, parse_config
from knuma.scheduler.config.model import SchedulerConfigError
from tests.strategies import mutations

VALID: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": True, "resourceName": "numa", "resourceNamespace": "kube-system"},
    "percentageOfNodesToScore": 50,
    "profiles": [
        {
            "schedulerName": "topology-aware-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch", "weight": 2}]},
                "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeResourceTopologyMatch",
                    "args": {
                        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2}]},
                        "cacheResyncPeriodSeconds": 5,
                        "cache": {"foreignPodsDetect": "All", "resyncMethod": "Autodetect"},
                    },
                },
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "ignoredResources": ["example.com/foo"],
                        "scoringStrategy": {
                            "type": "RequestedToCapacityRatio",
                            "resources": [{"name": "cpu", "weight": 1}],
                            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]},
                        },
                    },
                },
                {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu", "weight": 1}]}},
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}},
                {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10}},
                {"name": "DynamicResources", "args": {"bindingTimeout": "60s"}},
            ],
        },
        {"schedulerName": "node-level", "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}},
    ],
}


def test_the_seed_document_is_valid() -> None:
    profiles = build_profiles(parse_config(VALID, "sched.yaml"))
    assert set(profiles) == {"topology-aware-scheduler", "node-level"}


@settings(max_examples=300, deadline=None)
@given(mutations(VALID))
def test_a_mutated_configuration_is_read_or_refused_with_its_path(raw: Any) -> None:
    if not isinstance(raw, dict):
        return
    try:
        config = parse_config(raw, "sched.yaml")
    except SchedulerConfigError as err:
        assert "sched.yaml" in str(err)
        return
    build_profiles(config)
