"""Which pods the exporter's fingerprint covers, and RTE's fingerprint status file.

The fingerprint itself (`knuma.api.fingerprint`) is the contract between exporter and scheduler; choosing the pods
from what the kubelet's PodResources API lists is the exporter's side of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from knuma.api.fingerprint import Method, compute
from knuma.podresources.model import Pod

__all__ = ["fingerprint_pods", "has_exclusive_resources", "select_pods", "status_document", "write_status"]


def has_exclusive_resources(pod: Pod) -> bool:
    """RTE's `numalocality` filter: exclusive CPUs, NUMA-pinned memory, or NUMA-local devices in some container."""
    for container in pod.containers:
        if container.cpu_ids:
            return True
        if any(memory.numa_ids for memory in container.memory):
            return True
        if any(devices.device_ids and devices.numa_ids for devices in container.devices):
            return True
    return False


def select_pods(pods: Iterable[Pod], method: Method) -> list[Pod]:
    if method is Method.ALL:
        return list(pods)
    return [pod for pod in pods if has_exclusive_resources(pod)]


def fingerprint_pods(pods: Sequence[Pod], method: Method = Method.WITH_EXCLUSIVE_RESOURCES) -> str:
    return compute((pod.namespace, pod.name) for pod in select_pods(pods, method))


def status_document(node_name: str, computed: str, pods: Iterable[tuple[str, str]]) -> dict[str, object]:
    """RTE's fingerprint status dump (`--pods-fingerprint-status-file`): which pods the published value covers, to
    compare with the scheduler's `missing NodeTopology podset fingerprint` / mismatch logs."""
    return {
        "fingerprintComputed": computed,
        "pods": [{"Namespace": ns, "Name": name} for ns, name in pods],
        "nodeName": node_name,
    }


def write_status(path: str | os.PathLike[str], document: Mapping[str, object]) -> None:
    """Write atomically (temporary file + rename), so a reader never sees half a document."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(document, out)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
