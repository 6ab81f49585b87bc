"""The hint merge against a literal transcription of the kubelet's `topologymanager/policy*.go`.

`hints.merge` computes the merge with set operations; `kubelet_merge` below walks the full cross product exactly as
`HintMerger.Merge` does (mergePermutation, compare with cases 1/2/3a/3b/3ca/3cb/3cc, CompareNUMAAffinityMasks with
Narrowest or Closest), then applies each policy's admit rule. Hypothesis checks that both agree.
"""

from __future__ import annotations

import functools
import itertools
import operator
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knuma.api.nrt import Policy
from knuma.topology import hints as hints_module
from knuma.topology.hints import Hint, bits, iterate_masks, mask_of, merge, narrower, normalise, reachable_masks

Lists = list[list[Hint]]
Distances = dict[int, dict[int, int]]
NO_D: Distances = {}

# --------------------------------------------------------------------------------------------------------------------
# Reference implementation: a line-by-line transcription of kubelet pkg/kubelet/cm/topologymanager/policy.go,
# policy_best_effort.go, policy_restricted.go, policy_single_numa_node.go, bitmask/bitmask.go and topology.go.
# --------------------------------------------------------------------------------------------------------------------


def _count(mask: int | None) -> int:
    return bin(mask or 0).count("1")


def _is_narrower_than(a: int | None, b: int | None) -> bool:
    a, b = a or 0, b or 0
    # bitmask.IsNarrowerThan: fewer bits; same count -> IsLessThan (lower value).
    if _count(a) == _count(b):
        return a < b
    return _count(a) < _count(b)


def _average_distance(distances: Distances, mask: int) -> float:
    # NUMADistances.CalculateAverageFor
    if _count(mask) == 0:
        return 0
    total = 0.0
    count = 0.0
    for n1 in bits(mask):
        for n2 in bits(mask):
            total += float(distances[n1][n2])
            count += 1
    return total / count


def _narrowest(m1: int | None, m2: int | None) -> int | None:
    return m1 if _is_narrower_than(m1, m2) else m2


def _closest(distances: Distances, m1: int | None, m2: int | None) -> int | None:
    m1, m2 = m1 or 0, m2 or 0
    # NUMAInfo.Closest
    if _count(m1) != _count(m2):
        return _narrowest(m1, m2)
    d1 = _average_distance(distances, m1)
    d2 = _average_distance(distances, m2)
    if d1 == d2:
        return m1 if m1 < m2 else m2
    return m1 if d1 < d2 else m2


def _merge_permutation(default: int, permutation: tuple[Hint, ...]) -> Hint:
    preferred = True
    affinities = []
    for hint in permutation:
        if hint.mask is not None:
            affinities.append(hint.mask)
            if hint.mask != affinities[0]:
                preferred = False
        if not hint.preferred:
            preferred = False
    merged = default
    for mask in affinities:
        merged &= mask
    return Hint(merged, preferred)


def _max_of_min_affinity_counts(lists: Lists) -> int:
    best = 0
    for hints in lists:
        narrowest: Hint | None = None
        for hint in hints:
            if hint.mask is None:
                continue
            if narrowest is None:
                narrowest = hint
            if _is_narrower_than(hint.mask, narrowest.mask):
                narrowest = hint
        if narrowest is None:
            continue
        best = max(best, _count(narrowest.mask))
    return best


def kubelet_hint_merger(
    lists: Lists, numa_ids: list[int], policy_name: Policy, prefer_closest: bool = False, distances: Distances = NO_D
) -> Hint:
    default = mask_of(numa_ids)
    best_non_preferred = _max_of_min_affinity_counts(lists)

    def compare_masks(current: Hint, candidate: Hint) -> Hint:
        if candidate.mask == current.mask:
            return current
        if prefer_closest and policy_name != Policy.SINGLE_NUMA_NODE:
            chosen = _closest(distances, current.mask, candidate.mask)
        else:
            chosen = _narrowest(current.mask, candidate.mask)
        return candidate if chosen == candidate.mask else current

    def compare(current: Hint | None, candidate: Hint) -> Hint | None:
        if _count(candidate.mask) == 0:
            return current
        if current is None:
            return candidate
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return compare_masks(current, candidate)
        cur, cand = _count(current.mask), _count(candidate.mask)
        if cur > best_non_preferred:  # case 1
            return compare_masks(current, candidate)
        if cur == best_non_preferred:  # case 2
            if cand != best_non_preferred:
                return current
            return compare_masks(current, candidate)
        if cand > best_non_preferred:  # case 3a
            return current
        if cand == best_non_preferred:  # case 3b
            return candidate
        if cand > cur:  # case 3ca
            return candidate
        if cand < cur:  # case 3cb
            return current
        return compare_masks(current, candidate)  # case 3cc

    best = None
    for permutation in itertools.product(*lists):  # iterateAllProviderTopologyHints
        best = compare(best, _merge_permutation(default, permutation))
    if best is None:
        best = Hint(default, False)
    return best


