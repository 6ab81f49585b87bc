"""Every NUMA mask of a wide machine as numpy arrays, for hint generation over `DENSE_MASKS_FROM` masks and more (12
NUMA nodes and up): the providers' per-mask sums and tests as a few vectorised passes instead of one Python step a mask.

The kubelet's providers walk every mask (`bitmask.IterateBitMasks`); at 16 NUMA nodes that is 65,535 masks a
resource, which cost about 0.1 s a resource in Python. The table keeps the masks in the kubelet's order (narrowest
first, as `iterate_masks`), so what is selected comes out in the order the Python walk gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from knuma.topology.hints import iterate_masks

__all__ = ["MaskTable", "mask_table"]

_SUM_LIMIT = 1 << 62
"""Per-mask sums are int64: amounts whose total could pass this are summed in Python instead."""

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class MaskTable:
    """The masks of the NUMA ids `ids`, narrowest first."""

    ids: tuple[int, ...]
    masks: IntArray
    """Every non-empty mask, in `iterate_masks` order."""
    widths: IntArray
    """NUMA nodes in each mask."""
    compact: IntArray
    """Each mask with its NUMA ids renumbered 0..n-1: its index in the subset lattice `sums` builds."""

    def sums(self, per_id: Mapping[int, int]) -> IntArray | None:
        """`per_id` summed over each mask's NUMA ids (aligned with `masks`); None when a sum might not fit an int64
        (the caller sums exactly in Python)."""
        if sum(abs(per_id.get(n, 0)) for n in self.ids) >= _SUM_LIMIT:
            return None
        lattice = np.zeros(1 << len(self.ids), dtype=np.int64)
        for index, numa_id in enumerate(self.ids):
            value = per_id.get(numa_id, 0)
            if value:
                lattice.reshape(-1, 2, 1 << index)[:, 1, :] += value
        return lattice[self.compact]

    def holding(self, required: int) -> npt.NDArray[np.bool_]:
        """Which masks hold every NUMA id of `required`."""
        held: npt.NDArray[np.bool_] = (self.masks & required) == required
        return held

    @cached_property
    def positions(self) -> dict[int, int]:
        """Mask -> its index in `masks` (for the few masks looked up one by one: reusable memory)."""
        return {mask: index for index, mask in enumerate(self.masks.tolist())}


@lru_cache(maxsize=64)
def mask_table(ids: tuple[int, ...]) -> MaskTable:
    """The table of sorted NUMA ids `ids`, built once per NUMA layout."""
    masks = np.array(iterate_masks(ids), dtype=np.int64)
    widths = np.zeros(len(masks), dtype=np.int64)
    compact = np.zeros(len(masks), dtype=np.int64)
    for index, numa_id in enumerate(ids):
        has = (masks >> numa_id) & 1
        widths += has
        compact |= has << index
    return MaskTable(ids, masks, widths, compact)
