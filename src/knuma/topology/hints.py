"""Topology hints and the Topology Manager's hint merge (kubelet `topologymanager/policy*.go`).

A NUMA affinity is an `int` bit mask (bit i = NUMA node i). The kubelet merges hints by walking the cross product of
every resource's hint list; that is up to 255^k permutations on an 8-NUMA machine. The merge's comparison is a total
order on (preferred, mask), so the best hint is the minimum of a key over the set of reachable merged hints, which
this module computes with set operations instead. The result is identical to the kubelet's; tests check it against a
literal cross-product implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from knuma.api.nrt import Policy

__all__ = ["Hint", "HintLists", "bits", "iterate_masks", "mask_of", "merge", "narrower"]

DISTANCE_UNKNOWN = 255


@dataclass(frozen=True, slots=True)
class Hint:
    """`TopologyHint`: `mask is None` means "no NUMA preference" (don't care)."""

    mask: int | None
    preferred: bool

    def numa_ids(self) -> tuple[int, ...] | None:
        return None if self.mask is None else bits(self.mask)


HintLists = Sequence[Sequence[Hint]]
"""One hint list per (provider, resource), already normalised as `filterProvidersHints` does."""

DONT_CARE = Hint(None, True)
IMPOSSIBLE = Hint(None, False)


def bits(mask: int) -> tuple[int, ...]:
    """The NUMA ids set in `mask`, ascending."""
    if mask < len(_BITS):
        return _BITS[mask]
    return _bits(mask)


def _bits(mask: int) -> tuple[int, ...]:
    out = []
    index = 0
    while mask:
        if mask & 1:
            out.append(index)
        mask >>= 1
        index += 1
    return tuple(out)


_BITS = tuple(_bits(mask) for mask in range(1 << 8))
"""`bits` of every mask of up to 8 NUMA nodes (the kubelet's default `max-allowable-numa-nodes`), looked up: admission
asks for them millions of times in a simulation."""


def mask_of(ids: Sequence[int]) -> int:
    mask = 0
    for numa_id in ids:
        mask |= 1 << numa_id
    return mask


def iterate_masks(numa_ids: Sequence[int]) -> list[int]:
    """Every non-empty combination of `numa_ids`, narrowest first (kubelet `bitmask.IterateBitMasks` order)."""
    return list(_iterate_masks(tuple(sorted(numa_ids))))


@lru_cache(maxsize=256)
def _iterate_masks(ids: tuple[int, ...]) -> tuple[int, ...]:
    """`iterate_masks` of sorted ids, computed once per NUMA layout (255 masks on an 8-NUMA machine, asked for at
    every memory-manager allocation)."""
    masks: list[int] = []

    def combine(start: int, k: int, mask: int) -> None:
        if k == 0:
            masks.append(mask)
            return
        for i in range(start, len(ids) - k + 1):
            combine(i + 1, k - 1, mask | (1 << ids[i]))

    for width in range(1, len(ids) + 1):
        combine(0, width, 0)
    return tuple(masks)


def narrower(a: int, b: int) -> bool:
    """`a.IsNarrowerThan(b)`: fewer NUMA nodes, then the lower mask value."""
    ca, cb = a.bit_count(), b.bit_count()
    return a < b if ca == cb else ca < cb


def normalise(provider_hints: Mapping[str, Sequence[Hint] | None]) -> list[list[Hint]]:
    """`filterProvidersHints` for one provider: no hints at all = don't care; a resource with `None` = don't care;
    a resource with an empty list = impossible."""
    if not provider_hints:
        return [[DONT_CARE]]
    out: list[list[Hint]] = []
    for hints in provider_hints.values():
        if hints is None:
            out.append([DONT_CARE])
        elif not hints:
            out.append([IMPOSSIBLE])
        else:
            out.append(list(hints))
    return out


def _single_numa_only(lists: HintLists) -> list[list[Hint]]:
    """`filterSingleNumaHints`: keep preferred hints that are don't-care or exactly one NUMA node."""
    return [[h for h in hints if h.preferred and (h.mask is None or h.mask.bit_count() == 1)] for hints in lists]


def merge(
    lists: HintLists,
    numa_ids: Sequence[int],
    policy: Policy,
    *,
    prefer_closest: bool = False,
    distances: Mapping[int, Mapping[int, int]] | None = None,
) -> tuple[Hint, bool]:
    """The policy's `Merge`: the best merged hint and whether the pod (or container) is admitted."""
    default = mask_of(numa_ids)
    if policy is Policy.NONE:
        return Hint(None, False), True  # nonePolicy.Merge: `TopologyHint{}` (nil affinity, not preferred), admit
    if policy is Policy.SINGLE_NUMA_NODE:
        lists = _single_numa_only(lists)
    use_closest = prefer_closest and policy is not Policy.SINGLE_NUMA_NODE and distances is not None
    best = _best_merged(lists, default, _closest_key(distances or {}) if use_closest else None)
    if policy is Policy.SINGLE_NUMA_NODE and best.mask == default:
        best = Hint(None, best.preferred)
    if policy is Policy.BEST_EFFORT:
        return best, True
    return best, best.preferred


def _closest_key(distances: Mapping[int, Mapping[int, int]]) -> Callable[[int], tuple[int, float, int]]:
    def key(mask: int) -> tuple[int, float, int]:
        ids = bits(mask)
        total = sum(distances.get(a, {}).get(b, DISTANCE_UNKNOWN) for a in ids for b in ids)
        pairs = len(ids) * len(ids)
        return (len(ids), total / pairs if pairs else 0.0, mask)

    return key


def _best_merged(lists: HintLists, default: int, closest: Callable[[int], tuple[int, float, int]] | None) -> Hint:
    """`HintMerger.Merge` without enumerating the cross product."""
    if any(len(hints) == 0 for hints in lists):
        return Hint(default, False)  # no permutation at all
    fitter = closest or (lambda m: (m.bit_count(), 0.0, m))

    # Preferred merged hints: every hint preferred and all non-nil affinities equal. Either every list picks a
    # preferred don't-care (merged = default), or some mask m is picked by at least one list and every other list
    # picks m or a preferred don't-care.
    per_list = [{h.mask for h in hints if h.preferred} for hints in lists]
    if all(per_list):
        concrete = {m for masks in per_list for m in masks if m is not None}
        candidates = {m & default for m in concrete if all(m in masks or None in masks for masks in per_list)}
        if all(None in masks for masks in per_list):
            candidates.add(default)
        candidates.discard(0)
        if candidates:
            return Hint(min(candidates, key=fitter), True)

    # Otherwise every permutation is non-preferred: the reachable merged masks are ANDs of one mask per list.
    reachable = {default}
    for hints in lists:
        options = {default if h.mask is None else h.mask for h in hints}
        reachable = {r & o for r in reachable for o in options}
    reachable.discard(0)
    if not reachable:
        return Hint(default, False)
    target = _best_non_preferred_count(lists)

    def non_preferred_key(mask: int) -> tuple[int, int, tuple[int, float, int]]:
        count = mask.bit_count()
        if count == target:
            return (0, 0, fitter(mask))
        if count < target:
            return (1, -count, fitter(mask))
        return (2, 0, fitter(mask))

    return Hint(min(reachable, key=non_preferred_key), False)


def _best_non_preferred_count(lists: HintLists) -> int:
    """`BestNonPreferredAffinityCount`: the widest of the resources' narrowest hints."""
    best = 0
    for hints in lists:
        widths = [h.mask.bit_count() for h in hints if h.mask is not None]
        if widths:
            best = max(best, min(widths))
    return best
