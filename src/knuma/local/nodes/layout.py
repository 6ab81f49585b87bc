"""Where a simulated node keeps its files: sysfs tree, kubelet configuration, exporter notify file, checkpoint, and
its PodResources socket.

`knuma up` and the node process agree on these paths without talking: the node process writes them, the exporters
it starts read them. Sockets live in a separate short directory because a unix socket path is limited to about 107
bytes, which a data directory deep in a home directory can exceed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["NodeFiles"]


@dataclass(frozen=True)
class NodeFiles:
    root: Path
    """`<state dir>/nodes/<node>`."""
    socket: Path

    @classmethod
    def of(cls, state_dir: Path, sockets_dir: Path, node: str) -> NodeFiles:
        return cls(state_dir / "nodes" / node, sockets_dir / f"{node}.sock")

    @property
    def sysfs(self) -> Path:
        return self.root / "sys"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet-config.yaml"

    @property
    def notify(self) -> Path:
        """Touched after every admission and release, as an OCI hook would, so the exporter updates at once."""
        return self.root / "notify"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint.json"

    @property
    def podresources_address(self) -> str:
        return f"unix://{self.socket}"
