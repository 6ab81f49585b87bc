"""Pod constraints that kube-scheduler honours and knuma does not, so the daemon can say so (an event and a log line)
instead of silently placing the pod as if they were not there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from knuma.api.pod import Pod

__all__ = ["unsupported_constraints"]


def unsupported_constraints(pod: Pod) -> list[str]:
    """What in the pod's spec knuma ignores, each as `what (field path)`; empty when nothing is ignored.

    - persistent volume claims, also generic ephemeral volumes (VolumeBinding, VolumeZone, NodeVolumeLimits: volume
      topology is not checked and `WaitForFirstConsumer` claims are not bound by knuma).

    Resource claims (DynamicResources), pod affinity and anti-affinity (InterPodAffinity) and topology spread
    constraints (PodTopologySpread) are supported.
    """
    spec = pod.spec
    found: list[str] = []
    volumes = spec.get("volumes")
    if isinstance(volumes, Sequence) and not isinstance(volumes, str):
        for index, volume in enumerate(volumes):
            if not isinstance(volume, Mapping):
                continue
            for kind in ("persistentVolumeClaim", "ephemeral"):
                if volume.get(kind):
                    name = volume.get("name", index)
                    found.append(f"volume {name} (spec.volumes[{index}].{kind}): volume topology and binding")
    return found
