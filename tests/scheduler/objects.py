"""Builders for the node-level plugin tests: core/v1 Node objects as NodeInfo, and pods with arbitrary spec fields."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from knuma.api.pod import Pod
from knuma.api.ports import HostPort
from knuma.scheduler.framework.interface import NodeInfo


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    used_ports: Iterable[HostPort] = (),
) -> NodeInfo:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }
    return NodeInfo(
        name=name,
        allocatable={"cpu": 8000, "memory": 16 << 30, "pods": 110},
        manifest=manifest,
        used_ports=frozenset(used_ports),
    )


def pod(name: str = "p", **spec: Any) -> Pod:
    """A BestEffort pod with one container, plus the given spec fields (`nodeSelector=...`, `tolerations=...`)."""
    full: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}], **spec}
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": full})


def taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out
