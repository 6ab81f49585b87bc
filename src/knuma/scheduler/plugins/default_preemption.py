"""DefaultPreemption: when no node fits a pod, find lower-priority pods whose eviction would make one fit.

kube-scheduler's PostFilter plugin, followed function by function (`pkg/scheduler/framework/plugins/
defaultpreemption/default_preemption.go` and `pkg/scheduler/framework/preemption/preemption.go`):

- `PodEligibleToPreemptOthers`: not a pod with `preemptionPolicy: Never`, nor one whose nominated node still has a
  lower-priority pod terminating because of a preemption (`podTerminatingByPreemption`: its earlier preemption is
  under way), unless that node no longer fits at all.
- `findCandidates`: only nodes whose filter status is `Unschedulable` (removing pods cannot fix
  `UnschedulableAndUnresolvable`), from a random offset, until `DefaultPreemptionArgs.candidates` are found.
- `SelectVictimsOnNode`: every pod of lower priority leaves the node; if the pod then passes the profile's filters,
  the victims are reprieved one by one, those a PodDisruptionBudget protects first (`filterPodsWithPDBViolation`),
  then the others, most important first (higher priority, then longer running), as long as the pod still fits. The
  pods left out are the victims.
- `pickOneNodeForPreemption`: fewest PodDisruptionBudget violations, lowest highest victim priority, lowest sum of
  priorities, fewest victims, latest start of the highest-priority victims, then the first candidate.

What makes it NUMA-aware is the node the filters see in the dry run (`NodeWithout`, the daemon's
`ClusterCache.node_info_without`): with knuma's NRT cache its zones are those the kubelet would have once the victims
are gone, so a pod that fails only NUMA alignment preempts the pods holding the zone it needs, and never pods whose
eviction would leave it unaligned (`TopologyAffinityError` after the eviction). Upstream's NodeResourceTopologyMatch
sees the published NRT in the dry run (its `preemptionMode: Enabled`, unreleased, frees victims on the zones its
overreserve cache recorded).

Differences: the dry run tries one node after another rather than in parallel (the same nodes; which candidate comes
first among ties can differ). `knuma simulate` runs this plugin too, through the same scheduling cycle
(`knuma.scheduler.cycle`), in scenarios whose pods have more than one priority.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

from knuma.api.disruption import DisruptionBudget
from knuma.api.pod import Pod
from knuma.scheduler.framework.interface import (
    SUCCESS,
    Code,
    NodeInfo,
    NodeWithout,
    OneNodeFilters,
    Profile,
    Status,
    nodes_available,
)
from knuma.scheduler.framework.postfilter import Candidate, Preemption
from knuma.scheduler.plugins.default_preemption_args import DEFAULT_PREEMPTION, DefaultPreemptionArgs

__all__ = ["NAME", "DefaultPreemption", "more_important", "pick_one_node", "split_by_budget_violation"]

NAME = DEFAULT_PREEMPTION
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
NOT_STARTED = "9999-12-31T23:59:59Z"
"""Start time of a pod the kubelet has not started: upstream's `GetPodStartTime` answers "now", later than any."""


def _start(pod: Pod) -> str:
    return pod.start_time or NOT_STARTED


def more_important(pod: Pod) -> tuple[int, str]:
    """Sort key, most important first (`util.MoreImportantPod`): higher priority, then the earlier start."""
    return -pod.priority, _start(pod)


def split_by_budget_violation(pods: Sequence[Pod], budgets: Sequence[DisruptionBudget]) -> tuple[list[Pod], list[Pod]]:
    """`filterPodsWithPDBViolation`: (pods whose eviction would take some budget below zero, the others), in the
    given order. Each budget's allowed disruptions are spent in that order, so with one disruption allowed the first
    pod it covers is not violating and the second is."""
    allowed = [budget.disruptions_allowed for budget in budgets]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, budget in enumerate(budgets):
                if budget.covers(pod.namespace, pod.name, pod.labels):
                    allowed[i] -= 1
                    violated = violated or allowed[i] < 0
        (violating if violated else others).append(pod)
    return violating, others


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate | None:
    """`pickOneNodeForPreemption` with its default criteria, each applied only to the ties of the one before."""
    criteria: tuple[Callable[[Candidate], object], ...] = (
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + 2**31 for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: min(_start(v) for v in c.victims if v.priority == c.victims[0].priority),
    )
    left = list(candidates)
    for criterion in criteria:
        if len(left) <= 1:
            break
        best = max(criterion(c) for c in left)  # type: ignore[type-var]
        left = [c for c in left if criterion(c) == best]
    return left[0] if left else None


class _Replaced(Sequence[NodeInfo]):
    """The cycle's nodes with one replaced (the dry run's node without victims), without copying the list."""

    def __init__(self, nodes: Sequence[NodeInfo], index: int, node: NodeInfo) -> None:
        self.nodes, self.at, self.node = nodes, index, node

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i: int) -> NodeInfo:  # type: ignore[override]
        return self.node if i == self.at or (i < 0 and i + len(self.nodes) == self.at) else self.nodes[i]

    def __iter__(self) -> Iterator[NodeInfo]:
        for i, node in enumerate(self.nodes):
            yield self.node if i == self.at else node


