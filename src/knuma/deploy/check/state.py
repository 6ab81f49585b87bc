"""What `knuma check` looks at: one snapshot of the cluster, as plain API objects.

The checks (`knuma.deploy.check.nodes`, `.scheduling`) are pure functions of this snapshot, so a unit test builds one
by hand and the command builds one with `knuma.deploy.check.gather`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from knuma.api.types import JsonObj
from knuma.deploy.check.processes import LocalProcesses

__all__ = ["DEFAULT_SCHEDULER", "EXPORTER_SELECTORS", "CheckSettings", "ClusterState", "SchedulerDeployment"]

DEFAULT_SCHEDULER = "topology-aware-scheduler"
EXPORTER_SELECTORS = (
    "app.kubernetes.io/name=knuma-exporter",  # knuma deploy and knuma operator
    "name=resource-topology",  # resource-topology-exporter (deployer, numaresources-operator)
    "app=nfd-topology-updater",  # node-feature-discovery's topology updater
)
"""Pod labels of the exporters `knuma check` recognises on its own (`--exporter-selector` adds others)."""


@dataclass(frozen=True, slots=True)
class CheckSettings:
    node_selector: str = ""
    """Label selector of the nodes to check; empty: every node that is not a control-plane node."""
    scheduler_name: str = DEFAULT_SCHEDULER
    exporter_selectors: tuple[str, ...] = EXPORTER_SELECTORS
    stale_grace: float = 5.0
    """Seconds to wait before re-reading a node whose NRT does not reflect its pods (the exporter may be about to
    publish); only nodes still stale after it are reported."""


@dataclass(frozen=True, slots=True)
class SchedulerDeployment:
    """A Deployment that runs a scheduler, and the scheduler configuration read from its ConfigMap volumes."""

    deployment: JsonObj
    config: JsonObj | None
    """The `KubeSchedulerConfiguration`, None when no mounted ConfigMap holds one."""
    config_error: str = ""
    """Why the configuration could not be read (ConfigMap missing, forbidden, not YAML)."""

    @property
    def ref(self) -> str:
        md = self.deployment["metadata"]
        return f"{md.get('namespace', '')}/{md['name']}"


@dataclass(frozen=True, slots=True)
class ClusterState:
    nodes: list[JsonObj]
    """The nodes to check."""
    nrts: dict[str, JsonObj]
    """NodeResourceTopology objects by name (= node name)."""
    nrt_crd_served: bool
    configz: dict[str, JsonObj | str]
    """Node -> its KubeletConfiguration, or why it could not be read."""
    pods: list[JsonObj]
    """Every pod of the cluster."""
    events: list[JsonObj]
    """`FailedScheduling` events."""
    schedulers: list[SchedulerDeployment] = field(default_factory=list)
    exporter_selectors: tuple[str, ...] = EXPORTER_SELECTORS
    processes: LocalProcesses | None = None
    """The exporters and scheduler `knuma up` runs as processes, when its record is current."""

    @property
    def node_names(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in self.nodes)