def filter_single_numa_hints(lists: Lists) -> Lists:
    out = []
    for hints in lists:
        filtered = []
        for hint in hints:
            if hint.mask is None and hint.preferred:
                filtered.append(hint)
            if hint.mask is not None and _count(hint.mask) == 1 and hint.preferred:
                filtered.append(hint)
        out.append(filtered)
    return out


def kubelet_merge(
    lists: Lists, numa_ids: list[int], policy: Policy, prefer_closest: bool = False, distances: Distances = NO_D
) -> tuple[Hint, bool]:
    """`policy.Merge(providersHints)` for each policy, on already-filtered (`filterProvidersHints`) lists."""
    if policy is Policy.NONE:
        return Hint(None, False), True  # nonePolicy.Merge: TopologyHint{}, admit
    if policy is Policy.SINGLE_NUMA_NODE:
        lists = filter_single_numa_hints(lists)
    best = kubelet_hint_merger(lists, numa_ids, policy, prefer_closest, distances)
    if policy is Policy.SINGLE_NUMA_NODE and best.mask == mask_of(numa_ids):
        best = Hint(None, best.preferred)
    if policy is Policy.BEST_EFFORT:
        return best, True
    return best, best.preferred  # restricted and single-numa-node: canAdmitPodResult


def filter_providers_hints(providers: list[dict[str, list[Hint] | None]]) -> Lists:
    out = []
    for hints in providers:
        if not hints:
            out.append([Hint(None, True)])
            continue
        for resource in hints:
            resource_hints = hints[resource]
            if resource_hints is None:
                out.append([Hint(None, True)])
            elif len(resource_hints) == 0:
                out.append([Hint(None, False)])
            else:
                out.append(list(resource_hints))
    return out


# --------------------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------------------

POLICIES = [Policy.BEST_EFFORT, Policy.RESTRICTED, Policy.SINGLE_NUMA_NODE, Policy.NONE]


@st.composite
def hint_problems(draw, contiguous=None):
    count = draw(st.integers(2, 4))
    if contiguous is None:
        contiguous = draw(st.booleans())
    numa_ids = list(range(count)) if contiguous else sorted(draw(st.sets(st.integers(0, 5), min_size=2, max_size=4)))
    universe = max(numa_ids) + 1
    masks = st.integers(1, (1 << universe) - 1)  # may stray outside the node's NUMA ids, as the AND handles
    hint = st.builds(Hint, st.one_of(st.none(), masks, masks), st.booleans())
    lists = draw(st.lists(st.lists(hint, min_size=0, max_size=4), min_size=1, max_size=3))
    return lists, numa_ids


@st.composite
def distance_tables(draw, numa_ids):
    table: Distances = {}
    for a in numa_ids:
        for b in numa_ids:
            if a == b:
                table.setdefault(a, {})[b] = 10
            elif b in table and a in table[b]:
                table.setdefault(a, {})[b] = table[b][a]
            else:
                table.setdefault(a, {})[b] = draw(st.sampled_from([11, 12, 20, 21, 30]))
    return table


# --------------------------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(problem=hint_problems(), policy=st.sampled_from(POLICIES))
def test_merge_equals_kubelet_cross_product(problem, policy):
    lists, numa_ids = problem
    assert merge(lists, numa_ids, policy) == kubelet_merge(lists, numa_ids, policy)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), policy=st.sampled_from(POLICIES))
