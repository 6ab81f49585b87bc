"""Workload and scenario specs: the YAML a user writes, parsed into immutable objects with clear errors.

The *cluster* (node pools of shapes) is `knuma.testbed.cluster`, shared with the local cluster. A *workload* is pod
templates (a shorthand, or real Pod / Deployment manifests), counts or weights, lifetimes and an arrival process. A
*scenario* is a cluster, a workload and the simulation knobs (exporter lag, bind delay, duration, recreation).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from knuma.api.pod import Pod, PodError
from knuma.api.resources import CPU, format_amount
from knuma.api.types import INT32_MAX, INT64_MAX
from knuma.testbed.cluster import (
    ClusterSpec,
    SpecError,
    boolean,
    cluster_from_dict,
    integer,
    known,
    load_yaml,
    mapping,
    number,
    optional_string,
    spec_kind,
)

__all__ = [
    "MAX_NODES",
    "MAX_PERIODIC_EVENTS",
    "MAX_PODS",
    "MAX_RECREATIONS",
    "MAX_WEIGHT",
    "Arrival",
    "Lifetime",
    "PodArrival",
    "PodTemplate",
    "Recreate",
    "Scenario",
    "WorkloadSpec",
    "cluster_for_simulation",
    "scenario_from_dict",
    "workload_from_dict",
]

DEFAULT_NRT_PERIOD = 60.0
"""resource-topology-exporter's default poll interval (`SleepInterval = 60s`)."""
DEFAULT_RESYNC_PERIOD = 5.0
"""`cacheResyncPeriodSeconds` as commonly deployed with the overreserve cache (upstream advises >= 5 s)."""
DEFAULT_BIND_DELAY = 1.0
"""Seconds between the scheduler's bind and the kubelet's admission (watch latency plus pod sync)."""
DEFAULT_STATUS_DELAY = 1.0
"""Seconds between a kubelet event (admission with `status.startTime`, rejection, termination) and the scheduler's
informer seeing it (status manager sync plus watch latency)."""

MAX_NODES = 50_000
"""Nodes a simulated cluster may have: ten times Kubernetes' scalability limit (5,000 nodes per cluster) and more
than `knuma up` runs (`knuma.local.nodes.spec.MAX_NODES`, which points here for larger clusters). At 50,000 nodes a
scheduler's simulation takes minutes; a mistyped count (10^8) would build nodes for hours."""
MAX_PODS = 150_000
"""Pods a workload may have: Kubernetes' scalability limit of pods per cluster. Arrivals are generated up front (a
million took 8 s and 550 MB); 10^19 was a MemoryError."""
MAX_RECREATIONS = 100
"""`recreate.maxPerPod` at most: each recreation is a new pod; with no delay, an unbounded count looped for ever."""
MAX_WEIGHT = 1_000_000.0
"""A template's weight at most: weights are shares of `pods`, relative to each other (1,000,000 to 1 already gives
the light template none of 150,000 pods); a weight near a float's limit overflowed the shares."""

MAX_PERIODIC_EVENTS = 10_000_000
"""Exporter publications (nodes x horizon / nrtPeriod) or scheduler resyncs (horizon / resyncPeriod) one run may
take: a publication costs up to about 60 us of simulation (knuma's cache), so 10^7 is minutes per scheduler. The
built-in scenarios take at most a few thousand; `knuma.bench.simulate` (5000 nodes) about 55,000."""

SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes", "KnumaBinPacking")
"""NodeResourceTopologyMatch `scoringStrategy.type` values (the last one is knuma's own)."""

TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet")

_NO_DURATION = "; leave `duration` out to end two exporter periods after the last arrival"
"""What to write instead of a `duration` that is not finite."""


