"""One scheduling cycle with nominations and preemption, without I/O: what `knuma scheduler` runs for each pod it
pops and what `knuma simulate` runs for each attempt, so that preemption is measured on the daemon's own rules.

The steps are kube-scheduler's `schedulingCycle` around the decision (`knuma.scheduler.fast.path.FastPath`):

1. the room held for nominated pods of lower priority, and for the pod itself, is lifted for this cycle (the
   nominator adds only nominated pods of equal or higher priority to a node, `addGENominatedPods`);
2. a pod nominated by an earlier preemption goes to its nominated node when it fits there now
   (`evaluateNominatedNode`), else every node is looked at;
3. when no node fits, the profile's PostFilter plugins run (DefaultPreemption, `Evaluator.Preempt`);
4. the lifted room is held again; a candidate's node is held for the pod and lower-priority nominations there are
   displaced (`prepareCandidate` clears them, `NominatedNodeName` of the preemptor is set); a PostFilter that says
   preemption cannot help clears the pod's nomination; otherwise a pod waiting for its victims keeps its room.
   Filters that hold something of their own for a nominated pod (`NominationAware`: DynamicResources and the devices
   the dry run gave the pod) hear of each nomination made, cleared or displaced, and of each attempt of a pod that
   waits for its victims (so a restarted scheduler holds those devices again).

The caller does the I/O the answer asks for: evict the victims, write or clear `status.nominatedNodeName`, record
events and metrics (the daemon), or play the evictions on the simulated kubelets (the simulator).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from knuma.api.disruption import DisruptionBudget
from knuma.api.pod import Pod
from knuma.scheduler.algorithm import Outcome
from knuma.scheduler.cache.nrt import ClusterCache
from knuma.scheduler.fast.path import FastPath
from knuma.scheduler.framework.interface import NominationAware, OneNodeFilters, Profile, schedule_one
from knuma.scheduler.framework.postfilter import Candidate, Preemption

__all__ = ["CycleResult", "SchedulingCycle"]


@dataclass(frozen=True)
class CycleResult:
    outcome: Outcome
    """The decision; when no node fits, its message ends with PostFilter's (`preemption: ...`)."""
    preemption: Preemption | None = None
    """PostFilter's answer when it ran (no node fit and the profile has one)."""
    displaced: tuple[tuple[Pod, str], ...] = ()
    """Nominations of lower priority on the candidate's node, no longer held: their `status.nominatedNodeName`
    is to be cleared and they look again."""
    post_filter_runs: int = 0
    """PostFilter plugins called (`scheduler_preemption_attempts_total`)."""

    @property
    def candidate(self) -> Candidate | None:
        """Where preemption nominated the pod and whom to evict there; None without a preemption."""
        return self.preemption.candidate if self.preemption is not None else None

    @property
    def clears_nomination(self) -> bool:
        """The pod's `status.nominatedNodeName` is to be cleared (no node would fit even with preemption)."""
        return self.preemption is not None and self.preemption.candidate is None and self.preemption.clear_nomination


