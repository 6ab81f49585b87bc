"""The vectorised scheduling path: Filter + Score for every node at once, in numpy.

Per-zone availability of the whole cluster lives in one `int64` array `[nodes, zones, resources]`. For the pods and
nodes where the kubelet's decision reduces to "some NUMA zone holds every exclusive request" (single-numa-node nodes;
Guaranteed or device-requesting pods without init containers), the filter is a handful of array comparisons and the
LeastAllocated / MostAllocated scores a few more. Everything else (other policies, init and sidecar containers,
memory-manager groups) goes through the exact kubelet model node by node, so results never differ from
`schedule_one` with the default profile; tests check that on random clusters.

Reserve updates only the chosen node's row, from the kubelet model's predicted allocation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod, QOSClass
from knuma.api.resources import CPU, PODS, is_native, is_numa_affine
from knuma.scheduler.framework import CycleState, NodeInfo
from knuma.scheduler.plugins.numa import NodeResourceTopologyMatch
from knuma.scheduler.strategies import ScoringStrategy, StrategyType
from knuma.topology.kubelet import Admission, admit
from knuma.topology.node import NodeTopology, is_device

__all__ = ["VectorizedScheduler"]

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Decision:
    node: str | None
    score: int | None
    admission: Admission | None


class VectorizedScheduler:
    """Schedules pods one at a time over a fixed set of nodes, reserving as it goes (Filter, Score, Reserve)."""

    def __init__(self, nodes: Sequence[NodeInfo], scoring: ScoringStrategy | None = None) -> None:
        self.scoring = scoring or ScoringStrategy()
        self.nodes = list(nodes)
        self.names = [n.name for n in self.nodes]
        self.topologies: list[NodeTopology | None] = [n.numa for n in self.nodes]
        self.allocatable = [dict(n.allocatable) for n in self.nodes]
        self.requested = [dict(n.requested) for n in self.nodes]
        self.pod_counts = np.array([n.pod_count for n in self.nodes], dtype=np.int64)
        self.max_pods = np.array([n.allocatable.get(PODS, 1 << 62) for n in self.nodes], dtype=np.int64)
        self.has_node_object = np.array([n.has_node_object for n in self.nodes], dtype=np.bool_)
        names: set[str] = set()
        for n in self.nodes:
            names |= set(n.allocatable)
            if n.topology is not None:
                names |= n.topology.numa_managed
        self.resources = sorted(names)
        self.index = {name: i for i, name in enumerate(self.resources)}
        self.zone_count = max((len(t.zones) for t in self.topologies if t is not None), default=1)
        shape = (len(self.nodes), self.zone_count, len(self.resources))
        self.available = np.zeros(shape, dtype=np.int64)
        self.whole = np.zeros(shape, dtype=np.int64)
        """`available` in whole units, rounded up (Go `Quantity.Value()`), as the scoring strategies read it."""
        self.reported = np.zeros(shape, dtype=np.bool_)
        """Whether the zone reports the resource (the resource is NUMA-managed there)."""
        self.zone_valid = np.zeros(shape[:2], dtype=np.bool_)
        self.node_free = np.zeros((len(self.nodes), len(self.resources)), dtype=np.int64)
        self.node_known = np.zeros((len(self.nodes), len(self.resources)), dtype=np.bool_)
        self.simple_node = np.zeros(len(self.nodes), dtype=np.bool_)
        self.pod_scope = np.zeros(len(self.nodes), dtype=np.bool_)
        self.managed = np.zeros((len(self.nodes), len(self.resources)), dtype=np.bool_)
        """[nodes, resources]: the resource is NUMA-managed on the node (some zone reports it)."""
        self.cpu_index = self.index.get(CPU)
        self.has_nrt = np.array([t is not None for t in self.topologies], dtype=np.bool_)
        for row in range(len(self.nodes)):
            self._load_row(row)
        self._numa = NodeResourceTopologyMatch(self.scoring)

    # -- state -------------------------------------------------------------------------------------------------

    def _load_row(self, row: int) -> None:
        topology = self.topologies[row]
        self.available[row] = 0
        self.reported[row] = False
        self.zone_valid[row] = False
        if topology is not None:
            for z, zone in enumerate(topology.zones):
                self.zone_valid[row, z] = True
                for name, amount in zone.available.items():
                    self.available[row, z, self.index[name]] = amount
                    self.reported[row, z, self.index[name]] = True
        self.managed[row] = self.reported[row].any(axis=0)
        self.whole[row] = self.available[row]
        if self.cpu_index is not None:
            self.whole[row, :, self.cpu_index] = -(-self.available[row, :, self.cpu_index] // 1000)
        self.pod_scope[row] = topology is not None and topology.config.scope is Scope.POD
        self.simple_node[row] = topology is not None and (
            topology.config.policy is Policy.SINGLE_NUMA_NODE
            and not topology.memory_groups
            and len(topology.zones) <= topology.config.max_numa_nodes
        )
        self.node_free[row] = 0
        self.node_known[row] = False
        for name, amount in self.allocatable[row].items():
            i = self.index[name]
            self.node_free[row, i] = amount - self.requested[row].get(name, 0)
            self.node_known[row, i] = True

    def _request_vector(self, request: dict[str, int]) -> Int64Array:
        vector = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in request.items():
            if name in self.index:
                vector[self.index[name]] = amount
        return vector

    # -- one pod -----------------------------------------------------------------------------------------------

    def schedule(self, pod: Pod) -> Decision:
        """Pick a node for `pod`, reserve it there, and return the decision (node None when nothing fits)."""
        feasible, scores = self._filter_and_score(pod)
        if not feasible.any():
            return Decision(None, None, None)
        masked = np.where(feasible, scores, -1)
        row = int(np.argmax(masked))  # first maximum: ties go to the earliest node, as schedule_one does
        topology = self.topologies[row]
        admission = admit(pod, topology) if topology is not None else None
        self.reserve(row, pod, admission)
        return Decision(self.names[row], int(masked[row]), admission)

    def reserve(self, row: int, pod: Pod, admission: Admission | None) -> None:
        for name, amount in pod.effective_request.items():
            self.requested[row][name] = self.requested[row].get(name, 0) + amount
        self.pod_counts[row] += 1
        if admission is not None and admission.admitted:
            self.topologies[row] = admission.node
        self._load_row(row)

    def _filter_and_score(self, pod: Pod) -> tuple[BoolArray, Int64Array]:
        n = len(self.nodes)
        feasible = self._node_fit(pod)
        scores = np.zeros(n, dtype=np.int64)
        fast_pod = self._fast_pod(pod)
        exact_rows: list[int]
        if fast_pod is not None:
            fits, numa_scores = self._fast_numa(pod, fast_pod)
            fast_rows = self.simple_node | ~self.has_nrt
            feasible &= np.where(self.simple_node, fits, True)
            scores = np.where(self.simple_node, numa_scores, 0)
            if pod.qos is not QOSClass.GUARANTEED:
                scores[:] = 100
            exact_rows = [int(r) for r in np.flatnonzero(feasible & ~fast_rows)]
        else:
            exact_rows = [int(r) for r in np.flatnonzero(feasible & self.has_nrt)]
            if pod.qos is not QOSClass.GUARANTEED:
                scores[:] = 100
        for row in exact_rows:
            info = self._node_info(row)
            state = CycleState()
            status = self._numa.filter(state, pod, info)
            feasible[row] = status.ok
            scores[row] = self._numa.score(state, pod, info) if status.ok else 0
        return feasible, scores

    def _node_info(self, row: int) -> NodeInfo:
        return NodeInfo(
            name=self.names[row],
            allocatable=self.allocatable[row],
            requested=self.requested[row],
            pod_count=int(self.pod_counts[row]),
            topology=self.topologies[row],
            manifest={} if self.has_node_object[row] else None,
        )

    def _node_fit(self, pod: Pod) -> BoolArray:
        """NodeResourcesFit for every node: each requested resource fits what is free (nodes without a Node object
        only check what their zones report), and there is room for one more pod."""
        request = {name: amount for name, amount in pod.effective_request.items() if amount > 0}
        has_object = self.has_node_object
        ok = np.ones(len(self.nodes), dtype=np.bool_)
        for name, amount in request.items():
            if name not in self.index:
                ok &= ~has_object
                continue
            i = self.index[name]
            ok &= np.where(self.node_known[:, i], self.node_free[:, i] >= amount, ~has_object)
        return ok & (self.max_pods > self.pod_counts)

    def _fast_pod(self, pod: Pod) -> list[Int64Array] | None:
        """Per-container exclusive requests when the vectorised filter applies, else None (exact path)."""
        if pod.init_containers:
            return None
        if pod.qos is QOSClass.BEST_EFFORT and all(is_native(n) for n in pod.requested_names):
            return [np.zeros(len(self.resources), dtype=np.int64)]
        out = []
        for container in pod.containers:
            exclusive: dict[str, int] = {}
            for name, amount in container.requests.items():
                if not amount:
                    continue
                if name == CPU:
                    if pod.is_guaranteed:
                        if amount % 1000:
                            return None  # fractional: no CPU hint; the exact path handles it
                        exclusive[name] = amount
                elif (pod.is_guaranteed and is_numa_affine(name)) or is_device(name):
                    exclusive[name] = amount
            out.append(self._request_vector(exclusive))
        return out

    def _fits(self, available: Int64Array, need: Int64Array) -> BoolArray:
        """[nodes, zones]: the zone holds `need` ([nodes, resources]); whole CPUs only, as the CPU manager counts."""
        zone_ok = self.zone_valid.copy()
        for r in np.flatnonzero(need.any(axis=0)):
            have = available[:, :, r]
            if r == self.cpu_index:
                have = have // 1000 * 1000
            zone_ok &= have >= need[:, r][:, None]
        return zone_ok

    def _fast_numa(self, pod: Pod, containers: list[Int64Array]) -> tuple[BoolArray, Int64Array]:
        """single-numa-node: each container (container scope) or the whole pod (pod scope) in one zone that holds
        all its exclusive requests; a container takes the lowest such zone, as the kubelet's narrowest hint does."""
        pod_scope = self.pod_scope
        fits = np.ones(len(self.nodes), dtype=np.bool_)
        if pod_scope.any():
            total = sum(containers, np.zeros(len(self.resources), dtype=np.int64))
            pod_fit = self._fits(self.available, total[None, :] * self.managed).any(axis=1)
            fits = np.where(pod_scope, pod_fit, fits)
        if not pod_scope.all():
            available = self.available if len(containers) == 1 else self.available.copy()
            container_fit = np.ones(len(self.nodes), dtype=np.bool_)
            for index, request in enumerate(containers):
                need = request[None, :] * self.managed
                zone_ok = self._fits(available, need)
                fit = zone_ok.any(axis=1)
                container_fit &= fit
                if index + 1 < len(containers):
                    rows = np.flatnonzero(fit)
                    chosen = np.argmax(zone_ok[rows], axis=1)
                    available[rows, chosen, :] -= need[rows]
            fits = np.where(pod_scope, fits, container_fit)
        return fits, self._scores(pod, pod_scope)

    def _scores(self, pod: Pod, pod_scope: BoolArray) -> Int64Array:
        n = len(self.nodes)
        if pod.qos is not QOSClass.GUARANTEED:
            return np.full(n, 100, dtype=np.int64)
        strategy = self.scoring.type
        if strategy not in (StrategyType.LEAST_ALLOCATED, StrategyType.MOST_ALLOCATED):
            return np.array([self._exact_score(pod, r) for r in range(n)], dtype=np.int64)
        containers = [dict(c.requests) for c in pod.containers]
        per_container = [self._zone_scores(r) for r in containers]
        container_mean = sum(per_container, np.zeros(n, dtype=np.int64)) // max(1, len(per_container))
        if pod_scope.any():
            pod_score = self._zone_scores(dict(pod.effective_request))
            return np.where(pod_scope, pod_score, container_mean)
        return np.asarray(container_mean, dtype=np.int64)

    def _zone_scores(self, request: dict[str, int]) -> Int64Array:
        """Upstream's per-zone Most/LeastAllocated (whole units, rounded up), min non-zero over zones."""
        total = np.zeros(self.zone_valid.shape, dtype=np.int64)
        score = np.empty(self.zone_valid.shape, dtype=np.int64)
        weights = 0
        most = self.scoring.type is StrategyType.MOST_ALLOCATED
        for name, amount in request.items():
            weight = self.scoring.weight(name)
            weights += weight
            if name not in self.index:
                continue
            have = self.whole[:, :, self.index[name]]
            if name == CPU:
                amount = -(-amount // 1000)
            ok = (have > 0) & (have >= amount)
            score.fill(0)
            numerator = amount * 100 if most else (have - amount) * 100
            np.floor_divide(numerator, have, out=score, where=ok)
            total += score * weight if weight != 1 else score
        zone_scores = total // max(1, weights)
        big = np.iinfo(np.int64).max
        best = np.where(self.zone_valid & (zone_scores > 0), zone_scores, big).min(axis=1)
        return np.where(best == big, 0, best)

    def _exact_score(self, pod: Pod, row: int) -> int:
        return self._numa.score(CycleState(), pod, self._node_info(row))