# -- workload --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lifetime:
    """How long a pod runs once admitted: forever (`None` mean), a fixed time, or exponentially distributed."""

    distribution: str = "infinite"
    mean: float = math.inf

    def sample(self, rng: random.Random) -> float:
        if self.distribution == "infinite":
            return math.inf
        if self.distribution == "fixed":
            return self.mean
        return rng.expovariate(1.0 / self.mean)

    @property
    def finite(self) -> bool:
        return self.distribution != "infinite"


@dataclass(frozen=True)
class PodTemplate:
    name: str
    pod: Pod
    count: int | None = None
    weight: float = 1.0
    lifetime: Lifetime = field(default_factory=Lifetime)

    def instance(self, index: int) -> Pod:
        return replace(self.pod, name=f"{self.name}-{index:05d}", uid=f"{self.name}-{index:05d}")


@dataclass(frozen=True)
class Arrival:
    """`burst`: every pod at `start`; `poisson`: exponential inter-arrival times at `rate` pods/s."""

    process: str = "burst"
    rate: float = 10.0
    start: float = 0.0


@dataclass(frozen=True)
class PodArrival:
    time: float
    pod: Pod
    template: str
    lifetime: float


@dataclass(frozen=True)
class WorkloadSpec:
    templates: tuple[PodTemplate, ...]
    pods: int
    arrival: Arrival = field(default_factory=Arrival)

    @property
    def priorities(self) -> set[int]:
        """The pods' priorities (one value: preemption never runs)."""
        return {t.pod.priority for t in self.templates}

    @property
    def static(self) -> bool:
        """No pod ever terminates: placement is a packing problem (what `optimal` solves)."""
        return not any(t.lifetime.finite for t in self.templates)

    def counts(self) -> dict[str, int]:
        """Pods per template: explicit counts, the rest of `pods` shared by weight (largest remainder)."""
        fixed = {t.name: t.count for t in self.templates if t.count is not None}
        weighted = [t for t in self.templates if t.count is None]
        out = {name: count for name, count in fixed.items() if count is not None}
        rest = max(0, self.pods - sum(out.values()))
        if weighted:
            total_weight = sum(t.weight for t in weighted)
            shares = [(t.name, rest * t.weight / total_weight) for t in weighted]
            floors = {name: int(share) for name, share in shares}
            left = rest - sum(floors.values())
            by_remainder = sorted(shares, key=lambda s: (-(s[1] - int(s[1])), s[0]))
            for name, _ in by_remainder[:left]:
                floors[name] += 1
            out.update(floors)
        return out

    def generate(self, seed: int) -> list[PodArrival]:
        """The pod arrivals for `seed`, in time order (deterministic)."""
        rng = random.Random(seed)
        counts = self.counts()
        by_name = {t.name: t for t in self.templates}
        order = [name for t in self.templates for name in [t.name] * counts.get(t.name, 0)]
        rng.shuffle(order)
        arrivals: list[PodArrival] = []
        now = self.arrival.start
        index = dict.fromkeys(by_name, 0)
        for name in order:
            template = by_name[name]
            if self.arrival.process == "poisson":
                now += rng.expovariate(self.arrival.rate)
            pod = template.instance(index[name])
            index[name] += 1
            arrivals.append(PodArrival(now, pod, name, template.lifetime.sample(rng)))
        return arrivals