def test_merge_equals_kubelet_with_prefer_closest(data, policy):
    lists, numa_ids = data.draw(hint_problems())
    distances = data.draw(distance_tables(numa_ids))
    expected = kubelet_merge(lists, numa_ids, policy, prefer_closest=True, distances=distances)
    assert merge(lists, numa_ids, policy, prefer_closest=True, distances=distances) == expected


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_reachable_masks_on_the_subset_lattice_equal_the_set_walk(data):
    """The zeta/Moebius computation of every AND of one mask per family (used from 10 NUMA nodes on) gives the same
    set as ANDing family by family, also for NUMA ids with gaps."""
    numa_ids = data.draw(st.lists(st.integers(0, 9), min_size=1, max_size=7, unique=True).map(sorted))
    default = mask_of(numa_ids)
    subsets = st.sets(st.sampled_from(numa_ids), min_size=1).map(lambda ids: mask_of(sorted(ids)))
    families = data.draw(st.lists(st.sets(subsets, min_size=1, max_size=12), min_size=1, max_size=4))
    walked = reachable_masks(families, default, dense=False)
    assert reachable_masks(families, default, dense=True) == walked
    literal = {functools.reduce(operator.and_, choice, default) for choice in itertools.product(*families)}
    assert walked == literal


@settings(max_examples=150, deadline=None)
@given(data=st.data(), policy=st.sampled_from(POLICIES))
def test_merge_on_the_subset_lattice_equals_kubelet_cross_product(data, policy):
    lists, numa_ids = data.draw(hint_problems())
    distances = data.draw(distance_tables(numa_ids))
    closest = data.draw(st.booleans())
    expected = kubelet_merge(lists, numa_ids, policy, prefer_closest=closest, distances=distances)
    with mock.patch.object(hints_module, "DENSE_FROM", 1):
        assert merge(lists, numa_ids, policy, prefer_closest=closest, distances=distances) == expected


@pytest.mark.timeout(120)  # the set walk ran for minutes here
def test_a_sixteen_numa_merge_without_a_preferred_hint_finishes():
    """On 16 NUMA nodes every provider offers up to 65,535 masks; with no preferred merged hint the set walk ANDed
    them pairwise (`knuma schedule` ran 8 minutes for one restricted pod). Three resources of the shape of that pod:
    CPUs on 7 or more nodes, memory on 2 or more, a device on 3 or more."""
    numa_ids = list(range(16))
    every = iterate_masks(numa_ids)
    lists = [
        [Hint(m, m.bit_count() == 7) for m in every if m.bit_count() >= 7],
        [Hint(m, m.bit_count() == 2) for m in every if m.bit_count() >= 2],
        [Hint(m, m.bit_count() == 3) for m in every if m.bit_count() >= 3 and m & 1],
    ]
    best, admitted = merge(lists, numa_ids, Policy.RESTRICTED)
    assert (best.preferred, admitted) == (False, False)
    assert best.mask is not None and best.mask.bit_count() == 7 and best.mask & 1


@settings(max_examples=200, deadline=None)
@given(problem=hint_problems(contiguous=True), policy=st.sampled_from(POLICIES))
def test_merge_equals_kubelet_on_realistic_provider_hints(problem, policy):
    """Provider-shaped lists: concrete masks only (no nil mixed in), as the CPU, memory and device managers emit."""
    lists, numa_ids = problem
    lists = [[h for h in hints if h.mask is not None] or [Hint(None, True)] for hints in lists]
    assert merge(lists, numa_ids, policy) == kubelet_merge(lists, numa_ids, policy)


@settings(max_examples=200, deadline=None)
@given(
    providers=st.lists(
        st.dictionaries(
            st.sampled_from(["cpu", "memory", "hugepages-2Mi", "example.com/gpu"]),
            st.one_of(st.none(), st.lists(st.builds(Hint, st.integers(1, 3), st.booleans()), max_size=3)),
            max_size=3,
        ),
        max_size=3,
    )
)
def test_normalise_is_filter_providers_hints(providers):
    ours = [lst for provider in providers for lst in normalise(provider)]
    assert ours == filter_providers_hints(providers)


# --------------------------------------------------------------------------------------------------------------------
# Examples (kubelet policy_test.go style)
# --------------------------------------------------------------------------------------------------------------------

N2 = [0, 1]


def H(mask: int | None, preferred: bool = True) -> Hint:
    return Hint(mask, preferred)


def test_mixed_nil_and_concrete_preferred_hints_pick_the_concrete_mask():
    """A preferred nil hint next to a preferred concrete one: the permutation (01, nil) is preferred and narrower
    than (nil, nil) = default. (Regression: the set-based merge used to return the default mask.)"""
    lists = [[H(None), H(0b01)], [H(None)]]
    assert merge(lists, N2, Policy.RESTRICTED) == (H(0b01), True)
    assert merge(lists, N2, Policy.RESTRICTED) == kubelet_merge(lists, N2, Policy.RESTRICTED)


