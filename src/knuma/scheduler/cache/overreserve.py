"""`overreserve`: upstream's reserving cache (scheduler-plugins `cache/overreserve.go`, `store.go`,
`foreign_pods.go`, `attr_watch.go`; used upstream when `cacheResyncPeriodSeconds` > 0).

What it does, following upstream function by function:

- `GetCachedNRTCopy` → `view`: a node marked with foreign pods is not fresh (Filter rejects it); otherwise the stored
  NRT minus every assumed pod's effective request, taken from *every* zone that lists the resource (clamped at 0):
  pessimistic, because the scheduler does not know which zone the kubelet will pick.
- `ReserveNodeResources` / `UnreserveNodeResources` → `reserve` / `unreserve`: only nodes with stored NRT data track
  assumed pods (PR #958). Assumed pods stay subtracted until a resync flushes the node, even after they terminate.
- `NodeMaybeOverReserved` → `node_maybe_over_reserved`: a Filter rejection marks the node for resync.
- `SetupForeignPodsDetector` / `IsForeignPod`: a pod bound by a scheduler that is none of this daemon's profiles marks
  its node (`cache.foreignPodsDetect`: `All`, `OnlyExclusiveResources`, or `None` to disable).
- `Resync` (every `cacheResyncPeriodSeconds`): for each node marked over-reserved or with foreign pods, the latest
  published NRT (what upstream's client GET returns) is adopted when its pod fingerprint equals the fingerprint of the
  pods the scheduler sees on the node (`makeNodeToPodDataMap`, `checkPodFingerprintForNode`); then the assumed pods
  and the marks are dropped (`FlushNodes`). `cache.resyncMethod` picks which pods count: `All`,
  `OnlyExclusiveResources`, or `Autodetect` (exclusive-only when the NRT's `nodeTopologyPodsFingerprintMethod` says
  `with-exclusive-resources`, `podFingerprintForNodeTopology`). Nodes without any relevant pod, or whose NRT has no
  fingerprint, are skipped. `cache.informerMode` decides which pods are relevant (`podprovider`): `Dedicated` sees
  terminal pods too and counts every pod that left Pending; `Shared` counts Running pods only.
- `cache.resyncScope: All` (`attr_watch.go`): an NRT whose Topology Manager policy, scope or max NUMA nodes changed
  is adopted at the next resync without a fingerprint check.
- `checkPodFingerprintForNode`'s tracing status (`podfingerprint.Status`, dumped by pfpstatus when `PFP_STATUS_DUMP`
  is set): with a `debug` dump every check is recorded with the cache state behind it
  (`knuma.scheduler.cache.resyncdebug`).

One difference, on purpose: upstream lists NRT objects once at start and never stores NRTs created later (issue
#967: such nodes look like nodes without NRT data, and every pod passes their Filter). knuma stores an NRT the first
time it sees it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from knuma.api.fingerprint import Method, compute
from knuma.api.pod import Pod
from knuma.scheduler.cache.interface import NO_DATA, PENDING, RUNNING, BoundPod, NRTView, OnChange, PublishedNRT
from knuma.scheduler.cache.reservation import holds_exclusive_resources
from knuma.scheduler.cache.resyncdebug import ResyncCheck, ResyncDump
from knuma.topology.node import NodeTopology

__all__ = ["OverReserve"]

_FOREIGN = NRTView(None, fresh=False)


class OverReserve:
    mode = "overreserve"
    tracks_rejections = True

    def __init__(
        self,
        resync_period: float,
        on_change: OnChange = lambda _: None,
        *,
        profile_names: Collection[str] = (),
        foreign_pods_detect: str = "All",
        resync_method: str = "Autodetect",
        informer_mode: str = "Dedicated",
        resync_scope: str = "All",
        debug: ResyncDump | None = None,
    ) -> None:
        self.debug = debug
        """The resync debug dump (`cacheResyncDebug: DumpJSONFile`); None: checks are not recorded."""
        self.resync_period: float | None = resync_period
        self.on_change = on_change
        self.profile_names = frozenset(profile_names)
        self.foreign_pods_detect = foreign_pods_detect
        self.resync_method = resync_method
        self.informer_mode = informer_mode
        self.resync_scope = resync_scope
        self.store: dict[str, NodeTopology] = {}
        """The NRT data the views start from (replaced only by a flush)."""
        self.published: dict[str, PublishedNRT] = {}
        """The latest NRT per node: what a GET of the object returns at resync."""
        self.assumed: dict[str, dict[str, Mapping[str, int]]] = {}
        self.maybe_over_reserved: set[str] = set()
        self.foreign: set[str] = set()
        self.config_changed: set[str] = set()
        self.pods: dict[str, dict[str, BoundPod]] = {}
        """node → the pods the pod informer shows there (the pod lister resync reads)."""
        self.flushes = 0
        self.generation = 0
        self._views: dict[str, NRTView] = {}
        self._versions: dict[str, int] = {}
        """node → bumped whenever what resync counts there may change (its pods, its stored NRT)."""
        self._counted: dict[str, tuple[int, bool, bool, tuple[tuple[str, str], ...], str]] = {}
        """node → (version, only exclusive, any relevant pod, the pods counted, their fingerprint) at the last resync
        that checked it: a node whose pods did not change since is not listed and hashed again."""

    # -- GetCachedNRTCopy --------------------------------------------------------------------------------------

    def view(self, node: str) -> NRTView:
        found = self._views.get(node)
        if found is None:
            found = self._views[node] = self._view(node)
        return found

    def _view(self, node: str) -> NRTView:
        if node in self.foreign:
            return _FOREIGN
        topology = self._reserved_topology(node)
        return NO_DATA if topology is None else NRTView(topology)

    def _reserved_topology(self, node: str) -> NodeTopology | None:
        """The stored NRT minus the assumed pods (None: no NRT data)."""
        base = self.store.get(node)
        if base is None:
            return None
        assumed = self.assumed.get(node)
        if not assumed:
            return base
        # Each pod taken from each zone in turn, clamped at 0, is the pods' sum taken once, clamped at 0 (requests
        # are not negative): one pass over the zones instead of one per pod.
        total: dict[str, int] = {}
        for request in assumed.values():
            for name, amount in request.items():
                total[name] = total.get(name, 0) + amount
        available = {
            z.id: {name: max(0, amount - total.get(name, 0)) for name, amount in z.available.items()}
            for z in base.zones
        }
        return base.with_available(available)

    def _changed(self, node: str) -> None:
        self._views.pop(node, None)
        self.on_change(node)

    # -- NRT events ----------------------------------------------------------------------------------------------

    def nrt_updated(self, nrt: PublishedNRT) -> None:
        self.published[nrt.node] = nrt
        stored = self.store.get(nrt.node)
        if stored is None:
            self.store[nrt.node] = nrt.topology  # first sight (upstream: only at start, issue #967)
            self._bump(nrt.node)
            self._changed(nrt.node)
            # Upstream lists every NRT before its pod informer starts, so a foreign pod always finds its node's
            # data; here the informers sync concurrently, so pods seen before their node's NRT are checked now.
            for pod in list(self.pods.get(nrt.node, {}).values()):
                self._detect_foreign(pod)
        elif self.resync_scope == "All" and stored.config != nrt.topology.config:
            self.config_changed.add(nrt.node)

    def nrt_deleted(self, node: str) -> None:
        self.published.pop(node, None)

    # -- pods: the pod lister and the foreign-pods detector ------------------------------------------------------

    def pod_updated(self, pod: BoundPod) -> None:
        on_node = self.pods.setdefault(pod.node, {})
        if self.informer_mode == "Shared" and pod.terminal:
            on_node.pop(pod.key, None)  # the scheduler's shared informer drops terminal pods
        else:
            on_node[pod.key] = pod
        self._bump(pod.node)
        self._detect_foreign(pod)

    def pod_deleted(self, key: str, node: str) -> None:
        gone = self.pods.get(node, {}).pop(key, None)
        if gone is not None:
            self._bump(node)
            self._detect_foreign(gone)

    def _bump(self, node: str) -> None:
        self._versions[node] = self._versions.get(node, 0) + 1

    def _detect_foreign(self, pod: BoundPod) -> None:
        """`IsForeignPod` + `NodeHasForeignPods` (only nodes with stored NRT data are marked)."""
        if self.foreign_pods_detect == "None" or pod.scheduler_name in self.profile_names:
            return
        if self.foreign_pods_detect == "OnlyExclusiveResources" and not (
            pod.pod is not None and holds_exclusive_resources(pod.pod, self.store.get(pod.node))
        ):
            return
        if pod.node in self.store and pod.node not in self.foreign:
            self.foreign.add(pod.node)
            self._changed(pod.node)

    def _relevant(self, pod: BoundPod) -> bool:
        """`podprovider`'s filter: Dedicated counts every pod that left Pending, Shared only Running ones."""
        return pod.phase == RUNNING if self.informer_mode == "Shared" else pod.phase != PENDING

    # -- the scheduler's own calls -------------------------------------------------------------------------------

    def node_maybe_over_reserved(self, node: str) -> None:
        self.maybe_over_reserved.add(node)

    def nodes_maybe_over_reserved(self, nodes: Iterable[str]) -> None:
        self.maybe_over_reserved.update(nodes)

    def reserve(self, node: str, pod: Pod) -> None:
        if node not in self.store:
            return
        self.assumed.setdefault(node, {})[pod.key] = pod.effective_request
        self._changed(node)

    def unreserve(self, node: str, pod: Pod) -> None:
        assumed = self.assumed.get(node)
        if assumed is not None and assumed.pop(pod.key, None) is not None:
            self._changed(node)

    def post_bind(self, node: str, pod: Pod) -> None:
        del node, pod

    def reserved(self, node: str) -> int:
        return len(self.assumed.get(node, ()))

    # -- Resync ----------------------------------------------------------------------------------------------------

    def informers_synced(self) -> None:
        return None

    def resync(self) -> bool:
        """One resync pass; True if a node was flushed (its view changed). With a `debug` dump, every check is
        recorded (`knuma.scheduler.cache.resyncdebug`), with the node's assumed pods and view before the check."""
        before = self.flushes
        for node in sorted(self.foreign | self.maybe_over_reserved):
            published = self.published.get(node)
            debug = self._debug_context(node) if self.debug is not None else None
            if published is None or not published.fingerprint:
                self._record(debug, node, published, (), "", "skipped: missing NodeTopology podset fingerprint data")
                continue
            only_exclusive = self._only_exclusive(published)
            any_pod, counted, computed = self._count(node, only_exclusive)
            if not any_pod:
                self._record(debug, node, published, (), "", "skipped: cannot find any pod for node")
                continue
            if computed != published.fingerprint:
                # the NRT does not count what the scheduler sees yet: stay dirty
                self._record(debug, node, published, counted, computed, "mismatch", only_exclusive)
                continue
            self._record(debug, node, published, counted, computed, "flushed", only_exclusive)
            self._flush(published)
        for node in sorted(self.config_changed):
            published = self.published.get(node)
            if published is not None:
                debug = self._debug_context(node) if self.debug is not None else None
                self._record(debug, node, published, (), "", "config-changed")
                self._flush(published)
        if self.debug is not None:
            self.debug.write()
        return self.flushes != before

    def _count(self, node: str, only_exclusive: bool) -> tuple[bool, tuple[tuple[str, str], ...], str]:
        """`makeNodeToPodDataMap` + the fingerprint of one node: whether any relevant pod is there, the pods counted
        (all relevant ones, or those holding exclusive resources), their fingerprint; reused while the node's pods
        and stored NRT stay as they were."""
        version = self._versions.get(node, 0)
        cached = self._counted.get(node)
        if cached is not None and cached[0] == version and cached[1] == only_exclusive:
            return cached[2], cached[3], cached[4]
        pods = [p for p in self.pods.get(node, {}).values() if self._relevant(p)]
        any_pod = bool(pods)
        counted: tuple[tuple[str, str], ...] = ()
        computed = ""
        if any_pod:
            if only_exclusive:
                base = self.store.get(node)
                pods = [p for p in pods if p.pod is not None and holds_exclusive_resources(p.pod, base)]
            counted = tuple((p.namespace, p.name) for p in pods)
            computed = compute(counted)
        self._counted[node] = (version, only_exclusive, any_pod, counted, computed)
        return any_pod, counted, computed

    def _debug_context(self, node: str) -> tuple[tuple[str, ...], dict[str, dict[str, int]], tuple[str, ...]]:
        """(assumed pods, view per zone, dirty reasons) of `node` before its check."""
        view = self._reserved_topology(node)  # also for a node with foreign pods, whose view is "not fresh"
        zones = {f"node-{z.id}": dict(z.available) for z in view.zones} if view is not None else {}
        reasons = (
            ("foreign",) * (node in self.foreign)
            + ("maybe-over-reserved",) * (node in self.maybe_over_reserved)
            + ("config-changed",) * (node in self.config_changed)
        )
        return tuple(sorted(self.assumed.get(node, {}))), zones, reasons

    def _record(
        self,
        debug: tuple[tuple[str, ...], dict[str, dict[str, int]], tuple[str, ...]] | None,
        node: str,
        published: PublishedNRT | None,
        pods: tuple[tuple[str, str], ...],
        computed: str,
        result: str,
        only_exclusive: bool = False,
    ) -> None:
        if self.debug is None or debug is None:
            return
        assumed, view, dirty = debug
        expected = published.fingerprint if published is not None else ""
        self.debug.record(ResyncCheck(node, expected, computed, pods, result, only_exclusive, assumed, view, dirty))

    def _only_exclusive(self, nrt: PublishedNRT) -> bool:
        if self.resync_method == "OnlyExclusiveResources":
            return True
        if self.resync_method == "Autodetect":
            return nrt.fingerprint_method == Method.WITH_EXCLUSIVE_RESOURCES.value
        return False

    def _flush(self, nrt: PublishedNRT) -> None:
        """`FlushNodes`: adopt the NRT, drop the assumed pods and every mark."""
        node = nrt.node
        self.store[node] = nrt.topology
        self._bump(node)
        self.assumed.pop(node, None)
        self.maybe_over_reserved.discard(node)
        self.foreign.discard(node)
        self.config_changed.discard(node)
        self.flushes += 1
        self.generation += 1
        self._changed(node)