def workload_from_dict(raw: Any, where: str = "workload", base: Path | None = None) -> WorkloadSpec:
    """```yaml
    pods: 300                 # total, shared by template weight (templates with `count` take theirs first)
    arrival: {process: poisson, rate: 5}
    templates:
      - name: g4
        qos: Guaranteed
        requests: {cpu: "4", memory: 8Gi}
        weight: 3
        lifetime: {distribution: exponential, mean: 600}
        priority: 1000        # optional: spec.priority (with preemptionPolicy, terminationGracePeriodSeconds)
      - name: web
        manifestFile: deployment.yaml   # or `manifest:` inline; Pod, Deployment, ReplicaSet, StatefulSet, Job
    ```"""
    raw = mapping(raw, where, "a mapping with `templates`")
    spec_kind(raw, where, "SimWorkload")
    kind = raw.get("kind")
    if kind == "Pod" or kind in TEMPLATE_KINDS:
        raise SpecError(
            f"{where}: this is a {kind}, not a SimWorkload; a workload takes it as a pod template: "
            "`kind: SimWorkload`, `templates: [{manifestFile: FILE}]` (examples/sim/workload.yaml)"
        )
    known(raw, where, {"apiVersion", "kind", "metadata", "pods", "arrival", "templates"})
    templates_raw = raw.get("templates")
    if not isinstance(templates_raw, list) or not templates_raw:
        raise SpecError(f"{where}.templates: expected a non-empty list of pod templates")
    templates = tuple(_template(t, f"{where}.templates[{i}]", base) for i, t in enumerate(templates_raw))
    names = [t.name for t in templates]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}.templates: template names must be unique, got {names}")
    explicit = sum(t.count or 0 for t in templates)
    if explicit > MAX_PODS:
        raise SpecError(
            f"{where}.templates: their counts add up to {explicit}, more than {MAX_PODS}, {_PODS_LIMIT}; lower them"
        )
    pods = integer(raw.get("pods", explicit), f"{where}.pods", maximum=MAX_PODS, limit=_PODS_LIMIT)
    if any(t.count is None for t in templates) and pods <= explicit:
        raise SpecError(f"{where}.pods: {pods} leaves no pods for the templates without a count; raise it")
    arrival_raw = _optional_mapping(raw, "arrival", where)
    known(arrival_raw, f"{where}.arrival", {"process", "rate", "start"})
    process = arrival_raw.get("process", "burst")
    if process not in ("burst", "poisson"):
        raise SpecError(f"{where}.arrival.process: expected burst or poisson, got {process!r}")
    rate = number(arrival_raw.get("rate", 10.0), f"{where}.arrival.rate", positive=True)
    start = number(arrival_raw.get("start", 0.0), f"{where}.arrival.start", minimum=0)  # the run starts at 0
    return WorkloadSpec(templates, max(pods, explicit), Arrival(process, rate, start))


def _template(raw: Any, where: str, base: Path | None) -> PodTemplate:
    raw = mapping(raw, where, "a mapping")
    known(
        raw,
        where,
        {"name", "qos", "requests", "limits", "manifest", "manifestFile", "count", "weight", "lifetime", *POD_FIELDS},
    )
    manifest: Any = raw.get("manifest")
    manifest_file = optional_string(raw, "manifestFile", where)
    if manifest_file is not None:
        path = Path(manifest_file)
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            manifest = load_yaml(path)
        except SpecError as err:
            # Name the template that points there: the file's own name alone does not say which spec asked for it.
            raise SpecError(f"{where}.manifestFile: {err}") from None
    replicas: int | None = None
    if manifest is not None:
        manifest, replicas = _pod_manifest(manifest, where)
        default_name = manifest["metadata"].get("name") or ""
    else:
        if "requests" not in raw:
            raise SpecError(f"{where}: give `requests` (with `qos`), `manifest` or `manifestFile`")
        manifest = _shorthand_manifest(raw, where)
        default_name = ""
    fields = {key: raw[key] for key in POD_FIELDS if key in raw}
    if fields:
        spec = mapping(manifest.get("spec") or {}, f"{where}.manifest.spec", "a mapping")
        manifest = {**manifest, "spec": {**spec, **_pod_fields(fields, where)}}
    name = optional_string(raw, "name", where) or default_name
    if not name:
        raise SpecError(f"{where}: a template needs a name")
    try:
        pod = Pod.from_manifest({**manifest, "metadata": {**(manifest.get("metadata") or {}), "name": name}})
    except (PodError, ValueError) as err:
        raise SpecError(f"{where}: {err}") from None
    for resource, amount in pod.effective_request.items():
        if amount > INT64_MAX:  # the scheduler counts in int64 (milli-CPUs, bytes, units), as kube-scheduler does
            raise SpecError(
                f"{where}: the pod requests {format_amount(resource, amount)} {resource}, more than a node can hold "
                f"(an int64 of {'milli-CPUs' if resource == CPU else 'units'}); lower it"
            )
    count = raw.get("count", replicas if "weight" not in raw else None)
    if count is not None:
        count = integer(count, f"{where}.count", maximum=MAX_PODS, limit=_PODS_LIMIT)
    weight = number(
        raw.get("weight", 1.0),
        f"{where}.weight",
        positive=True,
        maximum=MAX_WEIGHT,
        limit="the largest weight (weights are shares relative to each other)",
    )
    return PodTemplate(name, pod, count, weight, _lifetime(raw.get("lifetime"), f"{where}.lifetime"))


