"""The pod-set fingerprint (`pfp0v001...`), byte-compatible with k8stopologyawareschedwg/podfingerprint v0.2.

The scheduler compares the fingerprint published in the NRT object with the one it computes from the pods it bound
to the node: equal fingerprints mean the NRT data already accounts for every pod the scheduler knows about.

Algorithm (podfingerprint `podfingerprint.go`): per pod `h = XXH64(name, seed=XXH64(namespace, seed=0))`; sort the
hashes ascending; feed each as 8 little-endian bytes to a fresh XXH64 (seed 0); the signature is `pfp0` + `v001` +
the 16 hex digits of the big-endian digest. Independent of pod order; the empty set gives `pfp0v001ef46db3751d8e999`.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable

import xxhash

from knuma.errors import InvalidInput

__all__ = ["PREFIX", "VERSION", "Method", "compute"]

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
            raise InvalidInput(
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
