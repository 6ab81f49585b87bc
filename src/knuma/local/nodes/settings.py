"""How a fleet of simulated nodes runs (`FleetSettings`) and what it counts while it runs (`FleetStats`).

Apart from `fleet` so that `heartbeats` can read both without importing the fleet that drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FleetSettings", "FleetStats"]


@dataclass(frozen=True)
class FleetSettings:
    state_dir: Path | None = None
    """Node files and checkpoints (`<state_dir>/nodes/<node>/`); None keeps nothing on disk."""
    sockets_dir: Path | None = None
    """Serve PodResources per node on `<sockets_dir>/<node>.sock`; None serves none."""
    nrt: str = "in-process"
    """`in-process` publishes NRT from this process; `external` leaves it to `knuma exporter` processes."""
    lease_renew_interval: float = 10.0
    node_status_interval: float = 300.0
    nrt_min_interval: float = 1.0
    nrt_resync_interval: float = 60.0
    nrt_periodic_only: bool = False
    """Publish NRT (in-process) only every `nrt_resync_interval`, never on a change (RTE's periodic mode)."""
    write_concurrency: int = 32
    batch_interval: float = 0.05
    """Heartbeats due within this window go out together."""


@dataclass
class FleetStats:
    registered: int = 0
    lease_renewals: int = 0
    lease_failures: int = 0
    worst_renewal_gap: float = 0.0
    """Longest time between two successful renewals of one node's Lease, in seconds."""
    admitted: int = 0
    rejected: int = 0
    completed: int = 0
    released: int = 0
    status_writes: int = 0
    status_failures: int = 0
    nrt_publishes: int = 0
    nrt_failures: int = 0
    last_renewal: dict[str, float] = field(default_factory=dict)

    def renewal_lag(self, now: float) -> float:
        """How long ago the stalest Lease was renewed (0 before any renewal)."""
        return max((now - t for t in self.last_renewal.values()), default=0.0)