POD_FIELDS = ("priority", "preemptionPolicy", "terminationGracePeriodSeconds")
"""Pod spec fields a template may set next to its resources (over its manifest's, when it has one)."""


def _pod_fields(fields: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`priority` as admission resolves it from a PriorityClass (the simulator has no PriorityClasses, so the value
    is given: an int32, user classes at most 1,000,000,000), `preemptionPolicy` and `terminationGracePeriodSeconds`
    (how long a preemption victim may take to stop; Kubernetes' default 30), checked as kube-apiserver checks them."""
    out: dict[str, Any] = {}
    if "priority" in fields:
        value = fields["priority"]
        if not isinstance(value, int) or isinstance(value, bool) or not -INT32_MAX - 1 <= value <= INT32_MAX:
            raise SpecError(f"{where}.priority: expected an integer (a 32-bit priority value), got {value!r}")
        out["priority"] = value
    if "preemptionPolicy" in fields:
        value = fields["preemptionPolicy"]
        if value not in ("PreemptLowerPriority", "Never"):
            raise SpecError(f"{where}.preemptionPolicy: expected PreemptLowerPriority or Never, got {value!r}")
        out["preemptionPolicy"] = value
    if "terminationGracePeriodSeconds" in fields:
        value = integer(
            fields["terminationGracePeriodSeconds"],
            f"{where}.terminationGracePeriodSeconds",
            maximum=INT64_MAX,
            limit="the largest int64 (the field's type in Kubernetes)",
        )
        out["terminationGracePeriodSeconds"] = value
    return out


def _shorthand_manifest(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    qos = raw.get("qos", "Guaranteed")
    requests = mapping(raw.get("requests"), f"{where}.requests", "a mapping of resource to quantity")
    limits = raw.get("limits")
    if qos == "Guaranteed":
        if limits is not None and dict(mapping(limits, f"{where}.limits", "a mapping")) != dict(requests):
            raise SpecError(f"{where}: a Guaranteed template has limits equal to requests; drop `limits`")
        resources: dict[str, Any] = {"requests": dict(requests), "limits": dict(requests)}
    elif qos == "Burstable":
        resources = {"requests": dict(requests)}
        if limits is not None:
            resources["limits"] = dict(mapping(limits, f"{where}.limits", "a mapping"))
    elif qos == "BestEffort":
        extended = {k: v for k, v in requests.items() if k not in ("cpu", "memory")}
        if len(extended) != len(requests):
            raise SpecError(f"{where}: a BestEffort template cannot request cpu or memory")
        resources = {"requests": extended, "limits": extended}
    else:
        raise SpecError(f"{where}.qos: expected Guaranteed, Burstable or BestEffort, got {qos!r}")
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "main", "resources": resources}]}}


