"""`knuma check`: is the NUMA-aware scheduling stack on this cluster working? (numaresources-operator's
`nrovalidate`, extended.)

Per node: the NRT object is there and reflects the node's pods, its Topology Manager attributes are the kubelet's
(`configz`), an exporter pod runs there. Cluster-wide: the scheduler is Ready with `NodeResourceTopologyMatch` in its
profile, its Pending pods and why, and pods the kubelet rejected (`TopologyAffinityError`, `SMTAlignmentError`) with
the scheduler that placed them. `gather` reads, `diagnose` decides (pure), `report` renders.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import httpx2

from knuma.deploy.check.gather import CheckAborted, gather, read_nrts, read_pods
from knuma.deploy.check.nodes import stale_nodes
from knuma.deploy.check.report import NATURAL, Diagnosis, Layout, diagnose, render_json, render_text
from knuma.deploy.check.state import CheckSettings, ClusterState

__all__ = [
    "NATURAL",
    "CheckAborted",
    "CheckSettings",
    "ClusterState",
    "Diagnosis",
    "Layout",
    "render_json",
    "render_text",
    "run_check",
]


def run_check(http: httpx2.Client, settings: CheckSettings, sleep: Callable[[float], None] = time.sleep) -> Diagnosis:
    """Read the cluster and diagnose it. Nodes whose NRT lags their pods get `settings.stale_grace` seconds to catch
    up (an exporter publishes on its next event or period), so a check racing a bind does not cry wolf."""
    state = gather(http, settings)
    if settings.stale_grace > 0 and stale_nodes(state):
        sleep(settings.stale_grace)
        state = dataclasses.replace(state, nrts=read_nrts(http) or {}, pods=read_pods(http))
    return diagnose(state, settings.scheduler_name)