class DefaultPreemption:
    name = NAME

    def __init__(
        self, args: DefaultPreemptionArgs | None = None, *, numa_aware: bool = True, rng: random.Random | None = None
    ) -> None:
        """`numa_aware`: the dry run's nodes have the NUMA view without the victims (knuma's default, and the NUMA
        plugin's `preemptionMode: Enabled`); False for `preemptionMode: Disabled`, where the view stays as it is, as
        upstream's plugin sees it. `rng`: the source of the dry run's offset (upstream's `getOffsetRand`)."""
        self.args = args or DefaultPreemptionArgs()
        self.numa_aware = numa_aware
        self.rng = rng or random.Random()

    def ineligible(self, pod: Pod, nominated: NodeInfo | None, nominated_status: Status | None) -> str:
        """`PodEligibleToPreemptOthers`: why `pod` may not preempt ("" when it may). `nominated`: the node its
        earlier preemption nominated, if any."""
        if pod.spec.get("preemptionPolicy") == "Never":
            return POLICY_NEVER
        if nominated is None:
            return ""
        if nominated_status is not None and nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        if any(p.priority < pod.priority and p.terminating and p.preempted for p in nominated.pods):
            return TERMINATING_ON_NOMINATED  # podTerminatingByPreemption: deleted for a preemption, not otherwise
        return ""

    def post_filter(
        self,
        profile: Profile,
        pod: Pod,
        statuses: Mapping[str, Status],
        nodes: Sequence[NodeInfo],
        without: NodeWithout,
        nominated: str = "",
        lowest_priority: int | None = None,
        budgets: Sequence[DisruptionBudget] = (),
    ) -> Preemption:
        """`Evaluator.Preempt` without the API calls: `statuses` are the cycle's filter verdicts by node name,
        `nodes` its snapshot, `nominated` the pod's `status.nominatedNodeName`, `lowest_priority` the lowest priority
        of the pods on the nodes when the caller knows it (then a pod of no higher priority costs no look at any
        node: the same answer, `No preemption victims found` on every potential node), `budgets` the cluster's
        PodDisruptionBudgets. The daemon evicts the candidate's victims and nominates the pod."""
        nominated_info = next((n for n in nodes if n.name == nominated), None) if nominated else None
        reason = self.ineligible(pod, nominated_info, statuses.get(nominated))
        if reason:
            return Preemption(message=f"preemption: {reason}")
        potential = [i for i, n in enumerate(nodes) if (s := statuses.get(n.name)) and s.code is Code.UNSCHEDULABLE]
        if not potential:
            summary = nodes_available(len(nodes), [NOT_HELPFUL] * len(nodes))
            return Preemption(message=f"preemption: {summary}", clear_nomination=True)
        if lowest_priority is not None and lowest_priority >= pod.priority:
            hopeful = set(potential)
            reasons = [NO_VICTIMS if i in hopeful else NOT_HELPFUL for i in range(len(nodes))]
            return Preemption(message=f"preemption: {nodes_available(len(nodes), reasons)}", clear_nomination=True)
        offset = self.rng.randrange(len(potential))
        wanted = self.args.candidates(len(potential))
        respecting: list[Candidate] = []
        violating: list[Candidate] = []
        tried: dict[str, str] = {}
        filters = OneNodeFilters(profile, pod, nodes)
        for step in range(len(potential)):
            index = potential[(offset + step) % len(potential)]
            node = nodes[index]
            victims, violations, status = self.select_victims_on_node(filters, index, nodes, without, budgets)
            if status.ok and victims:
                found = respecting if violations == 0 else violating
                if len(found) < wanted:  # upstream's candidate lists hold `wanted` each
                    found.append(Candidate(node.name, victims, violations))
                if respecting and len(respecting) + len(violating) >= wanted:
                    break
                continue
            if status.ok:
                status = Status(Code.ERROR, f'expected at least one victim pod on node "{node.name}"', NAME)
            tried[node.name] = status.reason
        best = pick_one_node(respecting + violating)
        if best is None:
            reasons = [tried.get(n.name, NOT_HELPFUL) for n in nodes]
            return Preemption(message=f"preemption: {nodes_available(len(nodes), reasons)}", clear_nomination=True)
        return Preemption(best)

    def select_victims_on_node(
        self,
        filters: OneNodeFilters,
        index: int,
        nodes: Sequence[NodeInfo],
        without: NodeWithout,
        budgets: Sequence[DisruptionBudget] = (),
    ) -> tuple[tuple[Pod, ...], int, Status]:
        """`SelectVictimsOnNode` for `nodes[index]`: the fewest, least important lower-priority pods whose eviction
        lets the pod pass the profile's filters there, and how many of them a PodDisruptionBudget protects (none, 0
        and a failure status when no eviction does). Protected pods are reprieved first, so they are victims only
        when nothing else makes room."""
        node, pod = nodes[index], filters.pod
        potential = sorted((p for p in node.pods if p.priority < pod.priority), key=more_important)
        if not potential:
            return (), 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS, NAME)
        removed = {p.key for p in potential}
        status = self._fits(filters, index, nodes, without, removed)
        if not status.ok:
            return (), 0, status
        protected, unprotected = split_by_budget_violation(potential, budgets)
        victims: list[Pod] = []
        violations = 0
        for candidate in (*protected, *unprotected):
            removed.discard(candidate.key)
            if not self._fits(filters, index, nodes, without, removed).ok:
                removed.add(candidate.key)
                victims.append(candidate)
                violations += candidate in protected
        if protected and unprotected:
            victims.sort(key=more_important)
        return tuple(victims), violations, SUCCESS

    def _fits(
        self,
        filters: OneNodeFilters,
        index: int,
        nodes: Sequence[NodeInfo],
        without: NodeWithout,
        removed: Collection[str],
    ) -> Status:
        node = without(nodes[index].name, frozenset(removed), self.numa_aware)
        if node is None:
            return Status(Code.ERROR, f'node "{nodes[index].name}" not found', NAME)
        return filters.run(node, _Replaced(nodes, index, node))
