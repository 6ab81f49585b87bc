"""Where the kubelet puts a pod's exclusive requests on many single-numa-node nodes at once, in a few array operations.

On a `single-numa-node` node without memory-manager groups, the Topology Manager admits a container (container scope)
or the whole pod (pod scope) when one NUMA zone holds every exclusive request, and the narrowest hint it merges is the
lowest such zone (`knuma.topology.kubelet.admit`; upstream `singleNumaNodePolicy.Merge` keeps the first narrowest
hint, and the hint providers list zones in ascending order). Container scope allocates the containers in order, each
from what the earlier ones left.

This module computes that for every evaluated node row from the per-zone free amounts (`[rows, zones]` per exclusive
resource column, usually views into the scheduler's row arrays, so nothing is copied) with one comparison per
requested column and one `argmax`: the cost of a new pod shape is a handful of passes over `rows x zones`, not a
Python loop over nodes. The result keeps per allocation step the chosen zone and the amounts, so the scores can read
the few zones a placement touches instead of rebuilding `[rows, zones, columns]` arrays.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Step", "ZonePlacement", "first_true", "padded_zones", "place"]

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
IntpArray = npt.NDArray[np.intp]

_WORDS: dict[int, type[np.unsignedinteger[Any]]] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
"""Zone counts whose `[rows, zones]` bool rows read as one little-endian word (a zone per byte)."""


def padded_zones(zones: int) -> int:
    """The zone axis length to lay rows out with: up to 8 zones, the next power of two (so `first_true` reads each
    row as one word); more, as is."""
    return next((width for width in _WORDS if width >= zones), zones)


@dataclass(frozen=True)
class Step:
    """One allocation: the zone it takes from on each row, and per exclusive column the amount it takes there (`[rows]`
    each; rows where the pod does not fit take zone 0, meaningless)."""

    zone: IntpArray
    amounts: tuple[Int64Array | int, ...]
    """An int where it is the same on every row."""


@dataclass(frozen=True)
class ZonePlacement:
    """Per row: whether the pod fits (`fits`), and the allocation steps (container scope: one per container; pod
    scope rows take the pod's total in the first step and nothing in the others)."""

    fits: BoolArray
    steps: tuple[Step, ...]
    zones: int

    def touched(self, position: int) -> list[tuple[IntpArray, Int64Array | int, BoolArray]]:
        """Per step: its zone, the amount of exclusive column `position` all steps take from that zone, and whether
        the step is the first to name that zone on the row (sum over the first ones = sum over the zones touched).
        `[rows]` arrays: what a score reads without building `[rows, zones]` arrays."""
        if len(self.steps) == 1:
            step = self.steps[0]
            return [(step.zone, step.amounts[position], np.ones(len(step.zone), dtype=np.bool_))]
        out: list[tuple[IntpArray, Int64Array | int, BoolArray]] = []
        for i, step in enumerate(self.steps):
            total = sum(
                (s.amounts[position] * (s.zone == step.zone) for s in self.steps), start=np.zeros_like(step.zone)
            )
            first = np.ones(len(step.zone), dtype=np.bool_)
            for earlier in self.steps[:i]:
                first &= earlier.zone != step.zone
            out.append((step.zone, total.astype(np.int64), first))
        return out

    def taken(self, position: int) -> Int64Array:
        """`[rows, zones]`: the amount of exclusive column `position` the pod takes from each zone."""
        rows = len(self.fits)
        out: Int64Array = np.zeros((rows, self.zones), dtype=np.int64)
        every = np.arange(rows)
        for step in self.steps:
            out[every, step.zone] += step.amounts[position]
        return out


def place(
    valid: BoolArray,
    free: Sequence[Int64Array],
    managed: Sequence[BoolArray],
    pod_scope: BoolArray,
    total: Sequence[int],
    containers: Sequence[tuple[Sequence[int], Sequence[int]]],
) -> ZonePlacement:
    """The lowest zone that holds each container's (container scope rows) or the pod's (pod scope rows) exclusive
    requests, on every row.

    `valid` (`[rows, zones]`) marks the zones a row has; `free[j]` (`[rows, zones]`) is what zone holds of exclusive
    column `j` (whole CPUs in milli-CPUs for cpu), `managed[j]` (`[rows]`) whether the row's zones report column `j`
    at all (an unmanaged request needs nothing from the zone); `total[j]` is the pod's exclusive amount of column `j`,
    and `containers` gives per container the positions of the columns it requests and the amounts."""
    rows, zones = valid.shape
    everywhere = [bool(m.all()) for m in managed]
    need_total = tuple(
        amount if all_rows else np.where(m, amount, 0)
        for m, amount, all_rows in zip(managed, total, everywhere, strict=True)
    )
    if len(containers) <= 1 or pod_scope.all():  # one allocation: the pod's total, which is the one container's
        zone, fits = _lowest_zone(valid, free, range(len(free)), need_total)
        return ZonePlacement(fits, (Step(zone, need_total),), zones)
    every = np.arange(rows)
    fits = np.ones(rows, dtype=np.bool_)
    steps: list[Step] = []
    for positions, amounts in containers:
        need: list[Int64Array | int] = [0] * len(free)
        for position, amount in zip(positions, amounts, strict=True):
            need[position] = int(amount) if everywhere[position] else np.where(managed[position], int(amount), 0)
        ok = _holding(valid, free, positions, need)
        if positions and steps:
            # The earlier containers took from one zone each: there, what they left decides (one value per row,
            # read and written by flat index).
            cells = every * zones
            for earlier in steps:
                zone = earlier.zone
                at = cells + zone
                left_ok = np.ravel(valid).take(at)
                for position in positions:
                    used = sum((s.amounts[position] * (s.zone == zone) for s in steps), start=np.zeros_like(zone))
                    left_ok &= np.ravel(free[position]).take(at) - used >= need[position]
                ok.put(at, left_ok)
        zone, fit = first_true(ok)
        fits &= fit
        steps.append(Step(zone, tuple(need)))
    if pod_scope.any():
        pod_zone, pod_fits = _lowest_zone(valid, free, range(len(free)), need_total)
        fits = np.where(pod_scope, pod_fits, fits)
        first = Step(
            np.where(pod_scope, pod_zone, steps[0].zone),
            tuple(np.where(pod_scope, t, c) for t, c in zip(need_total, steps[0].amounts, strict=True)),
        )
        rest = [Step(s.zone, tuple(np.where(pod_scope, 0, a) for a in s.amounts)) for s in steps[1:]]
        steps = [first, *rest]
    return ZonePlacement(fits, tuple(steps), zones)


def _lowest_zone(
    valid: BoolArray, free: Sequence[Int64Array], positions: Sequence[int] | range, need: Sequence[Int64Array | int]
) -> tuple[IntpArray, BoolArray]:
    """Per row, the lowest valid zone whose free amounts cover `need` on the columns at `positions`, and whether
    there is one (zone 0 where not)."""
    return first_true(_holding(valid, free, positions, need))


def _holding(
    valid: BoolArray, free: Sequence[Int64Array], positions: Sequence[int] | range, need: Sequence[Int64Array | int]
) -> BoolArray:
    """`[rows, zones]`: the valid zones whose free amounts cover `need` on the columns at `positions`."""
    ok = valid
    for position in positions:
        amount = need[position]
        ok = ok & (free[position] >= (amount if isinstance(amount, int) else amount[:, None]))
    return ok


def first_true(ok: BoolArray) -> tuple[IntpArray, BoolArray]:
    """Per row of `ok` (`[rows, zones]`), the first True column (0 where none) and whether there is one.

    `np.argmax(axis=1)` walks the short rows one by one; with 1, 2, 4 or 8 zones a row of bools is one
    little-endian word instead, whose lowest set bit (`w & -w`, exact in float64) gives the zone: a few passes over
    `rows` values."""
    rows, zones = ok.shape
    word = _WORDS.get(zones)
    if word is None or sys.byteorder != "little" or not ok.flags.c_contiguous:
        zone: IntpArray = np.argmax(ok, axis=1)
        return zone, ok[np.arange(rows), zone]
    words = ok.view(word)[:, 0]
    lowest = words & (~words + word(1))
    exponent = np.frexp(lowest.astype(np.float64))[1]  # lowest = 2 ** (8 * zone) = 0.5 * 2 ** (8 * zone + 1)
    found: BoolArray = words != 0
    first: IntpArray = np.maximum(exponent - 1, 0) >> 3
    return first.astype(np.intp), found