class SchedulingCycle:
    """The cycle over one cluster cache and its fast path. `budgets`: the cluster's PodDisruptionBudgets, read only
    when preemption looks for victims."""

    def __init__(
        self,
        cache: ClusterCache,
        fast: FastPath,
        budgets: Callable[[], Sequence[DisruptionBudget]] = tuple,
    ) -> None:
        self.cache = cache
        self.fast = fast
        self.budgets = budgets

    def run(self, profile: Profile, pod: Pod, nominated: str = "") -> CycleResult:
        """Schedule `pod` with `profile`; `nominated`: its `status.nominatedNodeName` as the API server shows it
        (the cache's own nomination wins while it holds one). The cache is left holding what the answer says; an
        exception leaves it as it was."""
        lifted = self._lift_nominations(pod)
        own = lifted.pop(pod.key, None)
        try:
            outcome = self._on_nominated_node(profile, pod, own[1] if own else nominated) or self.fast.decide(
                profile, pod
            )
            if outcome.node is not None:
                self._hold(lifted)
                return CycleResult(outcome)
            preemption, runs = self._preempt(profile, pod, nominated, outcome)
        except BaseException:
            self._hold({**lifted, **({pod.key: own} if own else {})})
            raise
        self._hold(lifted)
        displaced: tuple[tuple[Pod, str], ...] = ()
        if preemption is not None and preemption.candidate is not None:
            candidate = preemption.candidate
            keys = [
                k for k in self.cache.nominations_below(pod.priority) if self.cache.nominated_node(k) == candidate.node
            ]
            displaced = tuple(held for key in keys if (held := self.cache.unnominate(key)) is not None)
            self._dropped(profile, [held.key for held, _ in displaced])
            self._nominated(profile, pod, candidate)
            self.cache.nominate(pod, candidate.node)
        elif preemption is not None and preemption.clear_nomination:
            self.cache.unnominate(pod.key)
            self._dropped(profile, [pod.key])
        elif own is not None:
            self.cache.nominate(*own)  # waiting for its victims: keep the room held
            self._still_nominated(profile, pod, own[1])
        if preemption is not None and preemption.message:
            outcome = dataclasses.replace(outcome, message=f"{outcome.message} {preemption.message}")
        return CycleResult(outcome, preemption, displaced, runs)

    def _nominated(self, profile: Profile, pod: Pod, candidate: Candidate) -> None:
        """Tell the NominationAware filters where `pod` was nominated, on the node as the dry run saw it."""
        self._announce(profile, pod, candidate.node, [v.key for v in candidate.victims])

    def _still_nominated(self, profile: Profile, pod: Pod, node: str) -> None:
        """A pod waiting for its victims: the NominationAware filters hold again what they hold for it, on the node
        without the victims still terminating. A scheduler restart keeps the nomination (restored from
        `status.nominatedNodeName` with the CPUs and memory it holds) but not what the filters held (the devices the
        dry run gave the pod), which the pod's next attempt gives back to it here."""
        info = self.cache.node_info(node)
        if info is None:
            return
        victims = [p.key for p in info.pods if p.priority < pod.priority and p.terminating and p.preempted]
        self._announce(profile, pod, node, victims)

    def _announce(self, profile: Profile, pod: Pod, node_name: str, victims: Sequence[str]) -> None:
        aware = [f for f in profile.filters if isinstance(f, NominationAware)]
        if not aware:
            return
        node = self.cache.node_info_without(node_name, victims, True) or self.cache.node_info(node_name)
        if node is None:
            return
        for plugin in aware:
            plugin.nominated(pod, node)

    @staticmethod
    def _dropped(profile: Profile, keys: Sequence[str]) -> None:
        for plugin in profile.filters:
            if isinstance(plugin, NominationAware):
                for key in keys:
                    plugin.nomination_dropped(key)

    def _lift_nominations(self, pod: Pod) -> dict[str, tuple[Pod, str]]:
        """Stop holding room, for this cycle, for the pods nominated with lower priority than `pod`, and for `pod`
        itself. Returns what to hold again after the cycle."""
        lifted: dict[str, tuple[Pod, str]] = {}
        for key in [*self.cache.nominations_below(pod.priority), pod.key]:
            held = self.cache.unnominate(key)
            if held is not None:
                lifted[key] = held
        return lifted

    def _hold(self, lifted: Mapping[str, tuple[Pod, str]]) -> None:
        for held_pod, node in lifted.values():
            self.cache.nominate(held_pod, node)

    def _on_nominated_node(self, profile: Profile, pod: Pod, nominated: str) -> Outcome | None:
        """`evaluateNominatedNode`: a pod nominated by an earlier preemption goes to that node when it fits there
        now (its victims gone), without looking at the others, since the evictions were made for it there. None
        when it has no nomination or does not fit (then every node is looked at)."""
        info = self.cache.node_info(nominated) if nominated else None
        if info is None:
            return None
        nodes = self.cache.node_infos()
        fits = OneNodeFilters(profile, pod, nodes, dry_run=False).run(info, nodes).ok
        return Outcome(nominated) if fits else None

    def _preempt(self, profile: Profile, pod: Pod, nominated: str, outcome: Outcome) -> tuple[Preemption | None, int]:
        """Run the profile's PostFilter plugins until one finds a candidate; (answer, plugins run). The nodes'
        verdicts come from the decision when it computed them (the fast path does when no node fits), else from
        one exact pass."""
        if not profile.post_filter:
            return None, 0
        nodes = self.cache.node_infos()
        statuses = outcome.statuses
        if statuses is None:
            statuses = {r.name: r.filter for r in schedule_one(profile, pod, nodes, explain=False).nodes}
        lowest = self.cache.lowest_priority()
        budgets: Sequence[DisruptionBudget] | None = None
        answer: Preemption | None = None
        runs = 0
        for plugin in profile.post_filter:
            runs += 1
            if budgets is None:
                budgets = self.budgets() if lowest is None or lowest < pod.priority else ()
            answer = plugin.post_filter(
                profile, pod, statuses, nodes, self.cache.node_info_without, nominated, lowest, budgets
            )
            if answer.candidate is not None:
                break
        return answer, runs
