"""Components that run as processes rather than pods, as `knuma up` runs its exporters and scheduler: one Lease,
renewed by the program that runs them, says which processes stand for which component and whether each is running.

Without it `knuma check` on a bare `knuma up` reported every exporter and the scheduler missing (it looks for exporter
pods and scheduler Deployments), the first thing a new user saw. kube-apiserver announces its instances the same way:
a Lease per instance in `kube-system`, renewed every 10 s, that other components read for who is alive (KEP-1965,
`APIServerIdentity`). A Lease rather than a ConfigMap because it carries its own expiry: a record whose holder
stopped renewing is ignored, so a stale record never vouches for processes that are gone.

This module is the contract between the writer (`knuma.local.up`) and the reader (`knuma check`): the object's name,
its annotation's JSON, and when a record counts. Pure: times are passed in.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knuma.api.types import JsonObj
from knuma.kube.events import parse_timestamp

__all__ = [
    "ANNOTATION",
    "LEASE_NAME",
    "LEASE_NAMESPACE",
    "LEASE_PATH",
    "PAUSED",
    "RUNNING",
    "STOPPED",
    "LocalProcesses",
    "Process",
]

LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "knuma-up"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"
ANNOTATION = "sim.knuma.io/processes"
MANAGED_BY = "knuma-up"
DURATION_SECONDS = 40
"""How long a record counts after its last renewal: four renewals (`RENEW_SECONDS`) missed, as a node Lease's 40 s
covers four of the kubelet's 10 s renewals."""
RENEW_SECONDS = 10.0

RUNNING = "running"
PAUSED = "paused"
"""Stopped on purpose (SIGSTOP): it stands for a process on a node cut off from the API server."""
STOPPED = "stopped"
"""Exited; the program running it starts it again (with backoff), or stops the whole cluster if it keeps failing."""
_STATES = (RUNNING, PAUSED, STOPPED)


@dataclass(frozen=True, slots=True)
class Process:
    state: str
    """`RUNNING`, `PAUSED` or `STOPPED`."""
    pid: int | None
    log: str
    """Its log file, the first place to look when it is not running."""
    nodes: tuple[str, ...] = ()
    """For an exporter: the nodes whose NRT it publishes (one, or every node for `knuma up --exporters in-process`,
    where the simulated nodes' process publishes them)."""
    reason: str = ""
    """Why it is not running and what brings it back, in the words of the program that runs it (which knows)."""

    def describe(self) -> str:
        """`process 1234 of knuma up`, or `paused process 1234 of knuma up`."""
        pid = f" {self.pid}" if self.pid is not None else ""
        prefix = "" if self.state == RUNNING else f"{self.state} "
        return f"{prefix}process{pid} of knuma up"

    def what_to_do(self) -> str:
        """The fix line of a process that is not running."""
        see = f"its log: {self.log}" if self.log else ""
        return "; ".join(part for part in (self.reason, see) if part) or "restart knuma up"

    def to_json(self) -> JsonObj:
        out: JsonObj = {"state": self.state, "pid": self.pid, "log": self.log}
        if self.nodes:
            out["nodes"] = list(self.nodes)
        if self.reason:
            out["reason"] = self.reason
        return out

    @staticmethod
    def from_json(raw: Any) -> Process:
        if not isinstance(raw, Mapping) or raw.get("state") not in _STATES:
            raise ValueError(f"not a process record: {raw!r}")
        pid = raw.get("pid")
        nodes = raw.get("nodes") or []
        return Process(
            str(raw["state"]),
            pid if isinstance(pid, int) else None,
            str(raw.get("log") or ""),
            tuple(str(n) for n in nodes) if isinstance(nodes, list) else (),
            str(raw.get("reason") or ""),
        )


@dataclass(frozen=True, slots=True)
class LocalProcesses:
    """What one `knuma up` runs as processes: its exporters and its scheduler (with the configuration it was started
    with, so `knuma check` reads its profiles as it reads a Deployment's ConfigMap)."""

    holder: str
    """Who renews the record (`knuma up`'s host and pid)."""
    exporters: tuple[Process, ...] = ()
    scheduler: Process | None = None
    scheduler_configuration: JsonObj | None = None
    by_node: dict[str, Process] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_node", {node: p for p in self.exporters for node in p.nodes})

    def exporter_of(self, node: str) -> Process | None:
        return self.by_node.get(node)

    def annotation(self) -> str:
        doc: JsonObj = {"exporters": [p.to_json() for p in self.exporters]}
        if self.scheduler is not None:
            doc["scheduler"] = {**self.scheduler.to_json(), "configuration": self.scheduler_configuration}
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))

    def lease(self, now: dt.datetime) -> JsonObj:
        """The whole Lease, renewed at `now` (a create, or a merge patch of the annotation and `spec`)."""
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": LEASE_NAME,
                "namespace": LEASE_NAMESPACE,
                "labels": {"app.kubernetes.io/managed-by": MANAGED_BY},
                "annotations": {ANNOTATION: self.annotation()},
            },
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": DURATION_SECONDS,
                "renewTime": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }

    @staticmethod
    def from_lease(lease: JsonObj | None, now: dt.datetime) -> LocalProcesses | None:
        """The record, or None when there is none, it expired (its holder stopped renewing it), or it is not one
        this module wrote (a Lease of that name edited by hand)."""
        if not isinstance(lease, Mapping):
            return None
        spec = lease.get("spec") or {}
        renewed = parse_timestamp(spec.get("renewTime"))
        duration = spec.get("leaseDurationSeconds")
        if renewed is None or not isinstance(duration, int):
            return None
        if now > renewed + dt.timedelta(seconds=duration):
            return None
        raw = ((lease.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
        try:
            doc = json.loads(raw) if isinstance(raw, str) else None
            if not isinstance(doc, Mapping):
                return None
            exporters = tuple(Process.from_json(p) for p in doc.get("exporters") or [])
            sched = doc.get("scheduler")
            scheduler = Process.from_json(sched) if sched is not None else None
        except ValueError:
            return None
        config = sched.get("configuration") if isinstance(sched, Mapping) else None
        return LocalProcesses(
            str(spec.get("holderIdentity") or ""),
            exporters,
            scheduler,
            dict(config) if isinstance(config, Mapping) else None,
        )
