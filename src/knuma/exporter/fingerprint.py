"""The pod-set fingerprint (`pfp0v001...`), byte-compatible with k8stopologyawareschedwg/podfingerprint v0.2.

The scheduler compares the fingerprint published in the NRT object with the one it computes from the pods it bound
to the node: equal fingerprints mean the NRT data already accounts for every pod the scheduler knows about.

Algorithm (podfingerprint `podfingerprint.go`): per pod `h = XXH64(name, seed=XXH64(namespace, seed=0))`; sort the
hashes ascending; feed each as 8 little-endian bytes to a fresh XXH64 (seed 0); the signature is `pfp0` + `v001` +
the 16 hex digits of the big-endian digest. Independent of pod order; the empty set gives `pfp0v001ef46db3751d8e999`.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import struct
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import xxhash

from knuma.exporter.podresources.model import Pod

__all__ = [
    "PREFIX",
    "VERSION",
    "Method",
    "compute",
    "fingerprint_pods",
    "has_exclusive_resources",
    "select_pods",
    "status_document",
    "write_status",
]

PREFIX = "pfp0"
VERSION = "v001"


class Method(enum.StrEnum):
    """Which pods enter the fingerprint (attribute `nodeTopologyPodsFingerprintMethod`)."""

    ALL = "all"
    WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"

    @classmethod
    def parse(cls, value: str) -> Method:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"unknown pods fingerprint method {value!r}; expected all or with-exclusive-resources"
            ) from None


def compute(pods: Iterable[tuple[str, str]]) -> str:
    """The signature of a set of `(namespace, name)` pairs."""
    hashes = sorted(
        xxhash.xxh64_intdigest(name.encode(), seed=xxhash.xxh64_intdigest(ns.encode())) for ns, name in pods
    )
    digest = xxhash.xxh64()
    for value in hashes:
        digest.update(struct.pack("<Q", value))
    return PREFIX + VERSION + digest.hexdigest()


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