def test_preferred_beats_narrower_non_preferred():
    lists = [[H(0b01, False), H(0b11)]]
    assert merge(lists, N2, Policy.BEST_EFFORT) == (H(0b11), True)
    assert merge(lists, N2, Policy.RESTRICTED) == (H(0b11), True)


def test_unequal_preferred_masks_merge_non_preferred():
    lists = [[H(0b01)], [H(0b10)]]
    # 01 & 10 == 0 is skipped; no candidate at all -> {default, false}
    assert merge(lists, N2, Policy.BEST_EFFORT) == (H(0b11, False), True)
    assert merge(lists, N2, Policy.RESTRICTED) == (H(0b11, False), False)
    assert merge(lists, N2, Policy.SINGLE_NUMA_NODE) == (H(None, False), False)


def test_empty_hint_list_means_no_permutation():
    assert merge([[], [H(0b01)]], N2, Policy.BEST_EFFORT) == (H(0b11, False), True)


def test_impossible_resource_is_non_preferred():
    assert merge([[H(None, False)], [H(0b01)]], N2, Policy.RESTRICTED) == (H(0b01, False), False)


def test_all_dont_care_is_default_mask_and_nil_for_single_numa_node():
    assert merge([[H(None)], [H(None)]], N2, Policy.RESTRICTED) == (H(0b11), True)
    assert merge([[H(None)], [H(None)]], N2, Policy.SINGLE_NUMA_NODE) == (H(None), True)


def test_single_numa_node_filters_multi_numa_hints():
    lists = [[H(0b11), H(0b01, False)]]
    assert merge(lists, N2, Policy.RESTRICTED) == (H(0b11), True)
    best, admit = merge(lists, N2, Policy.SINGLE_NUMA_NODE)
    assert not admit
    assert best == H(None, False)


def test_none_policy_admits_with_an_empty_hint():
    """nonePolicy.Merge returns `TopologyHint{}`: nil affinity, Preferred false."""
    assert merge([[]], N2, Policy.NONE) == (H(None, False), True)


def test_non_preferred_creeps_up_to_best_non_preferred_count():
    # Resource A's narrowest hint is 2 wide, so a 2-wide non-preferred merge beats a 1-wide one (cases 3b/3ca).
    numa = [0, 1, 2, 3]
    lists = [[H(0b0011, False), H(0b1100, False)], [H(0b0001, False), H(0b0011, False), H(0b1111, False)]]
    assert merge(lists, numa, Policy.BEST_EFFORT) == kubelet_merge(lists, numa, Policy.BEST_EFFORT)
    assert _count(merge(lists, numa, Policy.BEST_EFFORT)[0].mask) == 2


def test_prefer_closest_picks_lower_average_distance():
    numa = [0, 1, 2, 3]
    distances = {
        0: {0: 10, 1: 21, 2: 11, 3: 21},
        1: {0: 21, 1: 10, 2: 21, 3: 11},
        2: {0: 11, 1: 21, 2: 10, 3: 21},
        3: {0: 21, 1: 11, 2: 21, 3: 10},
    }
    lists = [[H(0b0011), H(0b0101)]]
    assert merge(lists, numa, Policy.RESTRICTED)[0] == H(0b0011)  # narrowest: lower mask
    best, _ = merge(lists, numa, Policy.RESTRICTED, prefer_closest=True, distances=distances)
    assert best == H(0b0101)
    # ignored for single-numa-node
    single = [[H(0b0001), H(0b0100)]]
    assert merge(single, numa, Policy.SINGLE_NUMA_NODE, prefer_closest=True, distances=distances)[0] == H(0b0001)


def test_bits_and_masks():
    assert bits(0b1010) == (1, 3)
    assert mask_of([0, 2]) == 0b101
    assert iterate_masks([0, 2, 3]) == [0b0001, 0b0100, 0b1000, 0b0101, 0b1001, 0b1100, 0b1101]
    assert narrower(0b100, 0b011)
    assert narrower(0b001, 0b010)
    assert not narrower(0b011, 0b100)


@pytest.mark.parametrize("policy", POLICIES)
def test_no_hint_lists_at_all(policy):
    assert merge([], N2, policy) == kubelet_merge([], N2, policy)
