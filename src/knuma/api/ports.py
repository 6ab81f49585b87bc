"""Host ports (core/v1 `containerPort.hostPort`): which a pod takes on its node and when two conflict, as
kube-scheduler's `HostPortInfo` decides.

An empty `hostIP` means `0.0.0.0` (every address) and an empty protocol means TCP. A port bound on `0.0.0.0`
conflicts with the same protocol and port on any address; a port on a specific address conflicts with the same one
on that address or on `0.0.0.0`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = ["BIND_ALL", "HostPort", "conflicts", "pod_host_ports"]

BIND_ALL = "0.0.0.0"


class HostPort(NamedTuple):
    ip: str
    protocol: str
    port: int


def _ports(container: Any) -> Iterable[HostPort]:
    if not isinstance(container, Mapping):
        return
    for raw in container.get("ports") or ():
        if not isinstance(raw, Mapping):
            continue
        port = raw.get("hostPort")
        if not isinstance(port, int) or isinstance(port, bool) or port <= 0:
            continue
        yield HostPort(str(raw.get("hostIP") or BIND_ALL), str(raw.get("protocol") or "TCP"), port)


def pod_host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """`schedutil.GetHostPorts`: host ports of the app containers and of the sidecars (init containers with
    `restartPolicy: Always`, which run as long as the pod)."""
    out: list[HostPort] = []
    init: Sequence[Any] = spec.get("initContainers") or ()
    for container in init:
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            out.extend(_ports(container))
    for container in spec.get("containers") or ():
        out.extend(_ports(container))
    return tuple(out)


def conflicts(used: Iterable[HostPort], wanted: HostPort) -> bool:
    """`HostPortInfo.CheckConflict`: does `wanted` clash with a port already in `used`?"""
    for port in used:
        if port.port != wanted.port or port.protocol != wanted.protocol:
            continue
        if wanted.ip == BIND_ALL or port.ip in (BIND_ALL, wanted.ip):
            return True
    return False
