"""What `knuma up` runs: the cluster (from flags, a cluster spec file, or a data directory being resumed) and where
everything lives.

The data directory (`--data-dir`) keeps the API server's objects (`apiserver/`), the cluster spec it was started with
(`cluster.yaml`), every node's checkpoint and exporter files (`nodes/<node>/`), the kubeconfig and the logs. A second
`knuma up --data-dir DIR` resumes that cluster; flags that describe a different cluster are an error, so a resumed
cluster never silently changes shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from knuma.api.nrt import Policy, Scope
from knuma.duration import DurationError, format_duration, parse_duration
from knuma.errors import InvalidInput, OperationFailed
from knuma.local.controllers.evictionzones import EvictionRates
from knuma.local.controllers.fabric_attach import DEFAULT_ATTACH_DELAY
from knuma.testbed.cluster import ClusterSpec, SpecError, cluster_from_dict, load_yaml
from knuma.testbed.fabric import MAX_DEVICES
from knuma.testbed.shapes import BUILTIN_SHAPES

__all__ = [
    "DEFAULT_NODES",
    "DEFAULT_SHAPE",
    "UpError",
    "UpFailed",
    "UpOptions",
    "fabric_options",
    "resolve_cluster",
    "save_cluster",
]

DEFAULT_NODES = 3
DEFAULT_SHAPE = "two-socket"
CLUSTER_FILE = "cluster.yaml"


class UpError(InvalidInput):
    """Options `knuma up` cannot run with; the message says what to change (exit 2)."""


class UpFailed(OperationFailed):
    """The cluster could not start with valid options: the port is taken, the nodes did not come up (exit 1)."""


@dataclass(frozen=True)
class UpOptions:
    nodes: int | None = None
    shapes: tuple[str, ...] = ()
    policy: str | None = None
    scope: str | None = None
    cluster_file: Path | None = None
    data_dir: Path | None = None
    port: int | None = None
    kubeconfig_out: Path | None = None
    exporters: str = "auto"
    """`process` (one `knuma exporter` per node), `in-process`, or `auto` (processes up to 8 nodes)."""
    scheduler: bool = True
    lease_renew_interval: float = 10.0
    load: tuple[Path, ...] = ()
    """Manifests (files or directories) created once the API server is up, before the nodes start."""
    nrt_period: float | None = None
    """Seconds: every exporter publishes only on this period, never on a node change (RTE's periodic mode), so the
    NRT the scheduler sees is up to that old. None: publish within a second of every change."""
    node_monitor_period: float = 5.0
    """Seconds between the node lifecycle controller's health checks (`--node-monitor-period`)."""
    node_monitor_grace_period: float = 40.0
    """Seconds a node's kubelet may be silent before the node lifecycle controller marks it `Unknown` and taints it
    (`knuma.local.controllers.nodelifecycle`)."""
    node_startup_grace_period: float = 60.0
    """The same for a node whose kubelet never reported its Ready condition (`--node-startup-grace-period`)."""
    eviction_rates: EvictionRates = field(default_factory=EvictionRates)
    """How fast failed nodes are tainted NoExecute per zone, and when that stops
    (`knuma.local.controllers.evictionzones`)."""
    fabric_gpus: int = 0
    """GPUs of the simulated fabric driver, reachable from every node and attached to one once allocated
    (`knuma.local.controllers.fabric_attach`); 0: no fabric driver runs."""
    fabric_attach_delay: float = DEFAULT_ATTACH_DELAY
    """Seconds from a fabric device's allocation to its driver reporting it attached."""

    @property
    def describes_cluster(self) -> bool:
        return bool(self.nodes is not None or self.shapes or self.policy or self.scope or self.cluster_file)


def _from_flags(options: UpOptions) -> dict[str, Any]:
    shapes = options.shapes or (DEFAULT_SHAPE,)
    unknown = [s for s in shapes if s not in BUILTIN_SHAPES]
    if unknown:
        raise UpError(
            f"unknown --shape {', '.join(unknown)}; built-in shapes: {', '.join(sorted(BUILTIN_SHAPES))} "
            "(custom shapes go in a --cluster file)"
        )
    nodes = DEFAULT_NODES if options.nodes is None else options.nodes
    if nodes < 1:
        raise UpError(f"--nodes must be at least 1, got {nodes}")
    if nodes < len(shapes):
        raise UpError(f"--nodes {nodes} is fewer than the {len(shapes)} shapes given; every shape needs a node")
    try:
        policy = Policy.parse(options.policy or Policy.SINGLE_NUMA_NODE.value)
        scope = Scope.parse(options.scope or Scope.CONTAINER.value)
    except ValueError as err:
        raise UpError(str(err)) from None
    counts = [nodes // len(shapes) + (1 if i < nodes % len(shapes) else 0) for i in range(len(shapes))]
    pools = [
        {
            "name": "worker" if len(shapes) == 1 else shape,
            "shape": shape,
            "count": count,
            "policy": policy.value,
            "scope": scope.value,
        }
        for shape, count in zip(shapes, counts, strict=True)
    ]
    return {"kind": "SimCluster", "pools": pools}


def resolve_cluster(options: UpOptions) -> tuple[ClusterSpec, dict[str, Any]]:
    """The cluster to run and the spec document to keep in the data directory."""
    if options.cluster_file is not None and (options.nodes is not None or options.shapes or options.policy):
        raise UpError("--cluster describes the nodes; drop --nodes, --shape and --policy, or drop --cluster")
    saved_path = options.data_dir / CLUSTER_FILE if options.data_dir is not None else None
    saved = None
    if saved_path is not None and saved_path.is_file():
        saved = _parse(_load(saved_path), str(saved_path))
    if options.cluster_file is not None:
        raw, where = _load(options.cluster_file), str(options.cluster_file)
    elif saved is not None and not options.describes_cluster:
        return saved
    else:
        raw, where = _from_flags(options), "flags"
    spec, document = _parse(raw, where)
    if saved is not None and saved[0] != spec:
        raise UpError(
            f"{options.data_dir} holds a cluster of {saved[0].describe()}; these options describe "
            f"{spec.describe()}. Run without --nodes/--shape/--policy/--cluster to resume it, or use another "
            "--data-dir"
        )
    return spec, document


def _load(path: Path) -> Any:
    try:
        return load_yaml(path)
    except SpecError as err:
        raise UpError(str(err)) from None


def _parse(raw: Any, where: str) -> tuple[ClusterSpec, dict[str, Any]]:
    try:
        spec = cluster_from_dict(raw, where)
    except SpecError as err:
        raise UpError(str(err)) from None
    return spec, dict(raw)


def save_cluster(data_dir: Path, document: dict[str, Any]) -> Path:
    path = data_dir / CLUSTER_FILE
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _seconds(raw: str, flag: str) -> float:
    """A Go duration given to `flag`, or an `UpError` naming the flag."""
    try:
        return parse_duration(raw)
    except DurationError as err:
        raise UpError(f"{flag}: {err}") from None


def grace_period_seconds(raw: str, lease_renew_interval: float, flag: str = "--node-monitor-grace-period") -> float:
    """`--node-monitor-grace-period` (or `--node-startup-grace-period`, `flag`): a Go duration of at least twice the
    Lease renewal interval (the controller sees a renewal up to a monitor period late, so a shorter grace marks healthy
    nodes `Unknown` between two renewals; upstream's defaults are 40 s and 60 s against 10 s)."""
    seconds = _seconds(raw, flag)
    if seconds < 2 * lease_renew_interval:
        raise UpError(
            f"{flag} must be at least twice the node Lease renewal interval ({lease_renew_interval:g}s), got {raw!r}"
        )
    return seconds


def monitor_period_seconds(raw: str, grace_period: float) -> float:
    """`--node-monitor-period`: a Go duration above 0 (0 would check without pause) and shorter than the grace period
    (a node is found silent up to a period after its grace ran out; a period as long as the grace doubles it)."""
    seconds = _seconds(raw, "--node-monitor-period")
    if not 0 < seconds < grace_period:
        raise UpError(
            f"--node-monitor-period must be above 0 and shorter than --node-monitor-grace-period "
            f"({format_duration(grace_period)}), got {raw!r}"
        )
    return seconds


def eviction_rates(
    eviction_rate: float, secondary_eviction_rate: float, large_cluster_size_threshold: int, unhealthy_threshold: float
) -> EvictionRates:
    """kube-controller-manager's eviction flags, checked: finite rates of 0 or more (0: one node per zone, then none,
    as kube-controller-manager's zero-rate limiter), a size of 0 or more, a threshold above 0 and at most 1 (a share
    of the zone's nodes)."""
    for flag, value in (
        ("--node-eviction-rate", eviction_rate),
        ("--secondary-node-eviction-rate", secondary_eviction_rate),
        ("--large-cluster-size-threshold", large_cluster_size_threshold),
    ):
        if not math.isfinite(value):
            raise UpError(f"{flag} must be a number, got {value}")
        if value < 0:
            raise UpError(f"{flag} must be 0 or more, got {value:g}")
    if not 0 < unhealthy_threshold <= 1:
        raise UpError(
            "--unhealthy-zone-threshold is a share of a zone's nodes: above 0 and at most 1, "
            f"got {unhealthy_threshold:g}"
        )
    return EvictionRates(eviction_rate, secondary_eviction_rate, large_cluster_size_threshold, unhealthy_threshold)


def nrt_period_seconds(raw: str) -> float:
    """`--nrt-period`: a Go duration of at least one second."""
    seconds = _seconds(raw, "--nrt-period")
    if seconds < 1:
        raise UpError(f"--nrt-period must be at least 1s, got {raw!r}")
    return seconds


def fabric_options(gpus: int, attach_delay: str | None) -> tuple[int, float]:
    """`--fabric-gpus` (0 to the 128 devices one ResourceSlice holds) and `--fabric-attach-delay` (a Go duration of 0
    or more, which means nothing without fabric GPUs)."""
    if not 0 <= gpus <= MAX_DEVICES:
        raise UpError(f"--fabric-gpus must be 0 to {MAX_DEVICES} (the devices one ResourceSlice holds), got {gpus}")
    if attach_delay is None:
        return gpus, DEFAULT_ATTACH_DELAY
    if not gpus:
        raise UpError("--fabric-attach-delay needs --fabric-gpus")
    seconds = _seconds(attach_delay, "--fabric-attach-delay")
    if seconds < 0:
        raise UpError(f"--fabric-attach-delay must be 0 or more, got {attach_delay!r}")
    return gpus, seconds