def _pod_manifest(manifest: Any, where: str) -> tuple[dict[str, Any], int | None]:
    """A Pod as is; a workload controller's `spec.template` (with its `replicas` as the default count)."""
    manifest = mapping(manifest, f"{where}.manifest", "a Pod or Deployment manifest")
    kind = optional_string(manifest, "kind", f"{where}.manifest") or "Pod"
    own = _optional_mapping(manifest, "metadata", f"{where}.manifest")
    name = optional_string(own, "name", f"{where}.manifest.metadata") or ""
    if kind == "Pod":
        return {**manifest, "metadata": {**own, "name": name}}, None
    if kind in TEMPLATE_KINDS:
        spec = mapping(manifest.get("spec"), f"{where}.manifest.spec", "a mapping")
        template = mapping(spec.get("template"), f"{where}.manifest.spec.template", "a pod template")
        replicas = spec.get("replicas", 1 if kind != "DaemonSet" else None)
        if replicas is not None:
            replicas = integer(replicas, f"{where}.manifest.spec.replicas", maximum=MAX_PODS, limit=_PODS_LIMIT)
        metadata = {**_optional_mapping(template, "metadata", f"{where}.manifest.spec.template"), "name": name}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec")}, replicas
    raise SpecError(f"{where}.manifest: unsupported kind {kind!r}; use Pod or one of {', '.join(TEMPLATE_KINDS)}")


def _lifetime(raw: Any, where: str) -> Lifetime:
    if raw is None or raw == "infinite":
        return Lifetime()
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return Lifetime("fixed", number(raw, where, positive=True, hint="; for pods that never end write `infinite`"))
    raw = mapping(raw, where, "a number of seconds, `infinite` or {distribution, mean}")
    known(raw, where, {"distribution", "mean"})
    distribution = raw.get("distribution", "exponential")
    if distribution not in ("fixed", "exponential", "infinite"):
        raise SpecError(f"{where}.distribution: expected fixed, exponential or infinite, got {distribution!r}")
    if distribution == "infinite":
        return Lifetime()
    mean = number(
        raw.get("mean"), f"{where}.mean", positive=True, hint="; for pods that never end write `distribution: infinite`"
    )
    return Lifetime(distribution, mean)


# -- scenario --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recreate:
    """A ReplicaSet-like controller: a pod rejected by the kubelet is replaced by a new one after `delay` seconds,
    at most `max_per_pod` times (real controllers have no such cap: that is the runaway of k/k #84869)."""

    enabled: bool = False
    delay: float = 10.0
    max_per_pod: int = 3


@dataclass(frozen=True)
class Scenario:
    name: str
    cluster: ClusterSpec
    workload: WorkloadSpec
    description: str = ""
    nrt_period: float = DEFAULT_NRT_PERIOD
    nrt_event_delay: float | None = None
    """When set, the exporter also publishes this many seconds after every change on its node (RTE notify mode)."""
    bind_delay: float = DEFAULT_BIND_DELAY
    status_delay: float = DEFAULT_STATUS_DELAY
    resync_period: float = DEFAULT_RESYNC_PERIOD
    duration: float | None = None
    """Simulated seconds; default: last arrival plus two exporter periods plus the longest fixed lifetime."""
    recreate: Recreate = field(default_factory=Recreate)
    scoring: str | None = None
    """`scoringStrategy.type` of NodeResourceTopologyMatch, for nrt-* and knuma alike; None: each scheduler's default
    (upstream's LeastAllocated for nrt-*, KnumaBinPacking for knuma)."""
    optimal: bool | None = None
    """Whether `optimal` runs: None = when the workload is static and the cluster has at most 64 nodes."""
    scheduler_restarts: tuple[float, ...] = ()
    """Simulated seconds at which the scheduler restarts: it loses its memory (reservations, shadows) and starts
    again from what its informers list (the published NRTs and the pods bound to nodes), as a restarted daemon."""

    def horizon(self, arrivals: Sequence[PodArrival]) -> float:
        if self.duration is not None:
            return self.duration
        last = max((a.time for a in arrivals), default=0.0)
        return last + 2 * self.nrt_period + self.bind_delay + self.status_delay + 30.0

    def check_length(self, arrivals: Sequence[PodArrival]) -> None:
        """Refuse a run of more than `MAX_PERIODIC_EVENTS` exporter publications (every node every `nrt_period`) or
        scheduler resyncs (every `resync_period`) before it starts: the horizon and the periods are each valid
        alone, but a duration of 1e300 s, a rate of 1e-300 pods/s or a period of 1e-300 s never finishes."""
        horizon = self.horizon(arrivals)
        span = "duration" if self.duration is not None else "the last arrival plus two exporter periods"
        nodes = self.cluster.node_count
        for events, what, key in (
            (
                nodes * horizon / self.nrt_period,
                f"{nodes} nodes publishing NRT every {self.nrt_period:g} s",
                "nrtPeriod",
            ),
            (horizon / self.resync_period, f"a scheduler resync every {self.resync_period:g} s", "resyncPeriod"),
        ):
            if not events <= MAX_PERIODIC_EVENTS:  # not `>`: NaN too
                raise SpecError(
                    f"scenario {self.name}: {horizon:g} simulated seconds ({span}) of {what} ({key}) make "
                    f"{events:.3g} events, more than the {MAX_PERIODIC_EVENTS:,} a run may take; lengthen {key} or "
                    "shorten the run (duration, or the arrivals: pods / arrival.rate)"
                )

    @property
    def optimal_supported(self) -> bool:
        if self.optimal is not None:
            return self.optimal
        # the optimum counts pods, whatever their priority: with priorities it answers another question
        return self.workload.static and len(self.workload.priorities) == 1 and self.cluster.node_count <= 64


