"""The rejected pod's status as each kubelet version writes it (`kubelet.rejectPod`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from knuma.api.pod import Pod
from knuma.local.nodes.kubeletconfig import KUBELET_VERSION
from knuma.local.nodes.podstatus import SHUTDOWN_ANNOTATION, rejected_status, rejection_message, shutdown_of
from knuma.topology.kubelet import TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE

MANIFEST = {
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
}


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("v1.25.16", "Pod Resources cannot be allocated with Topology locality"),  # "Pod " + message
        ("v1.26.0", "Pod was rejected: Resources cannot be allocated with Topology locality"),  # kubernetes#112644
        ("v1.32.0", "Pod was rejected: Resources cannot be allocated with Topology locality"),
        ("v1.33.1-gke.100", "Pod was rejected: Resources cannot be allocated with Topology locality"),
    ],
)
def test_the_rejection_prefix_follows_the_kubelet_version(version: str, message: str) -> None:
    assert rejection_message(TOPOLOGY_AFFINITY_MESSAGE, version) == message


def test_the_qos_class_is_kept_since_1_32_and_the_simulated_kubelet_is_1_34() -> None:
    pod = Pod.from_manifest(MANIFEST)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    current = rejected_status(MANIFEST, pod, TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, now, KUBELET_VERSION)
    assert KUBELET_VERSION.startswith("v1.34.")
    assert (current["phase"], current["reason"], current["qosClass"]) == (
        "Failed",
        "TopologyAffinityError",
        "Guaranteed",
    )
    assert current["message"].startswith("Pod was rejected: ")
    old = rejected_status(MANIFEST, pod, TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, now, "v1.31.4")
    assert "qosClass" not in old  # kubernetes#128083 (1.32) stopped dropping it


def test_shutdown_durations_and_the_bundled_example() -> None:
    """`sim.knuma.io/shutdown`: how long a deleted pod's containers take to stop (0 when absent); a bad value is an
    error naming the annotation. `examples/up/slow-stop.yaml` asks for 8 s."""
    example = Path(__file__).resolve().parents[3] / "examples" / "up" / "slow-stop.yaml"
    assert shutdown_of(yaml.safe_load(example.read_text())) == 8.0
    assert shutdown_of({"metadata": {}}) == 0.0
    assert shutdown_of({"metadata": {"annotations": {SHUTDOWN_ANNOTATION: "1m30s"}}}) == 90.0
    with pytest.raises(ValueError, match=SHUTDOWN_ANNOTATION):
        shutdown_of({"metadata": {"annotations": {SHUTDOWN_ANNOTATION: "soon"}}})
