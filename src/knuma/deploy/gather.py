"""`knuma gather DIR`: everything a bug report about NUMA-aware scheduling needs, in one archive (numaresources-
operator's must-gather, without a gather image: it reads through the API server with the user's kubeconfig).

Collected: the server version, nodes, NodeResourceTopology objects, each node's kubelet `configz`, the operator's
custom resources, the stack's workloads and pods (exporters, scheduler Deployments, the operator) with their
containers' logs, `FailedScheduling` events, and `knuma check`'s verdict (text and JSON). Best effort: a request the
cluster refuses (403, a kind it does not serve, a node without configz access, logs the node cannot serve) is noted in
`errors.txt` and the rest is still collected; only an unreachable API server stops it. Read-only (`get`, `list`).
"""

from __future__ import annotations

import datetime as dt
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import yaml

from knuma.api.types import JsonObj
from knuma.deploy.check import CheckSettings, render_json, render_text
from knuma.deploy.check.gather import NRT_PATH, CheckAborted, gather
from knuma.deploy.check.nodes import exporter_pods
from knuma.deploy.check.report import diagnose
from knuma.errors import InvalidInput
from knuma.kube import rest
from knuma.kube.errors import CHECK_CONNECTION, KubeApiError, Unavailable, cannot_reach, server_of
from knuma.kube.podlogs import read_log

__all__ = ["GatherResult", "gather_bundle"]

OPERATOR_PODS = "app.kubernetes.io/name=knuma-operator"
_CUSTOM_RESOURCES = (
    "/apis/nodetopology.openshift.io/v1/numaresourcesoperators",
    "/apis/nodetopology.openshift.io/v1/numaresourcesschedulers",
)
LOG_TAIL_LINES = 5000


@dataclass
class GatherResult:
    directory: Path
    archive: Path
    files: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Writer:
    def __init__(self, root: Path, result: GatherResult) -> None:
        self.root, self.result = root, result

    def write(self, name: str, content: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        self.result.files.append(name)

    def yaml(self, name: str, obj: Any) -> None:
        self.write(name, yaml.safe_dump(obj, sort_keys=False))

    def json(self, name: str, obj: Any) -> None:
        self.write(name, json.dumps(obj, indent=2) + "\n")


def _get(http: httpx2.Client, path: str, errors: list[str], params: dict[str, str] | None = None) -> JsonObj | None:
    """The JSON object at `path`, or None with the reason in `errors`; raises `CheckAborted` without an answer."""
    try:
        return rest.request_sync(http, "GET", path, params=params)
    except Unavailable as err:
        if err.status is None:
            raise CheckAborted(f"{cannot_reach(server_of(err.url), err.message)}; {CHECK_CONNECTION}") from err
        errors.append(f"GET {path}: HTTP {err.status}: {err.message}")
    except KubeApiError as err:
        errors.append(f"GET {path}: HTTP {err.status}: {err.message}")
    return None


def _list(http: httpx2.Client, path: str, errors: list[str], params: dict[str, str] | None = None) -> list[JsonObj]:
    return list((_get(http, path, errors, params) or {}).get("items") or [])


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _stack_pods(state_pods: list[JsonObj], extra: list[JsonObj]) -> list[JsonObj]:
    seen: dict[str, JsonObj] = {}
    for pod in [*state_pods, *extra]:
        seen[pod["metadata"].get("uid") or pod["metadata"]["name"]] = pod
    return sorted(seen.values(), key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))


def gather_bundle(
    http: httpx2.Client,
    directory: Path,
    settings: CheckSettings = CheckSettings(),
    *,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
) -> GatherResult:
    """Collect into `directory/knuma-gather-<time>/` and pack it as `directory/knuma-gather-<time>.tar.gz`."""
    if directory.exists() and not directory.is_dir():
        raise InvalidInput(f"{directory} exists and is not a directory; pass a directory to collect into")
    stamp = now().strftime("%Y%m%dT%H%M%SZ")
    root = directory / f"knuma-gather-{stamp}"
    root.mkdir(parents=True, exist_ok=False)
    result = GatherResult(root, directory / f"knuma-gather-{stamp}.tar.gz")
    out = _Writer(root, result)

    out.json("version.json", _get(http, "/version", result.errors) or {})
    state = gather(http, settings)  # raises CheckAborted when the cluster is unreachable or a list is refused
    out.yaml("nodes.yaml", state.nodes)
    out.yaml("noderesourcetopologies.yaml", list(state.nrts.values()))
    if not state.nrt_crd_served:
        result.errors.append(f"GET {NRT_PATH}: the NodeResourceTopology CRD is not served")
    for node, config in sorted(state.configz.items()):
        if isinstance(config, str):
            result.errors.append(f"configz of node {node}: {config}")
        else:
            out.json(f"kubelet/{_safe(node)}.configz.json", {"kubeletconfig": config})
    for path in _CUSTOM_RESOURCES:
        items = _list(http, path, result.errors)
        if items:
            out.yaml(f"custom-resources/{path.rsplit('/', 1)[1]}.yaml", items)
    out.yaml("events/failed-scheduling.yaml", state.events)
    workloads = [s.deployment for s in state.schedulers]
    out.yaml("workloads/scheduler-deployments.yaml", workloads)
    for sched in state.schedulers:
        if sched.config is not None:
            out.yaml(f"workloads/scheduler-config-{_safe(sched.ref)}.yaml", sched.config)
    operator_pods = _list(http, "/api/v1/pods", result.errors, {"labelSelector": OPERATOR_PODS})
    scheduler_pods = _scheduler_pods(state.pods, workloads)
    exporters = [p for pods in exporter_pods(state).values() for p in pods]
    for pod in _stack_pods([*exporters, *scheduler_pods], operator_pods):
        ns, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
        out.yaml(f"pods/{_safe(ns)}/{_safe(name)}.yaml", pod)
        for container in (pod.get("spec") or {}).get("containers") or []:
            try:
                text = read_log(http, ns, name, container["name"], LOG_TAIL_LINES)
            except KubeApiError as err:
                answer = f"HTTP {err.status}" if err.status is not None else "no answer"
                result.errors.append(f"logs of {ns}/{name} container {container['name']}: {answer}: {err.message}")
                continue
            out.write(f"pods/{_safe(ns)}/{_safe(name)}/{_safe(container['name'])}.log", text)
    diagnosis = diagnose(state, settings.scheduler_name)
    out.write("check.txt", render_text(diagnosis))
    out.json("check.json", render_json(diagnosis))
    out.write("errors.txt", "".join(f"{e}\n" for e in result.errors) or "none\n")
    with tarfile.open(result.archive, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return result


def _scheduler_pods(pods: list[JsonObj], deployments: list[JsonObj]) -> list[JsonObj]:
    """Pods whose labels match a scheduler Deployment's selector, in its namespace."""
    out = []
    for deployment in deployments:
        ns = deployment["metadata"].get("namespace", "")
        wanted = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not wanted:
            continue
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            if pod["metadata"].get("namespace") == ns and all(labels.get(k) == v for k, v in wanted.items()):
                out.append(pod)
    return out
