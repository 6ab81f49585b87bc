"""Topology hints and the Topology Manager's hint merge (kubelet `topologymanager/policy*.go`).

A NUMA affinity is an `int` bit mask (bit i = NUMA node i). The kubelet merges hints by walking the cross product of
every resource's hint list; that is up to 255^k permutations on an 8-NUMA machine. The merge's comparison is a total
order on (preferred, mask), so the best hint is the minimum of a key over the set of reachable merged hints, which
this module computes with set operations instead. The result is identical to the kubelet's; tests check it against a
literal cross-product implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from knuma.api.nrt import Policy

__all__ = [
    "Hint",
    "HintLists",
    "bits",
    "hints_of",
    "iterate_masks",
    "mask_of",
    "mask_sums",
    "merge",
    "narrower",
    "reachable_masks",
]

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


_INTERNED: tuple[dict[int, Hint], dict[int, Hint]] = ({}, {})
"""Hints by mask, not preferred and preferred: shared by every hint list (a hint is immutable)."""
_INTERNED_MAX = 1 << 18


def hints_of(masks: Iterable[int], preferred_width: int) -> list[Hint]:
    """A hint for each mask, preferred when it is `preferred_width` NUMA nodes wide (the providers' rule), taken
    from a table instead of built: a 16-NUMA provider returns up to 65,535 hints, and building them took longer than
    choosing the masks."""
    out = []
    for mask in masks:
        preferred = mask.bit_count() == preferred_width
        interned = _INTERNED[preferred]
        hint = interned.get(mask)
        if hint is None:
            if len(interned) >= _INTERNED_MAX:
                interned.clear()
            hint = interned[mask] = Hint(mask, preferred)
        out.append(hint)
    return out


def mask_sums(masks: Sequence[int], per_id: Mapping[int, int]) -> dict[int, int]:
    """`per_id` summed over each mask's NUMA ids, for `masks` narrowest first (as `iterate_masks` lists them): one
    addition a mask, from the mask without its lowest NUMA id, instead of a sum over its ids (65,535 masks of up to
    16 ids a resource on a 16-NUMA machine)."""
    sums = {0: 0}
    for mask in masks:
        lowest = mask & -mask
        sums[mask] = sums[mask ^ lowest] + per_id.get(lowest.bit_length() - 1, 0)
    return sums


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
    reachable = reachable_masks([{default if h.mask is None else h.mask for h in hints} for hints in lists], default)
    reachable.discard(0)
    if not reachable:
        return Hint(default, False)
    target = _best_non_preferred_count(lists)

    def non_preferred_class(count: int) -> tuple[int, int]:
        if count == target:
            return (0, 0)
        if count < target:
            return (1, -count)
        return (2, 0)

    # the class decides first; the fitter (distances under prefer-closest) only among the masks of the best class
    best_class = min(non_preferred_class(count) for count in {mask.bit_count() for mask in reachable})
    contenders = [mask for mask in reachable if non_preferred_class(mask.bit_count()) == best_class]
    return Hint(min(contenders, key=fitter), False)


DENSE_FROM = 10
"""NUMA nodes from which `reachable_masks` works on the whole subset lattice instead of sets of masks."""

DENSE_MASKS_FROM = 4095
"""Masks (12 NUMA nodes) from which the hint providers select masks on a `knuma.topology.masktable.MaskTable`;
below, the Python walk is as fast (and numpy is not imported: the exporter does without it)."""


def reachable_masks(options: Sequence[set[int]], default: int, *, dense: bool | None = None) -> set[int]:
    """Every `default & o1 & o2 & ...` with one `o` from each set of `options`: the merged affinities of the
    cross product `iterateAllProviderTopologyHints` walks.

    Set by set, this is |reachable| x |options| ANDs per list, which on a 16-NUMA machine (up to 65,535 masks each)
    ran for minutes for one pod. From `DENSE_FROM` NUMA nodes (or with `dense`) it is computed on the subset lattice
    instead, O(n 2^n) per list: with `F^(S)` the number of masks of a family containing S (the superset zeta
    transform), `a & b` contains S exactly when both `a` and `b` do, so the pairs whose AND contains S number
    `A^(S) B^(S)`, and the Moebius transform of that product counts the pairs whose AND is exactly S."""
    ids = bits(default)
    if dense is None:
        dense = len(ids) >= DENSE_FROM
    if not dense:
        reachable = {default}
        for family in options:
            reachable = {r & o for r in reachable for o in family}
        return reachable
    import numpy as np

    size = 1 << len(ids)
    position = {numa_id: index for index, numa_id in enumerate(ids)}
    shift = ids[0] if ids == tuple(range(ids[0], ids[0] + len(ids))) else None  # NUMA ids without gaps

    def compact(mask: int) -> int:
        if shift is not None:
            return (mask & default) >> shift
        return sum(1 << position[numa_id] for numa_id in bits(mask & default))

    def expand(index: int) -> int:
        if shift is not None:
            return index << shift
        return sum(1 << ids[i] for i in range(len(ids)) if index >> i & 1)

    def superset_sums(values: np.ndarray, sign: int) -> np.ndarray:
        out = values.copy()
        for bit in range(len(ids)):
            view = out.reshape(-1, 2, 1 << bit)
            view[:, 0, :] += sign * view[:, 1, :]
        return out

    reach = np.zeros(size, dtype=np.int64)
    reach[size - 1] = 1
    for family in options:
        present = np.zeros(size, dtype=np.int64)
        present[[compact(mask) for mask in family]] = 1
        pairs = superset_sums(superset_sums(reach, 1) * superset_sums(present, 1), -1)
        reach = (pairs > 0).astype(np.int64)
    return {expand(index) for index in np.flatnonzero(reach).tolist()}


def _best_non_preferred_count(lists: HintLists) -> int:
    """`BestNonPreferredAffinityCount`: the widest of the resources' narrowest hints."""
    best = 0
    for hints in lists:
        widths = [h.mask.bit_count() for h in hints if h.mask is not None]
        if widths:
            best = max(best, min(widths))
    return best
