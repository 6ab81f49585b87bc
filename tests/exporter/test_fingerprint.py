from __future__ import annotations

import random
import struct

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from knuma.api.fingerprint import Method, compute
from knuma.exporter.podset import fingerprint_pods, has_exclusive_resources
from knuma.podresources import Container, Devices, Memory, Pod


def test_known_values_from_the_reference() -> None:
    assert compute([]) == "pfp0v001ef46db3751d8e999"
    assert compute([("default", "app-1")]) == "pfp0v001894b86b7c51e552d"


def test_matches_the_upstream_byte_layout() -> None:
    """Recompute from the Go algorithm's definition: XXH64 over sorted little-endian per-pod hashes."""
    pods = [("kube-system", "coredns-1"), ("default", "app-1"), ("prod", "db-0")]
    per_pod = sorted(xxhash.xxh64(n.encode(), seed=xxhash.xxh64(ns.encode()).intdigest()).intdigest() for ns, n in pods)
    expected = xxhash.xxh64(b"".join(struct.pack("<Q", h) for h in per_pod)).digest().hex()
    assert compute(pods) == "pfp0v001" + expected
    assert len(compute(pods)) == 24


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20)


@given(st.lists(st.tuples(names, names), unique=True, max_size=30), st.randoms())
def test_independent_of_order(pods: list[tuple[str, str]], rnd: random.Random) -> None:
    shuffled = list(pods)
    rnd.shuffle(shuffled)
    assert compute(shuffled) == compute(pods)


def test_namespace_and_name_are_not_interchangeable() -> None:
    assert compute([("a", "b")]) != compute([("b", "a")])


@pytest.mark.parametrize(
    ("container", "exclusive"),
    [
        (Container("c"), False),
        (Container("c", cpu_ids=(3,)), True),
        (Container("c", memory=(Memory("memory", 1, (0,)),)), True),
        (Container("c", memory=(Memory("memory", 1, ()),)), False),
        (Container("c", devices=(Devices("x/y", ("d",), (1,)),)), True),
        (Container("c", devices=(Devices("x/y", ("d",), ()),)), False),
        (Container("c", devices=(Devices("x/y", (), (1,)),)), False),
    ],
)
def test_with_exclusive_resources_filter(container: Container, exclusive: bool) -> None:
    pod = Pod("ns", "p", (Container("other"), container))
    assert has_exclusive_resources(pod) is exclusive
    expected = compute([("ns", "p")] if exclusive else [])
    assert fingerprint_pods([pod]) == expected
    assert fingerprint_pods([pod], Method.ALL) == compute([("ns", "p")])


def test_method_parse() -> None:
    assert Method.parse("all") is Method.ALL
    with pytest.raises(ValueError, match="with-exclusive-resources"):
        Method.parse("some")