def scenario_from_dict(raw: Any, name: str = "", base: Path | None = None, where: str = "scenario") -> Scenario:
    """```yaml
    kind: SimScenario
    name: my-cluster
    cluster: {...}        # or clusterFile: cluster.yaml
    workload: {...}       # or workloadFile: workload.yaml
    nrtPeriod: 60
    nrtEventDelay: 5
    bindDelay: 1
    statusDelay: 1
    resyncPeriod: 5
    scoringStrategy: LeastAllocated   # MostAllocated, BalancedAllocation, LeastNUMANodes, KnumaBinPacking
    duration: 1800
    recreate: {enabled: true, delay: 10, maxPerPod: 3}
    schedulerRestarts: [300, 900]     # simulated seconds at which every scheduler restarts
    optimal: auto
    ```

    `where` starts every error's key path (the scenario file's name, when it comes from one); a `clusterFile` or
    `workloadFile` starts the errors in its contents with its own path."""
    raw = mapping(raw, where, "a mapping with cluster and workload")
    spec_kind(raw, where, "SimScenario")
    known(
        raw,
        where,
        {
            "apiVersion",
            "kind",
            "metadata",
            "name",
            "description",
            "cluster",
            "clusterFile",
            "workload",
            "workloadFile",
            "nrtPeriod",
            "nrtEventDelay",
            "bindDelay",
            "statusDelay",
            "resyncPeriod",
            "scoringStrategy",
            "duration",
            "recreate",
            "schedulerRestarts",
            "optimal",
        },
    )
    cluster_raw = raw.get("cluster")
    cluster_where = f"{where}.cluster"
    if (cluster_file := optional_string(raw, "clusterFile", where)) is not None:
        path = _resolve(cluster_file, base)
        cluster_raw = load_yaml(path)
        cluster_where = str(path)
    workload_raw = raw.get("workload")
    workload_base = base
    workload_where = f"{where}.workload"
    if (workload_file := optional_string(raw, "workloadFile", where)) is not None:
        path = _resolve(workload_file, base)
        workload_raw = load_yaml(path)
        workload_base = path.parent
        workload_where = str(path)
    if cluster_raw is None:
        raise SpecError(f"{where}: missing cluster (or clusterFile)")
    if workload_raw is None:
        raise SpecError(f"{where}: missing workload (or workloadFile)")
    recreate_raw = _optional_mapping(raw, "recreate", where)
    known(recreate_raw, f"{where}.recreate", {"enabled", "delay", "maxPerPod"})
    optimal = raw.get("optimal", "auto")
    if optimal != "auto" and not isinstance(optimal, bool):  # not `in ("auto", True, False)`: 0 == False
        raise SpecError(f"{where}.optimal: expected auto, true or false, got {optimal!r}")
    scoring = raw.get("scoringStrategy")
    if scoring is not None and scoring not in SCORING_STRATEGIES:
        raise SpecError(
            f"{where}.scoringStrategy: unknown {scoring!r}; expected one of: {', '.join(SCORING_STRATEGIES)}"
        )
    event_delay = raw.get("nrtEventDelay")
    duration = raw.get("duration")
    metadata = raw.get("metadata") or {}  # a mapping with a string name or none: checked by spec_kind
    return Scenario(
        name=optional_string(raw, "name", where) or metadata.get("name") or name or "custom",
        description=optional_string(raw, "description", where) or "",
        cluster=cluster_for_simulation(cluster_raw, cluster_where),
        workload=workload_from_dict(workload_raw, workload_where, base=workload_base),
        nrt_period=number(raw.get("nrtPeriod", DEFAULT_NRT_PERIOD), f"{where}.nrtPeriod", positive=True),
        nrt_event_delay=None if event_delay is None else number(event_delay, f"{where}.nrtEventDelay", minimum=0),
        bind_delay=number(raw.get("bindDelay", DEFAULT_BIND_DELAY), f"{where}.bindDelay", minimum=0),
        status_delay=number(raw.get("statusDelay", DEFAULT_STATUS_DELAY), f"{where}.statusDelay", minimum=0),
        resync_period=number(raw.get("resyncPeriod", DEFAULT_RESYNC_PERIOD), f"{where}.resyncPeriod", positive=True),
        duration=None if duration is None else number(duration, f"{where}.duration", positive=True, hint=_NO_DURATION),
        recreate=Recreate(
            enabled=boolean(recreate_raw.get("enabled", bool(recreate_raw)), f"{where}.recreate.enabled"),
            delay=number(recreate_raw.get("delay", 10.0), f"{where}.recreate.delay", minimum=0),
            max_per_pod=integer(
                recreate_raw.get("maxPerPod", 3),
                f"{where}.recreate.maxPerPod",
                maximum=MAX_RECREATIONS,
                limit="the most recreations of one pod a simulation models",
            ),
        ),
        scoring=scoring,
        optimal=None if optimal == "auto" else optimal,
        scheduler_restarts=_restarts(raw.get("schedulerRestarts", []), f"{where}.schedulerRestarts"),
    )


def cluster_for_simulation(raw: Any, where: str = "cluster") -> ClusterSpec:
    """A cluster spec (`knuma.testbed.cluster`) of at most `MAX_NODES` nodes: the scenario's, or `--cluster`'s."""
    return cluster_from_dict(raw, where, max_nodes=MAX_NODES)


# -- helpers ---------------------------------------------------------------------------------------------------

_PODS_LIMIT = "the most pods a workload may have (Kubernetes' limit per cluster)"


def _optional_mapping(raw: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """`raw[key]` when it is a mapping, `{}` when it is absent or null; an error naming the field otherwise."""
    value = raw.get(key)
    return {} if value is None else mapping(value, f"{where}.{key}", "a mapping")


def _resolve(value: str, base: Path | None) -> Path:
    path = Path(value)
    return base / path if base is not None and not path.is_absolute() else path


def _restarts(raw: Any, where: str) -> tuple[float, ...]:
    if not isinstance(raw, list):
        raise SpecError(f"{where}: expected a list of simulated seconds, got {raw!r}")
    return tuple(sorted(number(value, f"{where}[{index}]", minimum=0) for index, value in enumerate(raw)))
