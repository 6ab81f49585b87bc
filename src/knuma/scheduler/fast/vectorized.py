"""The vectorised scheduling path: the default profile's Filter + Score for every node at once, in numpy, over a set
of nodes that changes while it runs. Decisions are exactly `schedule_one(default_profile(scoring), ...)`'s; tests
check that on random clusters with every strategy, and after random node updates, removals and reservations.

## API (what the scheduler daemon drives)

- `VectorizedScheduler(nodes: Sequence[NodeInfo] = (), scoring: ScoringStrategy | None = None, *,
  cache_shapes: int = CACHE_SHAPES, numa_weight: int = NUMA_WEIGHT, fit_weight: int = FIT_WEIGHT,
  balanced_weight: int = 0)`: `scoring` None
  is knuma's default (`profiles.default_scoring()`), and the weights default to `default_profile`'s (a profile's
  `score` weights; 0 leaves that plugin's score out).
- `upsert_node(info: NodeInfo) -> None`: add a node (a new last row) or replace its row in place, e.g. after a fresh
  NRT, a reservation change or a Node update. `info` is the whole scheduler view of the node (allocatable, requested,
  non-zero requested, pod count, NUMA zones, Node object). New resource names or more NUMA zones than any node so far
  rebuild the arrays; anything else touches one row.
- `remove_node(name: str) -> None`: drop the row; later rows move up one (order = insertion order, which breaks ties).
  Raises `KeyError` for an unknown node.
- `names -> Sequence[str]`: node names in row order; `row(name) -> int` (raises `KeyError`); `node(name) -> NodeInfo`:
  the current view of the node, reservations included; `len(scheduler)`, `name in scheduler`.
- `filter_and_score(pod: Pod, candidates: BoolArray | None = None) -> tuple[BoolArray, Int64Array]`: over the current
  rows, `feasible[i]` = row `i` passes NodeResourcesFit and NodeResourceTopologyMatch, `scores[i]` = the profile's
  weighted total (0 where infeasible). `candidates` (bool, one per row) masks out nodes other plugins already
  rejected: they are not evaluated at all and come back infeasible.
- `reserve(name: str, pod: Pod) -> Admission | None`: put `pod` on the node as
  `knuma.scheduler.framework.assume.assume` does (requests, non-zero requests, pod count, and the zones the kubelet
  model predicts); returns that prediction (None for a node without NUMA data).
- `schedule(pod: Pod, candidates: BoolArray | None = None) -> Decision`: filter, score, pick the highest total (ties:
  the earliest row), reserve there.

## Why it is fast

Per-node results depend only on the pod's *shape* (QoS class and per-container requests; not its name) and on the
node's row. Results are cached per shape, and every row has a version that changes when the row does, so a pod
re-evaluates only the rows that changed since the last pod of the same shape (typically the few reserved on since).
A cold shape is evaluated on every row at once:

- NodeResourcesFit is a comparison of `[nodes, resources]` arrays, and its LeastAllocated score a few more;
  NodeResourcesBalancedAllocation's score (cpu and memory, its default) is a few more again.
- For pods and nodes where the kubelet's decision reduces to "some NUMA zone holds every exclusive request"
  (single-numa-node nodes; Guaranteed or device-requesting pods without init containers; the CPU manager's
  `full-pcpus-only` checks are two more comparisons), NodeResourceTopologyMatch's
  filter is a comparison of `[nodes, zones, resources]` arrays (whole CPUs precomputed) and the LeastAllocated /
  MostAllocated scores a few more. Everything else (other policies, init and sidecar containers, memory-manager
  groups, the other strategies) goes through the plugin itself, row by row.

A cold shape costs a few dozen passes over the rows (the core's worst case, every pod a new shape, is a `knuma bench`
row): the row arrays are kept, not rebuilt per pod (a reservation reloads only the usage part of its row); each
resource has its own contiguous `[nodes, zones]` array, so a comparison is one flat pass; the lowest fitting zone of
every row comes from `knuma.scheduler.fast.placement` (a row of zone verdicts read as one machine word), and the
scores read only the zones a placement touches (one value per row and allocation step), not every zone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod, QOSClass
from knuma.api.resources import ALWAYS_ON_NODE, CPU, PODS, is_native, is_numa_affine
from knuma.scheduler.fast.placement import ZonePlacement, padded_zones, place
from knuma.scheduler.framework.assume import assume
from knuma.scheduler.framework.interface import CycleState, NodeInfo
from knuma.scheduler.framework.profiles import FIT_WEIGHT, NUMA_WEIGHT, default_scoring
from knuma.scheduler.plugins.device_stranding import DEVICE_STRANDING_WEIGHT, GAP_WEIGHT, zone_device_total
from knuma.scheduler.plugins.dra_zones import has_claims
from knuma.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from knuma.scheduler.plugins.node_resources_fit import SCORED_RESOURCES, NodeResourcesFit, non_zero_request
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.plugins.stranding import STRANDING_WEIGHT, CPUDemand, zone_strands_cpus
from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType, whole_units
from knuma.topology.kubelet import Admission, admit
from knuma.topology.node import is_device

__all__ = ["BoolArray", "Decision", "Int64Array", "VectorizedScheduler", "shape_key"]

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntpArray = npt.NDArray[np.intp]
Rows = slice | IntpArray

CACHE_SHAPES = 512
"""Pod shapes whose per-node results are kept (least recently used first out)."""
MAX_PODS_UNSET = 1 << 62
FLOAT_EXACT_LIMIT = 1 << 46
SMT_UNBOUNDED = 1 << 62
"""`smt_limit` of rows without `full-pcpus-only`."""
"""Below this, `floor(a * 100 / b)` in float64 equals the integer division for 0 <= a <= b (the quotient is at least
1/b away from the next integer, far more than float64's error at 100): the array scores are exact for rows whose
amounts are all below it (70 TiB of memory in one zone); rows above it are scored by the plugins."""
_BIG = np.iinfo(np.int64).max
_FIT_WEIGHTS = np.array([w for _, w in SCORED_RESOURCES], dtype=np.int64)


@dataclass(frozen=True)
class Decision:
    node: str | None
    score: int | None
    admission: Admission | None


@dataclass(frozen=True)
class _ZoneRequests:
    """The requests the per-zone Least/MostAllocated scores read, one per app container and a last one for the whole
    pod (pod scope), laid out on the resource columns any of them names: whole units, weights (0 where a request
    does not name the column), and each request's weight sum (names no node has count there too)."""

    columns: IntpArray
    amounts: Int64Array
    """[requests, columns]"""
    weights: Float64Array
    """[requests, columns]"""
    weight_sums: Int64Array
    """[requests]"""


@dataclass
class _Shape:
    """A pod shape: its requests laid out on the current resource columns, and its cached per-row results."""

    pod: Pod
    """The first pod seen with this shape (for the plugins, where a row cannot be computed in arrays)."""
    pinned: bool
    """The static CPU and memory managers pin it (`Pod.pinned_by_managers`: Guaranteed, no pod-level resources)."""
    fit_columns: IntpArray
    fit_amounts: Int64Array
    fit_missing: bool
    """The pod requests a resource no node knows: nodes with a Node object fail NodeResourcesFit."""
    fit_dra: list[bool]
    """Per fit column: a DeviceClass serves the resource, so a node with none of it passes (DynamicResources
    allocates it there, `NodeResourcesFit.served_by_dra`)."""
    unlisted_columns: IntpArray
    """Resources NodeResourcesFit ignores (`ignoredResources`) that the pod requests: NodeResourceTopologyMatch still
    rejects a node with a Node object and NRT data that does not list them (its filter's node-level check, which the
    fit columns otherwise cover)."""
    unlisted_unknown: bool
    """Such a resource no node lists at all."""
    non_zero: Int64Array
    requested: Int64Array
    """Its actual cpu and memory requests (`SCORED_RESOURCES`), as NodeResourcesBalancedAllocation reads them."""
    exclusive: list[tuple[IntpArray, Int64Array]] | None
    """Per container, when the array filter applies (single-numa-node rows), else None: the positions within
    `exclusive_columns` it requests exclusively, and the amounts."""
    exclusive_columns: IntpArray
    """The resource columns some container requests exclusively."""
    exclusive_total: Int64Array
    exclusive_cpu: int
    """Milli-CPUs the pod pins (what KnumaBinPacking adds to a node's used CPUs)."""
    exclusive_cpu_counts: tuple[int, ...]
    """Whole CPUs each container pins (the CPU manager's `full-pcpus-only` checks each)."""
    zone_requests: _ZoneRequests | None
    """Laid out on first use (`_allocation_scores`: LeastAllocated and MostAllocated only)."""
    numa_exempt: bool = False
    """BestEffort without extended resources: the NUMA plugin passes it everywhere, stale NRT included."""
    claims: bool = False
    """The pod has ResourceClaims: no device stranding term (`dra_zones.has_claims`)."""
    dra_columns: IntpArray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    """Its extended resources a DeviceClass serves: on a row with none of one of them no device stranding term
    either (`NodeResourceTopologyMatch.dra_serves`)."""
    dra_everywhere: bool = False
    """Such a resource no row lists: DRA serves it on every row."""
    dra_scored: bool = False
    """NodeResourcesFit's scoring strategy names a resource the pod requests that a DeviceClass serves: its score
    counts the class's devices on nodes without the resource (`NodeResourcesFit.devices`)."""
    devices_version: int = -1
    """The DRA devices' version (`DRADevices.version`) the cached rows were computed with, when `dra_scored`."""
    gaps: dict[int, int] | None = None
    """The cluster's device gap counts its cached scores were computed with (`gap_penalty`), for a pinned pod
    that takes devices under KnumaBinPacking; None: its scores do not depend on them."""
    ranked: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per row: the total score when feasible, -1 when not."""
    seen: Int64Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per row: the row version `ranked` was computed at (-1: never)."""


class VectorizedScheduler:
    """The default profile over a changing set of nodes, one pod at a time (Filter, Score, Reserve). See the module
    docstring for the API."""

    def __init__(
        self,
        nodes: Sequence[NodeInfo] = (),
        scoring: ScoringStrategy | None = None,
        *,
        cache_shapes: int = CACHE_SHAPES,
        numa_weight: int = NUMA_WEIGHT,
        fit_weight: int = FIT_WEIGHT,
        demand: CPUDemand | None = None,
        numa: bool = True,
        fit: NodeResourcesFit | None = None,
        balanced_weight: int = 0,
        balanced: NodeResourcesBalancedAllocation | None = None,
    ) -> None:
        self.numa_enabled = numa
        """False: a profile without NodeResourceTopologyMatch (NodeResourcesFit alone; NUMA data is not read)."""
        self.scoring = scoring or default_scoring()
        self.demand = demand or CPUDemand()
        """The pod sizes KnumaBinPacking's stranding term reads (pass the profile plugin's to share it)."""
        self._demand_version = self.demand.version
        self.numa_weight = numa_weight
        self.fit_weight = fit_weight
        self.balanced_weight = balanced_weight
        """Score weights of NodeResourceTopologyMatch, NodeResourcesFit and NodeResourcesBalancedAllocation (a
        profile's `score` weights; 0 = not scored); the defaults are `default_profile`'s."""
        self.cache_shapes = cache_shapes
        """Pod shapes whose results are kept; 0 evaluates every row for every pod (the benchmark's baseline)."""
        self._fit = fit or NodeResourcesFit()
        """The profile's NodeResourcesFit: its ignored resources leave the filter's columns, and a strategy other than
        the default is scored by the plugin row by row (`_fit_scores`)."""
        self._balanced = balanced or NodeResourcesBalancedAllocation()
        """The profile's NodeResourcesBalancedAllocation: with resources other than its default (cpu and memory) it
        scores row by row (`_balanced_scores`)."""
        self._numa = NodeResourceTopologyMatch(self.scoring, self.demand, extended=self._fit.extended)
        self._extended_version = -1
        """`ExtendedResourceMap.version` the cached pod shapes were planned with."""
        self._infos: list[NodeInfo] = []
        self._rows: dict[str, int] = {}
        self._names: tuple[str, ...] | None = None
        self._shapes: OrderedDict[Hashable, _Shape] = OrderedDict()
        self._clock = 0
        self.resources: list[str] = []
        self.index: dict[str, int] = {}
        self.zone_count = 1
        self.cpu_index: int | None = None
        self._buffers: dict[str, npt.NDArray[np.generic]] = {}
        self._capacity = 0
        self._size = 0
        infos = list(nodes)
        for info in infos:
            if info.name in self._rows:
                raise ValueError(f"node {info.name} is given twice")
            self._rows[info.name] = len(self._infos)
            self._infos.append(info)
        self._rebuild(_resources_of(infos), _zones_of(infos))

    # -- the node set ------------------------------------------------------------------------------------------

    @property
    def names(self) -> Sequence[str]:
        if self._names is None:
            self._names = tuple(info.name for info in self._infos)
        return self._names

    def row(self, name: str) -> int:
        try:
            return self._rows[name]
        except KeyError:
            raise KeyError(f"node {name} is not in the scheduler") from None

    def node(self, name: str) -> NodeInfo:
        return self._infos[self.row(name)]

    def __len__(self) -> int:
        return len(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def upsert_node(self, info: NodeInfo) -> None:
        row = self._rows.get(info.name)
        static = True
        if row is None:
            row = len(self._infos)
            self._rows[info.name] = row
            self._infos.append(info)
            self._names = None
        else:
            static = not _same_static(self._infos[row], info)
            self._infos[row] = info
        resources, zones = _resources_of([info]), _zones_of([info])
        if not resources <= self.index.keys() or zones > self.zone_count:
            self._rebuild(resources | self.index.keys(), max(zones, self.zone_count))
            return
        if row >= self._capacity:
            self._allocate(max(16, 2 * self._capacity))
        if row >= self._size or self.available.base is not self._buffers["available"]:
            self._views()  # a new row or new buffers (a replaced row: the views already show it)
        self._load_row(row, static=static)

    def remove_node(self, name: str) -> None:
        row = self.row(name)
        n = len(self._infos)
        for array in self._buffers.values():
            array[row : n - 1] = array[row + 1 : n]
        del self._infos[row]
        del self._rows[name]
        for later in range(row, n - 1):
            self._rows[self._infos[later].name] = later
        self._names = None
        self._shapes.clear()  # cached rows are positional
        self._views()

    # -- scheduling --------------------------------------------------------------------------------------------

    def filter_and_score(self, pod: Pod, candidates: BoolArray | None = None) -> tuple[BoolArray, Int64Array]:
        ranked = self._ranked(pod, candidates)
        feasible = ranked >= 0
        if candidates is not None:
            feasible &= candidates
        return feasible, np.where(feasible, ranked, 0)

    def reserve(self, name: str, pod: Pod) -> Admission | None:
        return self._reserve_row(self.row(name), pod)

    def schedule(self, pod: Pod, candidates: BoolArray | None = None) -> Decision:
        """Pick a node for `pod`, reserve it there, and return the decision (node None when nothing fits)."""
        ranked = self._ranked(pod, candidates)
        if candidates is not None:
            ranked = np.where(candidates, ranked, -1)
        if not len(ranked):
            return Decision(None, None, None)
        row = int(np.argmax(ranked))  # first maximum: ties go to the earliest node, as schedule_one does
        score = int(ranked[row])
        if score < 0:
            return Decision(None, None, None)
        name = self._infos[row].name
        return Decision(name, score, self._reserve_row(row, pod))

    def _reserve_row(self, row: int, pod: Pod) -> Admission | None:
        info = self._infos[row]
        topology = info.numa
        admission = admit(self._numa.kubelet_pod(pod, info), topology) if topology is not None else None
        self._infos[row] = assume(info, pod, admission)
        self._load_row(row, static=False)
        return admission

    # -- cached results ----------------------------------------------------------------------------------------

    def _ranked(self, pod: Pod, candidates: BoolArray | None) -> Int64Array:
        """Per row: the total score if feasible, else -1 (rows outside `candidates`: whatever is cached)."""
        n = len(self._infos)
        if candidates is not None and (candidates.shape != (n,) or candidates.dtype != np.bool_):
            raise ValueError(
                f"candidates must be a bool array with one entry per node ({n}), in `names` order; "
                f"got {candidates.dtype} of shape {candidates.shape}"
            )
        if self.numa_enabled and self.scoring.type is StrategyType.KNUMA_BIN_PACKING:
            self.demand.observe(pod)
            if self.demand.version != self._demand_version:
                self._demand_version = self.demand.version
                self._shapes.clear()  # cached scores assumed the old sizes
        shape = self._shape(pod)
        if self._uses_gaps(shape):
            counts = self._gap_counts()
            if counts != shape.gaps:  # a device zone's gap changed: every cached score is off
                shape.gaps = counts
                shape.seen = np.full(len(shape.seen), -1, dtype=np.int64)
        devices = self._fit.devices
        if shape.dra_scored and devices is not None and devices.version != shape.devices_version:
            # NodeResourcesFit's score reads the DRA devices in use, which a row's version does not follow on every
            # node (the zone overlay reloads rows only for devices with a NUMA node): every cached row is off
            shape.devices_version = devices.version
            shape.seen = np.full(len(shape.seen), -1, dtype=np.int64)
        if not len(shape.seen) and candidates is None:  # a new shape: every row, nothing to compare
            shape.ranked = self._evaluate(pod, shape, slice(0, n))
            shape.seen = self.version.copy()
            return shape.ranked
        if len(shape.seen) < n:  # nodes were added since the shape was cached (or a new shape, some rows asked)
            grow = n - len(shape.seen)
            shape.seen = np.concatenate([shape.seen, np.full(grow, -1, dtype=np.int64)])
            shape.ranked = np.concatenate([shape.ranked, np.full(grow, -1, dtype=np.int64)])
        stale = shape.seen != self.version
        if candidates is not None:
            stale &= candidates
        rows = np.flatnonzero(stale)
        if len(rows):
            selection: Rows = slice(0, n) if len(rows) == n else rows
            shape.ranked[selection] = self._evaluate(pod, shape, selection)
            shape.seen[selection] = self.version[selection]
        return shape.ranked

    def _shape(self, pod: Pod) -> _Shape:
        extended = self._fit.extended
        if extended is not None and extended.version != self._extended_version:
            self._shapes.clear()  # a DeviceClass changed: which resources DRA serves (`_Shape.fit_dra`)
            self._extended_version = extended.version
        key = shape_key(pod)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._plan(pod)
            if self.cache_shapes > 0:
                self._shapes[key] = shape
            if len(self._shapes) > self.cache_shapes:
                self._shapes.popitem(last=False)
        else:
            self._shapes.move_to_end(key)
        return shape

    def _plan(self, pod: Pod) -> _Shape:
        ignores = self._fit.args.ignores
        extended = self._fit.extended
        dra = {name for name in pod.effective_request if extended is not None and extended.maps(name)}
        requested = {name: amount for name, amount in pod.effective_request.items() if amount > 0}
        request = {name: amount for name, amount in requested.items() if not ignores(name)}
        known = [name for name in request if name in self.index]
        unknown = [name for name in request if name not in self.index and name not in dra]
        ignored = [name for name in requested if name not in request and name not in ALWAYS_ON_NODE and name not in dra]
        vectors = self._exclusive(pod)
        exclusive: list[tuple[IntpArray, Int64Array]] | None = None
        if vectors is None:
            columns = np.zeros(0, dtype=np.intp)
            total = np.zeros(len(self.resources), dtype=np.int64)
        else:
            total = np.sum(vectors, axis=0, dtype=np.int64)
            columns = np.flatnonzero(total)
            exclusive = []
            for vector in vectors:
                on_columns = vector[columns]
                positions = np.flatnonzero(on_columns)
                exclusive.append((positions, on_columns[positions]))
        non_zero = non_zero_request(pod)
        return _Shape(
            pod=pod,
            pinned=pod.pinned_by_managers,
            fit_columns=np.array([self.index[name] for name in known], dtype=np.intp),
            fit_amounts=np.array([request[name] for name in known], dtype=np.int64),
            fit_missing=bool(unknown),
            fit_dra=[name in dra for name in known],
            unlisted_columns=np.array([self.index[name] for name in ignored if name in self.index], dtype=np.intp),
            unlisted_unknown=any(name not in self.index for name in ignored),
            non_zero=np.array([non_zero[name] for name, _ in SCORED_RESOURCES], dtype=np.int64),
            requested=np.array([pod.effective_request.get(name, 0) for name, _ in SCORED_RESOURCES], dtype=np.int64),
            exclusive=exclusive,
            exclusive_columns=columns,
            exclusive_total=total,
            exclusive_cpu=int(total[self.cpu_index]) if self.cpu_index is not None else 0,
            exclusive_cpu_counts=tuple(int(v[self.cpu_index]) // 1000 for v in vectors or ())
            if self.cpu_index is not None and pod.pinned_by_managers
            else (),
            zone_requests=None,
            numa_exempt=pod.qos is QOSClass.BEST_EFFORT and all(is_native(n) for n in pod.requested_names),
            claims=has_claims(pod),
            dra_columns=np.array(
                sorted(self.index[n] for n in dra if n in self.index and n in requested), dtype=np.intp
            ),
            dra_everywhere=any(n not in self.index for n in dra if n in requested),
            dra_scored=self._fit.devices is not None
            and any(name in dra and name in requested for name in self._scored_names()),
        )

    def _scored_names(self) -> set[str]:
        """Resources a node-level score reads beyond cpu and memory (a DeviceClass may serve them)."""
        names = set() if self._fit.default_scoring else {name for name, _ in self._fit.args.strategy.resources}
        if self.balanced_weight and not self._balanced.args.is_default:
            names |= {name for name, _ in self._balanced.args.resources}
        return names

    def _exclusive(self, pod: Pod) -> list[Int64Array] | None:
        """Per-container exclusive requests when the array filter applies, else None (the plugin decides)."""
        if pod.init_containers:
            return None
        if pod.qos is QOSClass.BEST_EFFORT and all(is_native(n) for n in pod.requested_names):
            return [np.zeros(len(self.resources), dtype=np.int64)]
        out = []
        for container in pod.containers:
            vector = np.zeros(len(self.resources), dtype=np.int64)
            for name, amount in container.requests.items():
                if not amount:
                    continue
                if name == CPU and pod.pinned_by_managers and amount % 1000:
                    return None  # fractional: no CPU hint; the plugin handles it
                if (pod.pinned_by_managers and is_numa_affine(name)) or is_device(name):
                    if name not in self.index:
                        return None  # no node has it: the plugin says why
                    vector[self.index[name]] = amount
            out.append(vector)
        return out

    def _zone_requests(self, requests: Sequence[Mapping[str, int]]) -> _ZoneRequests:
        names = sorted({name for request in requests for name in request if name in self.index})
        amounts = np.zeros((len(requests), len(names)), dtype=np.int64)
        weights = np.zeros((len(requests), len(names)), dtype=np.float64)
        for i, request in enumerate(requests):
            for j, name in enumerate(names):
                if name in request:
                    amounts[i, j] = whole_units(name, request[name])
                    weights[i, j] = self.scoring.weight(name)
        return _ZoneRequests(
            columns=np.array([self.index[name] for name in names], dtype=np.intp),
            amounts=amounts,
            weights=weights,
            weight_sums=np.array([max(1, sum(self.scoring.weight(n) for n in r)) for r in requests], dtype=np.int64),
        )

    # -- evaluation over a set of rows -------------------------------------------------------------------------

    def _evaluate(self, pod: Pod, shape: _Shape, rows: Rows) -> Int64Array:
        """The profile on `rows`: total score where feasible, -1 where not."""
        feasible = self._node_fit(shape, rows)
        if not self.numa_enabled:
            node_level = self._node_level_scores(shape, rows)
            return np.where(feasible, node_level, -1)
        if not shape.numa_exempt:
            feasible &= self.nrt_fresh[rows]
        numa: Int64Array | int = 0 if shape.pinned else 100
        if shape.exclusive is not None:
            simple = self.simple_node[rows]
            candidates = feasible & simple
            if candidates.any():
                # Every row at once (views, no gathers); the rows that are not candidates are masked out after.
                placement = self._zone_placement(shape, rows)
                smt = self._smt_ok(shape, rows)
                fits = placement.fits if smt is None else placement.fits & smt
                if shape.pinned:
                    scored = candidates & fits
                    numa = np.where(scored, self._zone_scores(pod, shape, rows, placement, scored), 0)
                feasible &= fits | ~simple
            by_plugin = self.plugin_rows[rows]
        else:
            by_plugin = self.has_nrt[rows]
        if by_plugin.any():
            exact = np.flatnonzero(feasible & by_plugin)
            if len(exact):
                numa = np.full(len(feasible), numa, dtype=np.int64) if isinstance(numa, int) else numa
                row_ids = np.arange(self._size)[rows] if isinstance(rows, slice) else rows
                for i in exact.tolist():
                    info = self._infos[int(row_ids[i])]
                    state = self._numa_state(pod, shape)
                    if self._numa.filter(state, pod, info).ok:
                        numa[i] = self._numa.score(state, pod, info)
                    else:
                        feasible[i] = False
        total = numa * self.numa_weight + self._node_level_scores(shape, rows)
        return np.where(feasible, total, -1)

    def numa_rejected(self, pod: Pod, feasible: BoolArray, candidates: BoolArray) -> BoolArray:
        """Rows among `candidates` that `filter_and_score` found infeasible although NodeResourcesFit passes and
        the NRT is fresh: NodeResourceTopologyMatch rejected them (what the overreserve cache marks for resync)."""
        n = len(self._infos)
        fit = self._node_fit(self._shape(pod), slice(0, n))
        rejected: BoolArray = candidates & ~feasible & fit & self.has_nrt & ~self.nrt_stale
        return rejected

    def _node_fit(self, shape: _Shape, rows: Rows) -> BoolArray:
        """NodeResourcesFit's filter: each requested resource fits what is free (nodes without a Node object only
        check what their zones report), and there is room for one more pod."""
        ok: BoolArray = self.has_room[rows]
        if shape.fit_missing:
            ok = ok & ~self.has_node_object[rows]
        for column, amount, dra in zip(
            shape.fit_columns.tolist(), shape.fit_amounts.tolist(), shape.fit_dra, strict=True
        ):
            fits = self.fit_free[rows, column] >= amount
            ok = ok & (fits | self.none_allocatable[rows, column] if dra else fits)
        if self.numa_enabled and (shape.unlisted_unknown or shape.unlisted_columns.size):
            checked = self.has_node_object[rows] & self.has_nrt[rows]
            if shape.unlisted_unknown:
                ok = ok & ~checked
            for column in shape.unlisted_columns.tolist():
                ok = ok & (self.node_known[rows, column] | ~checked)
        return ok.copy() if ok.base is not None else ok

    def _node_level_scores(self, shape: _Shape, rows: Rows) -> Int64Array | int:
        """NodeResourcesFit's and NodeResourcesBalancedAllocation's scores, weighted."""
        total: Int64Array | int = 0
        if self.fit_weight:
            total = self._fit_scores(shape, rows) * self.fit_weight
        if self.balanced_weight:
            total = total + self._balanced_scores(shape, rows) * self.balanced_weight
        return total

    def _balanced_scores(self, shape: _Shape, rows: Rows) -> Int64Array | int:
        """NodeResourcesBalancedAllocation over cpu and memory: each used fraction capped at 1, `(1 - |f1 - f2| / 2)
        * 100` truncated where the node has both (100 where it has one or none), in float64 as the plugin and Go
        compute it; 0 for a pod that requests neither. Other resources (its args) are the plugin's on every row."""
        if not self._balanced.args.is_default:
            state = CycleState()
            return np.array(
                [self._balanced.score(state, shape.pod, self._infos[r]) for r in np.arange(len(self._infos))[rows]],
                dtype=np.int64,
            )
        if not shape.requested.any():
            return 0  # `isBestEffortPod`: the plugin is skipped for the pod
        allocatable = self.scored_allocatable[rows]
        present = allocatable > 0
        used = (self.requested[rows] + shape.requested).astype(np.float64)
        fractions = np.minimum(used / np.where(present, allocatable, 1).astype(np.float64), 1.0)
        std = np.where(present.all(axis=1), np.abs((fractions[:, 0] - fractions[:, 1]) / 2), 0.0)
        scores: Int64Array = ((1 - std) * 100.0).astype(np.int64)
        return scores

    def _fit_scores(self, shape: _Shape, rows: Rows) -> Int64Array:
        """NodeResourcesFit's LeastAllocated score over the non-zero requests (divisions in float64, exact for the
        `float_exact` rows; the others ask the plugin). Another strategy (`NodeResourcesFitArgs.scoringStrategy`) is
        the plugin's on every row."""
        if not self._fit.default_scoring:
            state = CycleState()  # one for every row: the pod's non-zero requests are computed once
            return np.array(
                [self._fit.score(state, shape.pod, self._infos[r]) for r in np.arange(len(self._infos))[rows]],
                dtype=np.int64,
            )
        # (allocatable - requested) * 100 / allocatable where the request fits (0 otherwise, and 0 where the node has
        # none of the resource: there the difference is positive only if nothing is requested), as the plugin does.
        weighted: Float64Array | float = 0.0
        for i, weight in enumerate(_FIT_WEIGHTS.tolist()):  # column by column: one pass over the rows each
            free = self.scored_free[rows, i] - int(shape.non_zero[i])
            score = np.floor(free * 100.0 / self.scored_scale[rows, i])
            weighted = weighted + np.where(free >= 0, score, 0.0) * float(weight)
        total: Int64Array = np.floor(weighted / self.fit_divisor[rows]).astype(np.int64)
        if self.float_exact[rows].all():
            return total
        inexact = np.flatnonzero(~self.float_exact[rows])
        for i, row in zip(inexact.tolist(), _select(rows, inexact).tolist(), strict=True):
            total[i] = self._fit.score(CycleState(), shape.pod, self._infos[row])
        return total

    def _smt_ok(self, shape: _Shape, rows: Rows) -> BoolArray | None:
        """`full-pcpus-only` (`staticPolicy.Allocate`): every container's exclusive CPUs a multiple of the CPUs per
        core, and each within the free physical CPUs left when it is allocated, i.e. their running sum, so the whole
        pod's, within the row's limit. None: no such row, or no exclusive CPU (every row passes)."""
        counts = [c for c in shape.exclusive_cpu_counts if c]
        limit = self.smt_limit[rows]
        if not counts or not (limit < SMT_UNBOUNDED).any():
            return None
        ok: BoolArray = np.ones(len(limit), dtype=np.bool_)
        group = self.smt_group[rows]
        for count in counts:
            ok &= count % group == 0
        ok &= sum(counts) <= limit
        return ok

    def _stranding_penalty(self, shape: _Shape, rows: Rows, placement: ZonePlacement) -> Int64Array:
        """`knuma.scheduler.plugins.stranding.stranding_penalty` (meaningful on rows where the pod fits): per zone the
        placement takes CPUs from, the change in CPUs the recent mix of sizes is expected to strand there, relative
        to the zone's CPUs (negative: a credit). Only the zones the allocation steps touch are read (one value per
        step and row, by flat index), not every zone."""
        cpu = self._cpu_position(shape)
        count = len(placement.fits)
        penalty: Int64Array = np.zeros(count, dtype=np.int64)
        if cpu is None or self.cpu_index is None:
            return penalty
        if self.demand.strands_nothing:  # a 1-CPU size: every remainder ends exactly full, the term is 0
            return penalty
        free = np.ravel(self.zone_free[self.cpu_index][rows])  # [rows, zones], flat
        strands = np.ravel(self.zone_strands[rows])
        zone_cpus = np.ravel(self.zone_cpu_total[rows])
        cells = np.arange(count) * self.zone_count
        for zone, took, first in placement.touched(cpu):
            at = cells + zone
            before = free.take(at) // 1000
            taken = took // 1000
            after = before - taken
            table = self.demand.stranded_table(int(before.max(initial=0)))
            added = table[np.maximum(after, 0)] - table[np.maximum(before, 0)]
            counted = first & (taken > 0) & strands.take(at)
            # floor(a / b) in float64 is a // b for these small integers, negative ones too (exact quotients stay
            # exact).
            charge = np.floor(STRANDING_WEIGHT * added / np.maximum(zone_cpus.take(at), 1))
            penalty += np.where(counted, charge, 0.0).astype(np.int64)
        return penalty

    def _cpu_position(self, shape: _Shape) -> int | None:
        """The position of the cpu column among the pod's exclusive columns (None: it pins no CPU)."""
        if self.cpu_index is None:
            return None
        where = np.flatnonzero(shape.exclusive_columns == self.cpu_index)
        return int(where[0]) if len(where) else None

    def _device_stranding_penalty(
        self, shape: _Shape, rows: Rows, placement: ZonePlacement, scored: BoolArray
    ) -> Int64Array:
        """`knuma.scheduler.plugins.device_stranding.device_stranding_penalty` on rows where the pod fits: per device
        zone whose free amounts the placement changes, the change in devices the recent mix of device pod shapes is
        expected to strand, relative to the zone's devices (negative: a credit). Only rows with device zones are
        visited (one memoised expectation per distinct free vector)."""
        zone_devices = self.zone_devices[rows]
        penalty: Int64Array = np.zeros(len(zone_devices), dtype=np.int64)
        visit = np.flatnonzero(scored & (zone_devices > 0).any(axis=1))
        if not len(visit):
            return penalty
        demand = self.demand.devices
        columns_taken = [placement.taken(p)[visit] for p in range(len(shape.exclusive_columns))]
        taken: Int64Array = (
            np.stack(columns_taken, axis=2)
            if columns_taken
            else np.zeros((len(visit), self.zone_count, 0), dtype=np.int64)
        )
        position = {int(column): p for p, column in enumerate(shape.exclusive_columns.tolist())}
        names = demand.names
        columns = [self.index.get(name) for name in names]
        is_cpu = [name == CPU for name in names]
        for k, (i, row) in enumerate(zip(visit.tolist(), _select(rows, visit).tolist(), strict=True)):
            for z in np.flatnonzero(zone_devices[i] > 0).tolist():
                free = self.whole_cpu_available[row, z]
                took = taken[k, z]
                before = []
                after = []
                for column, cpu in zip(columns, is_cpu, strict=True):
                    have = int(free[column]) if column is not None else 0
                    used = int(took[position[column]]) if column in position else 0
                    before.append(have // 1000 if cpu else have)
                    after.append((have - used) // 1000 if cpu else have - used)
                if before == after:
                    continue
                added = demand.expected_stranded(tuple(after)) - demand.expected_stranded(tuple(before))
                penalty[i] += DEVICE_STRANDING_WEIGHT * added // int(zone_devices[i, z])
        if shape.gaps is not None:
            penalty[visit] += self._gap_penalty(shape, _select(rows, visit), taken, position)
        return penalty

    def _numa_state(self, pod: Pod, shape: _Shape) -> CycleState:
        """A cycle state for the NUMA plugin on one row, with the gap counts this shape is evaluated with (the plugin
        would count them over `CycleState.nodes`, which a row-by-row call does not have)."""
        state = CycleState()
        if shape.gaps is not None:
            state.set_pod_data(f"{self._numa.name}/gaps", pod, shape.gaps)
        return state

    def _uses_gaps(self, shape: _Shape) -> bool:
        """Whether `shape`'s scores depend on the cluster's gap counts: KnumaBinPacking, a pinned pod without claims
        that takes devices, once device pods were seen (`bin_packing_score`'s `gaps`)."""
        if not (self.numa_enabled and self.scoring.type is StrategyType.KNUMA_BIN_PACKING and self.demand.devices):
            return False
        if not shape.pinned or shape.claims or shape.dra_everywhere:
            return False
        return any(is_device(name) for name in shape.pod.requested_names)

    def _device_columns(self) -> list[int]:
        return [column for column, name in enumerate(self.resources) if is_device(name)]

    def _gap_counts(self) -> dict[int, int]:
        """`knuma.scheduler.plugins.device_stranding.gap_counts` over every row."""
        n = len(self._infos)
        columns = self._device_columns()
        if not columns:
            return {}
        free: Int64Array = np.zeros_like(self.zone_devices[:n])
        for column in columns:
            free += self.zone_free[column][:n]
        total = self.zone_devices[:n]
        gaps = free[(total > 0) & (free > 0) & (free < total)]
        values, counts = np.unique(gaps, return_counts=True)
        return {int(v): int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)}

    def _gap_penalty(self, shape: _Shape, rows: IntpArray, taken: Int64Array, position: dict[int, int]) -> Int64Array:
        """`knuma.scheduler.plugins.device_stranding.gap_penalty` on `rows` (the visited ones, `taken` per visited
        row), against the counts `shape.gaps` was evaluated with."""
        counts = shape.gaps or {}
        every = self._device_columns()
        columns = [c for c in every if c in position]
        out: Int64Array = np.zeros(len(rows), dtype=np.int64)
        if not columns:
            return out
        free: Int64Array = np.zeros((len(rows), self.zone_count), dtype=np.int64)
        for column in every:
            free += self.zone_free[column][rows]
        took: Int64Array = np.zeros((len(rows), self.zone_count), dtype=np.int64)
        for column in columns:
            took += taken[:, :, position[column]]
        total = self.zone_devices[rows]
        for k, z in zip(*np.nonzero(took), strict=True):
            gap, left, whole = int(free[k, z]), int(free[k, z] - took[k, z]), int(total[k, z])
            delta = 0
            if 0 < gap < whole:
                delta -= 2 * counts.get(gap, 0) - 1
            if 0 < left < whole:
                delta += 2 * counts.get(left, 0) + 1
            out[k] += GAP_WEIGHT * delta
        return out

    def _zone_placement(self, shape: _Shape, rows: Rows) -> ZonePlacement:
        """single-numa-node: each container (container scope) or the whole pod (pod scope) in one zone that holds
        all its exclusive requests; a container takes the lowest such zone, as the kubelet's narrowest hint does
        (`knuma.scheduler.fast.placement`)."""
        columns = shape.exclusive_columns.tolist()
        dra = set(shape.dra_columns.tolist())
        # a resource DRA serves on a row (none in its allocatable) is not the zones' there, even where they still
        # list it: the kubelet admits the pod without it (`NodeResourceTopologyMatch.kubelet_pod`)
        managed = [
            self.managed[rows, c] & ~self.none_allocatable[rows, c] if c in dra else self.managed[rows, c]
            for c in columns
        ]
        return place(
            self.zone_valid[rows],
            [self.zone_free[c][rows] for c in columns],
            managed,
            self.pod_scope[rows],
            [int(shape.exclusive_total[c]) for c in columns],
            [(positions.tolist(), amounts.tolist()) for positions, amounts in shape.exclusive or ()],
        )

    def _zone_scores(
        self, pod: Pod, shape: _Shape, rows: Rows, placement: ZonePlacement, scored: BoolArray
    ) -> Int64Array:
        """NodeResourceTopologyMatch's score on the single-numa-node rows where the pod fits (`scored`; other rows
        get a meaningless value). KnumaBinPacking is computed on every row at once from `placement`; the other
        strategies on the `scored` rows only (`_allocation_scores`)."""
        if self.scoring.type is StrategyType.KNUMA_BIN_PACKING:
            total = self.numa_cpu_total[rows]
            used = total - self.numa_cpu_free[rows] + shape.exclusive_cpu
            packed: Int64Array = used * 100 // np.maximum(total, 1)
            if self.demand.sizes and shape.exclusive_cpu:
                packed = packed - self._stranding_penalty(shape, rows, placement)
            if self.demand.devices and len(shape.exclusive_columns) and not shape.claims and not shape.dra_everywhere:
                penalty = self._device_stranding_penalty(shape, rows, placement, scored)
                if len(shape.dra_columns):  # rows where DynamicResources scores the devices
                    penalty = np.where(self.none_allocatable[rows][:, shape.dra_columns].any(axis=1), 0, penalty)
                packed = packed - penalty
            return np.where(total > 0, np.clip(packed, 0, 100), 0)
        positions = np.flatnonzero(scored)
        scores: Int64Array = np.zeros(len(scored), dtype=np.int64)
        if len(positions):
            scores[positions] = self._allocation_scores(pod, shape, _select(rows, positions))
        return scores

    def _allocation_scores(self, pod: Pod, shape: _Shape, rows: IntpArray) -> Int64Array:
        """The other strategies' NodeResourceTopologyMatch score on single-numa-node rows where the pod fits:
        upstream's per-zone Most/LeastAllocated (whole units), the smallest non-zero zone score per request, then the
        pod's (pod scope) or the mean over its containers (container scope). All requests at once, `[rows, zones,
        requests, columns]`; divisions in float64, exact for the `float_exact` rows (the others, and the other
        strategies, ask the plugin)."""
        if self.scoring.type not in (StrategyType.LEAST_ALLOCATED, StrategyType.MOST_ALLOCATED):
            return np.array([self._numa.score(CycleState(), pod, self._infos[r]) for r in rows.tolist()])
        if shape.zone_requests is None:
            per_request = [*(c.requests for c in pod.containers), pod.effective_request]
            shape.zone_requests = self._zone_requests(per_request)
        requests = shape.zone_requests
        have = self.whole_units[rows][:, :, None, requests.columns]
        amounts = requests.amounts
        numerator = amounts * 100.0 if self.scoring.type is StrategyType.MOST_ALLOCATED else (have - amounts) * 100.0
        score = np.where((have > 0) & (have >= amounts), np.floor(numerator / np.maximum(have, 1)), 0.0)
        zone_scores = np.floor(np.einsum("kzcm,cm->kzc", score, requests.weights) / requests.weight_sums)
        valid = self.zone_valid[rows][:, :, None]
        best = np.where(valid & (zone_scores > 0), zone_scores, np.inf).min(axis=1)
        best[best == np.inf] = 0
        per_request = best.astype(np.int64)
        containers = per_request[:, :-1].sum(axis=1) // (per_request.shape[1] - 1)
        scores: Int64Array = np.where(self.pod_scope[rows], per_request[:, -1], containers)
        by_plugin = ~self.float_exact[rows]
        if len(shape.dra_columns):  # rows where DRA serves a resource: the plugin scores the pod without it
            by_plugin |= self.none_allocatable[rows][:, shape.dra_columns].any(axis=1)
        for i in np.flatnonzero(by_plugin).tolist():
            scores[i] = self._numa.score(CycleState(), pod, self._infos[int(rows[i])])
        return scores

    # -- row storage -------------------------------------------------------------------------------------------

    def _rebuild(self, resources: set[str], zones: int) -> None:
        """Lay out the arrays for these resource columns and zone count, and load every row."""
        self.resources = sorted(resources)
        self.index = {name: i for i, name in enumerate(self.resources)}
        self.cpu_index = self.index.get(CPU)
        self.zone_count = padded_zones(max(1, zones))
        self._shapes.clear()
        self._buffers = {}
        self._capacity = 0
        self._allocate(max(16, len(self._infos)))
        self._views()
        for row in range(len(self._infos)):
            self._load_row(row)

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the row buffers with room for `capacity` rows, keeping the rows already there."""
        z, r, s = self.zone_count, len(self.resources), len(SCORED_RESOURCES)
        layout: dict[str, tuple[tuple[int, ...], type[np.generic]]] = {
            "available": ((z, r), np.int64),
            "whole_cpu_available": ((z, r), np.int64),
            "whole_units": ((z, r), np.float64),
            "float_exact": ((), np.bool_),
            "zone_valid": ((z,), np.bool_),
            "zone_cpu_total": ((z,), np.int64),
            "zone_strands": ((z,), np.bool_),
            "zone_devices": ((z,), np.int64),
            "managed": ((r,), np.bool_),
            "node_free": ((r,), np.int64),
            "node_known": ((r,), np.bool_),
            "none_allocatable": ((r,), np.bool_),
            "fit_free": ((r,), np.int64),
            "has_room": ((), np.bool_),
            "scored_allocatable": ((s,), np.int64),
            "scored_requested": ((s,), np.int64),
            "requested": ((s,), np.int64),
            "scored_free": ((s,), np.int64),
            "scored_scale": ((s,), np.float64),
            "fit_divisor": ((), np.float64),
            "numa_cpu_total": ((), np.int64),
            "numa_cpu_free": ((), np.int64),
            "pod_counts": ((), np.int64),
            "max_pods": ((), np.int64),
            "has_node_object": ((), np.bool_),
            "has_nrt": ((), np.bool_),
            "nrt_stale": ((), np.bool_),
            "nrt_fresh": ((), np.bool_),
            "simple_node": ((), np.bool_),
            "plugin_rows": ((), np.bool_),
            "smt_group": ((), np.int64),
            "smt_limit": ((), np.int64),
            "pod_scope": ((), np.bool_),
            "version": ((), np.int64),
        }
        for column in range(r):  # one contiguous `[rows, zones]` array per column (see `zone_free`)
            layout[f"zone_free/{column}"] = ((z,), np.int64)
        kept = self._capacity
        buffers: dict[str, npt.NDArray[np.generic]] = {}
        for name, (trailing, dtype) in layout.items():
            buffer = np.zeros((capacity, *trailing), dtype=dtype)
            if kept and name in self._buffers:
                buffer[:kept] = self._buffers[name][:kept]
            buffers[name] = buffer
        self._buffers = buffers
        self._capacity = capacity

    def _views(self) -> None:
        """Expose the first `len(self)` rows of every buffer as attributes (views: writes go to the buffers)."""
        n = self._size = len(self._infos)
        b = self._buffers
        self.available: Int64Array = b["available"][:n]  # type: ignore[assignment]
        """[nodes, zones, resources]: per-zone available (milli-CPU for cpu)."""
        self.whole_cpu_available: Int64Array = b["whole_cpu_available"][:n]  # type: ignore[assignment]
        """`available` with cpu rounded down to whole CPUs: what the CPU manager can pin."""
        self.zone_free: list[Int64Array] = [b[f"zone_free/{c}"][:n] for c in range(len(self.resources))]  # type: ignore[misc]
        """Per resource column, `whole_cpu_available[:, :, column]` as its own contiguous `[nodes, zones]` array: what
        the placement compares and the stranding term reads, in single passes instead of a short loop per node."""
        self.whole_units: Float64Array = b["whole_units"][:n]  # type: ignore[assignment]
        """`available` in whole units, rounded up (Go `Quantity.Value()`), as the scoring strategies read it."""
        self.float_exact: BoolArray = b["float_exact"][:n]  # type: ignore[assignment]
        """The row's amounts are below `FLOAT_EXACT_LIMIT`: its scores can be computed in float64."""
        self.zone_valid: BoolArray = b["zone_valid"][:n]  # type: ignore[assignment]
        self.zone_cpu_total: Int64Array = b["zone_cpu_total"][:n]  # type: ignore[assignment]
        """[nodes, zones]: whole CPUs the zone holds (for the stranding penalty)."""
        self.zone_strands: BoolArray = b["zone_strands"][:n]  # type: ignore[assignment]
        """[nodes, zones]: CPU remainders count against placements on this zone (`zone_strands_cpus`)."""
        self.zone_devices: Int64Array = b["zone_devices"][:n]  # type: ignore[assignment]
        """[nodes, zones]: devices the zone holds (for the device stranding penalty)."""
        self.managed: BoolArray = b["managed"][:n]  # type: ignore[assignment]
        """[nodes, resources]: the resource is NUMA-managed on the node (some zone reports it)."""
        self.node_free: Int64Array = b["node_free"][:n]  # type: ignore[assignment]
        self.node_known: BoolArray = b["node_known"][:n]  # type: ignore[assignment]
        self.none_allocatable: BoolArray = b["none_allocatable"][:n]  # type: ignore[assignment]
        """The Node's allocatable has none of the resource (absent or 0): where a DeviceClass serves it."""
        self.fit_free: Int64Array = b["fit_free"][:n]  # type: ignore[assignment]
        """`node_free` where the node knows the resource; elsewhere what NodeResourcesFit makes of a (positive)
        request for it: it fits nodes without a Node object (the maximum), not the others (-1)."""
        self.has_room: BoolArray = b["has_room"][:n]  # type: ignore[assignment]
        """Fewer pods than the node's `pods` allocatable."""
        self.scored_allocatable: Int64Array = b["scored_allocatable"][:n]  # type: ignore[assignment]
        self.scored_requested: Int64Array = b["scored_requested"][:n]  # type: ignore[assignment]
        self.requested: Int64Array = b["requested"][:n]  # type: ignore[assignment]
        """The actual requests of `SCORED_RESOURCES` (cpu, memory), as NodeResourcesBalancedAllocation reads them."""
        self.scored_free: Int64Array = b["scored_free"][:n]  # type: ignore[assignment]
        """`scored_allocatable - scored_requested`: what NodeResourcesFit's score subtracts the pod's requests from."""
        self.scored_scale: Float64Array = b["scored_scale"][:n]  # type: ignore[assignment]
        """`max(scored_allocatable, 1)` in float64: the score's divisors."""
        self.fit_divisor: Float64Array = b["fit_divisor"][:n]  # type: ignore[assignment]
        """The weights of the scored resources the node has (at least 1): the score's mean."""
        self.numa_cpu_total: Int64Array = b["numa_cpu_total"][:n]  # type: ignore[assignment]
        """Milli-CPUs the node's zones hold (allocatable), for KnumaBinPacking."""
        self.numa_cpu_free: Int64Array = b["numa_cpu_free"][:n]  # type: ignore[assignment]
        """Milli-CPUs available over the node's zones."""
        self.pod_counts: Int64Array = b["pod_counts"][:n]  # type: ignore[assignment]
        self.max_pods: Int64Array = b["max_pods"][:n]  # type: ignore[assignment]
        self.has_node_object: BoolArray = b["has_node_object"][:n]  # type: ignore[assignment]
        self.has_nrt: BoolArray = b["has_nrt"][:n]  # type: ignore[assignment]
        self.nrt_stale: BoolArray = b["nrt_stale"][:n]  # type: ignore[assignment]
        """The NRT cache says the node's NUMA data may not be used (`NodeInfo.nrt_fresh` False)."""
        self.nrt_fresh: BoolArray = b["nrt_fresh"][:n]  # type: ignore[assignment]
        self.simple_node: BoolArray = b["simple_node"][:n]  # type: ignore[assignment]
        self.plugin_rows: BoolArray = b["plugin_rows"][:n]  # type: ignore[assignment]
        """Rows with NUMA data where the arrays cannot decide (not `simple_node`): the plugin does, row by row."""
        self.smt_group: Int64Array = b["smt_group"][:n]  # type: ignore[assignment]
        """`full-pcpus-only` rows: CPUs per core (a container's exclusive CPUs must be a multiple); 1 elsewhere."""
        self.smt_limit: Int64Array = b["smt_limit"][:n]  # type: ignore[assignment]
        """`full-pcpus-only` rows: the free physical CPUs (free whole CPUs less the reserved CPUs' siblings) the
        pod's exclusive CPUs may add up to; unbounded elsewhere."""
        self.pod_scope: BoolArray = b["pod_scope"][:n]  # type: ignore[assignment]
        self.version: Int64Array = b["version"][:n]  # type: ignore[assignment]

    def _load_row(self, row: int, *, static: bool = True) -> None:
        """Copy the row's NodeInfo into the arrays. `static=False` after a reservation (`assume`): what a reserved
        pod cannot change (capacities, zone layout, policy and scope, the Node's allocatable) is kept, the usage is
        reloaded."""
        info = self._infos[row]
        topology = info.numa
        index = self.index
        self._clock += 1
        self.version[row] = self._clock
        if static:
            self._load_static(row, info)
        width = len(self.resources)
        if topology is None:
            self.numa_cpu_free[row] = 0
            available = np.zeros((self.zone_count, width), dtype=np.int64)
        else:
            self.numa_cpu_free[row] = sum(zone.available.get(CPU, 0) for zone in topology.zones)
            grid = [[0] * width for _ in range(self.zone_count)]  # filled in Python, converted once
            for line, zone in zip(grid, topology.zones, strict=False):
                for name, amount in zone.available.items():
                    line[index[name]] = amount
            available = np.array(grid, dtype=np.int64)
        self.available[row] = available
        whole = available.copy()
        pinnable = available.copy()
        if self.cpu_index is not None:
            cpu = available[:, self.cpu_index]
            whole[:, self.cpu_index] = -(-cpu // 1000)
            pinnable[:, self.cpu_index] = cpu // 1000 * 1000
        self.whole_cpu_available[row] = pinnable
        self.whole_units[row] = whole
        for column, zone_free in enumerate(self.zone_free):
            zone_free[row] = pinnable[:, column]
        self.simple_node[row] = topology is not None and (
            topology.config.policy is Policy.SINGLE_NUMA_NODE
            and not topology.memory_groups
            and len(topology.zones) <= topology.config.max_numa_nodes
        )
        self.plugin_rows[row] = topology is not None and not self.simple_node[row]
        smt = topology is not None and topology.cpu_manager.full_pcpus_only and topology.cpu_managed
        self.smt_limit[row] = (
            sum(zone.available.get(CPU, 0) // 1000 for zone in topology.zones)
            - topology.cpu_manager.reserved_core_siblings
            if smt and topology is not None
            else SMT_UNBOUNDED
        )
        free = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in info.allocatable.items():
            free[index[name]] = amount - info.requested.get(name, 0)
        known = self.node_known[row]
        self.node_free[row] = free
        self.fit_free[row] = np.where(known, free, -1 if info.has_node_object else _BIG)
        on_node = info.non_zero_requested if info.non_zero_requested is not None else info.requested
        scored_allocatable = self.scored_allocatable[row].tolist()
        self.float_exact[row] = max(scored_allocatable, default=0) < FLOAT_EXACT_LIMIT and (
            not whole.size or int(np.abs(whole).max()) < FLOAT_EXACT_LIMIT
        )
        scored_requested = [on_node.get(name, 0) for name, _ in SCORED_RESOURCES]
        self.scored_requested[row] = scored_requested
        self.requested[row] = [info.requested.get(name, 0) for name, _ in SCORED_RESOURCES]
        self.scored_free[row] = [a - r for a, r in zip(scored_allocatable, scored_requested, strict=True)]
        self.pod_counts[row] = info.pod_count
        self.has_room[row] = self.max_pods[row] > info.pod_count

    def _load_static(self, row: int, info: NodeInfo) -> None:
        """The part of a row a reservation leaves as it is: zone layout and capacities, NUMA-managed resources,
        policy and scope, the CPU manager's options, the Node's allocatable."""
        topology = info.numa
        index = self.index
        managed = np.zeros(len(self.resources), dtype=np.bool_)
        self.zone_valid[row] = False
        self.zone_cpu_total[row] = 0
        self.zone_strands[row] = False
        self.zone_devices[row] = 0
        self.numa_cpu_total[row] = 0 if topology is None else sum(zone.total(CPU) for zone in topology.zones)
        if topology is not None:
            self.zone_valid[row, : len(topology.zones)] = True
            for z, zone in enumerate(topology.zones):
                self.zone_cpu_total[row, z] = zone.total(CPU) // 1000
                self.zone_strands[row, z] = zone_strands_cpus(zone)
                self.zone_devices[row, z] = zone_device_total(zone)
            for name in topology.numa_managed:
                managed[index[name]] = True
        self.managed[row] = managed
        self.has_nrt[row] = topology is not None
        self.nrt_stale[row] = not info.nrt_fresh
        self.nrt_fresh[row] = info.nrt_fresh
        self.pod_scope[row] = topology is not None and topology.config.scope is Scope.POD
        smt = topology is not None and topology.cpu_manager.full_pcpus_only and topology.cpu_managed
        self.smt_group[row] = topology.cpu_manager.cpu_group_size if smt and topology is not None else 1
        known = np.zeros(len(self.resources), dtype=np.bool_)
        none = np.ones(len(self.resources), dtype=np.bool_)
        for name, amount in info.allocatable.items():
            known[index[name]] = True
            none[index[name]] = not amount
        self.node_known[row] = known
        self.none_allocatable[row] = none
        scored_allocatable = [info.allocatable.get(name, 0) for name, _ in SCORED_RESOURCES]
        self.scored_allocatable[row] = scored_allocatable
        self.scored_scale[row] = [max(a, 1) for a in scored_allocatable]
        self.fit_divisor[row] = max(
            1, sum(w for (_, w), a in zip(SCORED_RESOURCES, scored_allocatable, strict=True) if a > 0)
        )
        self.max_pods[row] = info.allocatable.get(PODS, MAX_PODS_UNSET)
        self.has_node_object[row] = info.has_node_object


def _same_static(old: NodeInfo, new: NodeInfo) -> bool:
    """Whether `_load_static` would load the same values for `new` as for `old` (only the usage changed: a
    reservation, a pod bound or gone, an NRT with other available amounts), checked without computing them: the
    same allocatable, Node object presence and NRT freshness, and zones with the same ids, capacity and allocatable
    (the same objects, as views derived from one NRT share them) and available keys, where no resource's total
    falls back to its available amount (`NUMAZone.total`)."""
    if (
        old.allocatable is not new.allocatable
        or old.nrt_fresh != new.nrt_fresh
        or old.has_node_object != new.has_node_object
    ):
        return False
    before, after = old.numa, new.numa
    if before is after:
        return True
    if before is None or after is None:
        return False
    if (
        before.config != after.config
        or before.cpu_manager != after.cpu_manager
        or len(before.zones) != len(after.zones)
    ):
        return False
    for a, b in zip(before.zones, after.zones, strict=True):
        if a.id != b.id or a.capacity is not b.capacity or a.allocatable is not b.allocatable:
            return False
        if a.available.keys() != b.available.keys():
            return False
        for name in b.available:
            if not (b.allocatable.get(name) or b.capacity.get(name)):
                return False
    return True


def _select(rows: Rows, positions: IntpArray) -> IntpArray:
    """Row indices of `positions` within the evaluated `rows`."""
    if isinstance(rows, slice):
        return positions + (rows.start or 0)
    return rows[positions]


def shape_key(pod: Pod) -> Hashable:
    """What per-node results depend on: QoS class, pod-level requests (and whether the resource managers pin the pod),
    container kinds and requests in order, overhead, and whether it has ResourceClaims (KnumaBinPacking's device
    term)."""
    return (
        pod.qos,
        pod.pinned_by_managers,
        tuple(sorted(pod.pod_requests.items())),
        tuple((c.kind, tuple(sorted(c.requests.items()))) for c in pod.init_containers),
        tuple(tuple(sorted(c.requests.items())) for c in pod.containers),
        tuple(sorted(pod.overhead.items())),
        has_claims(pod),
    )


def _resources_of(infos: Iterable[NodeInfo]) -> set[str]:
    names: set[str] = set()
    for info in infos:
        names |= set(info.allocatable)
        if info.topology is not None:
            names |= info.topology.numa_managed
    return names


def _zones_of(infos: Iterable[NodeInfo]) -> int:
    return max((len(info.numa.zones) for info in infos if info.numa is not None), default=1)
