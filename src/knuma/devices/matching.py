"""Assigning distinct devices to requests: a bipartite b-matching solved as a maximum flow.

Once the search has fixed the discrete choices (which `firstAvailable` alternative, which value each `matchAttribute`
constraint takes, which NUMA nodes), what remains is "give request r `count(r)` distinct devices from its eligible
set". Upstream answers it by depth-first search over devices, which is exponential when there is no solution
(kubernetes#131730); a flow answers it exactly in polynomial time. Devices with the same eligibility are bucketed
(one node per bucket with capacity = its size), so 1000 identical GPUs cost one node, not a thousand.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence

__all__ = ["assign"]


def _max_flow(capacity: dict[int, dict[int, int]], source: int, sink: int, need: int) -> int:
    """Edmonds-Karp on a dict-of-dicts residual graph (small graphs: requests + buckets)."""
    flow = 0
    while flow < need:
        parent = {source: source}
        queue = deque([source])
        while queue and sink not in parent:
            u = queue.popleft()
            for v, cap in capacity[u].items():
                if cap > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            break
        bottleneck = need - flow
        v = sink
        while v != source:
            u = parent[v]
            bottleneck = min(bottleneck, capacity[u][v])
            v = u
        v = sink
        while v != source:
            u = parent[v]
            capacity[u][v] -= bottleneck
            capacity[v].setdefault(u, 0)
            capacity[v][u] += bottleneck
            v = u
        flow += bottleneck
    return flow


def assign(
    demands: Sequence[tuple[Hashable, int]],
    eligible: Mapping[Hashable, Sequence[Hashable]],
) -> dict[Hashable, list[Hashable]] | None:
    """Give each demand `(key, count)` that many distinct devices from `eligible[key]` (devices in preference order);
    None when impossible. Deterministic: devices are handed out in the order `eligible` lists them."""
    need = sum(count for _, count in demands)
    if need == 0:
        return {key: [] for key, _ in demands}
    # Bucket devices by the set of demands that may use them.
    users: dict[Hashable, list[int]] = {}
    for index, (key, _) in enumerate(demands):
        for device in eligible.get(key, ()):
            users.setdefault(device, []).append(index)
    buckets: dict[tuple[int, ...], list[Hashable]] = {}
    for device, who in users.items():
        buckets.setdefault(tuple(who), []).append(device)
    source, sink = 0, 1
    demand_node = {i: 2 + i for i in range(len(demands))}
    bucket_keys = list(buckets)
    bucket_node = {b: 2 + len(demands) + j for j, b in enumerate(bucket_keys)}
    capacity: dict[int, dict[int, int]] = {n: {} for n in range(2 + len(demands) + len(bucket_keys))}
    for i, (_, count) in enumerate(demands):
        capacity[source][demand_node[i]] = count
    for b, members in buckets.items():
        capacity[bucket_node[b]][sink] = len(members)
        for i in b:
            capacity[demand_node[i]][bucket_node[b]] = demands[i][1]
    if _max_flow(capacity, source, sink, need) < need:
        return None
    # Hand out concrete devices: flow on demand -> bucket edges is what was used (reverse capacity).
    result: dict[Hashable, list[Hashable]] = {key: [] for key, _ in demands}
    remaining = dict(buckets)
    for i, (key, _) in enumerate(demands):
        for b in bucket_keys:
            used = capacity[bucket_node[b]].get(demand_node[i], 0)
            preference = {d: p for p, d in enumerate(eligible[key])}
            pool = sorted(remaining[b], key=lambda d: preference.get(d, len(preference)))
            taken, remaining[b] = pool[:used], pool[used:]
            result[key].extend(taken)
    for key, _ in demands:
        rank = {d: p for p, d in enumerate(eligible[key])}
        result[key].sort(key=lambda d: rank[d])
    return result
