"""unsupported_constraints: what the daemon must flag because knuma does not honour it."""

from __future__ import annotations

from typing import Any

from knuma.scheduler.daemon.unsupported import unsupported_constraints
from tests.scheduler.objects import pod


def test_plain_and_node_affinity_pods_have_none() -> None:
    assert unsupported_constraints(pod()) == []
    node_affinity: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    }
    assert unsupported_constraints(pod(affinity=node_affinity, nodeSelector={"a": "b"})) == []
    assert unsupported_constraints(pod(affinity={"podAffinity": {}}, volumes=[{"name": "tmp", "emptyDir": {}}])) == []


def test_each_unsupported_constraint_is_named_with_its_field() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    spec: dict[str, Any] = {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
            },
        },
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
    }
    assert unsupported_constraints(pod(**spec)) == [
        "volume data (spec.volumes[0].persistentVolumeClaim): volume topology and binding",
        "volume scratch (spec.volumes[1].ephemeral): volume topology and binding",
    ]  # resource claims, pod (anti-)affinity and topology spread constraints are supported
