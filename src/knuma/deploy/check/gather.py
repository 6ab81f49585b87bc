"""Reading the cluster for `knuma check`: nodes, NRT objects, each node's `configz`, pods, `FailedScheduling`
events, the scheduler Deployments with their configuration, and `knuma up`'s record of the processes it runs.
Read-only: only `get` and `list`.

What a user of a locked-down cluster needs to know when a read is refused is which permission is missing, so a 403
becomes `CheckAborted` naming the verb and the resource (and the ClusterRole rule that grants it); an API server that
cannot be reached says so with its URL. A node whose `configz` cannot be read is not fatal: it is reported for that
node (`knuma.deploy.check.nodes`), as nrovalidate would skip it silently.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx2

from knuma.api.types import JsonObj
from knuma.deploy.check.processes import LEASE_PATH, LocalProcesses
from knuma.deploy.check.state import CheckSettings, ClusterState, SchedulerDeployment
from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.configz import ConfigzError, read_configz_many
from knuma.kube.errors import CHECK_CONNECTION, Forbidden, KubeApiError, NotFound, Unauthorized, cannot_reach, server_of
from knuma.manifests import YamlProblem, yaml_document

__all__ = ["NRT_PATH", "CheckAborted", "gather", "read_nrts", "read_pods", "read_processes"]

NRT_PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
PAGE = 500
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


class CheckAborted(OperationFailed):
    """The cluster could not be read (unreachable, credentials refused, a permission missing); the message says
    which request and what to do."""


def _group_of(path: str) -> str:
    """The API group of a request path (`""` for the core group)."""
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "apis" and len(parts) > 1 else ""


def _request(http: httpx2.Client, path: str, verb: str, resource: str, params: dict[str, str] | None = None) -> Any:
    """GET `path` and return its JSON body; None on 404. Raises `CheckAborted` on any other refusal."""
    try:
        return rest.request_sync(http, "GET", path, params=params)
    except NotFound:
        return None
    except KubeApiError as err:
        raise _aborted(err, path, verb, resource) from err


def _aborted(err: KubeApiError, path: str, verb: str, resource: str) -> CheckAborted:
    """What a refused read means for the user: which credentials, permission or server, and what to do."""
    if isinstance(err, Unauthorized):
        return CheckAborted(
            f"the API server refused the credentials (401 Unauthorized) to {verb} {resource}: {err.message}; "
            "refresh the kubeconfig's token or certificate"
        )
    if isinstance(err, Forbidden):
        group = _group_of(path)
        return CheckAborted(
            f"forbidden: cannot {verb} {resource}"
            + (f" in API group {group!r}" if group else "")
            + f": {err.message}. knuma check needs read access: grant a ClusterRole rule "
            f"{{apiGroups: [{json.dumps(group)}], resources: [{resource}], verbs: [{verb}]}} to this user"
        )
    if err.status is None:
        return CheckAborted(f"{cannot_reach(server_of(err.url), err.message)}; {CHECK_CONNECTION}")
    if err.status < 400:
        return CheckAborted(f"{verb} {resource}: the API server did not answer JSON: {err.message}")
    return CheckAborted(f"{verb} {resource}: HTTP {err.status}: {err.message}")


def _list(http: httpx2.Client, path: str, resource: str, params: dict[str, str] | None = None) -> list[JsonObj]:
    """Every item of a list, page by page; [] when the resource is not served (404)."""
    return list(_pages(http, path, resource, params))


def _pages(http: httpx2.Client, path: str, resource: str, params: dict[str, str] | None) -> Iterator[JsonObj]:
    query = dict(params or {}, limit=str(PAGE))
    while True:
        body = _request(http, path, "list", resource, query)
        if body is None:
            return
        yield from body.get("items") or []
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return
        query["continue"] = token


def read_nodes(http: httpx2.Client, selector: str) -> list[JsonObj]:
    if selector:
        return _list(http, "/api/v1/nodes", "nodes", {"labelSelector": selector})
    nodes = _list(http, "/api/v1/nodes", "nodes")
    return [n for n in nodes if CONTROL_PLANE_LABEL not in (n["metadata"].get("labels") or {})]


def read_nrts(http: httpx2.Client) -> dict[str, JsonObj] | None:
    """NRT objects by name; None when the CRD is not served."""
    body = _request(http, NRT_PATH, "list", "noderesourcetopologies", {"limit": str(PAGE)})
    if body is None:
        return None
    items = list(body.get("items") or [])
    token = (body.get("metadata") or {}).get("continue")
    if token:
        items += _list(http, NRT_PATH, "noderesourcetopologies", {"continue": token})
    return {item["metadata"]["name"]: item for item in items}


def read_pods(http: httpx2.Client) -> list[JsonObj]:
    return _list(http, "/api/v1/pods", "pods")


def _failed_scheduling_events(http: httpx2.Client) -> list[JsonObj]:
    events = _list(http, "/api/v1/events", "events", {"fieldSelector": "reason=FailedScheduling"})
    return [e for e in events if e.get("reason") == "FailedScheduling"]


def _runs_a_scheduler(deployment: JsonObj) -> bool:
    """A container whose command line names a scheduler (`knuma scheduler`, `/bin/kube-scheduler`, ...)."""
    template = (deployment.get("spec") or {}).get("template") or {}
    for container in (template.get("spec") or {}).get("containers") or []:
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if any("scheduler" in str(word) and not str(word).startswith("--") for word in words):
            return True
    return False


def _scheduler_config(http: httpx2.Client, deployment: JsonObj) -> SchedulerDeployment:
    """The KubeSchedulerConfiguration in one of the Deployment's ConfigMap volumes."""
    ns = deployment["metadata"].get("namespace", "")
    volumes = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes") or []
    problems: list[str] = []
    for volume in volumes:
        name = (volume.get("configMap") or {}).get("name")
        if not name:
            continue
        path = f"/api/v1/namespaces/{quote(ns, safe='')}/configmaps/{quote(name, safe='')}"
        try:
            cm = _request(http, path, "get", "configmaps")
        except CheckAborted as err:
            problems.append(str(err))
            continue
        if cm is None:
            problems.append(f"ConfigMap {ns}/{name} does not exist")
            continue
        for key, text in (cm.get("data") or {}).items():
            try:
                doc = yaml_document(text)
            except YamlProblem as err:
                problems.append(f"ConfigMap {ns}/{name} key {key}: {err}")
                continue
            if isinstance(doc, dict) and doc.get("kind") == "KubeSchedulerConfiguration":
                return SchedulerDeployment(deployment, doc)
    reason = "; ".join(problems) or "no ConfigMap volume holds a KubeSchedulerConfiguration"
    return SchedulerDeployment(deployment, None, reason)


def read_schedulers(http: httpx2.Client) -> list[SchedulerDeployment]:
    deployments = _list(http, "/apis/apps/v1/deployments", "deployments")
    return [_scheduler_config(http, d) for d in deployments if _runs_a_scheduler(d)]


def read_processes(http: httpx2.Client) -> LocalProcesses | None:
    """`knuma up`'s record of the exporters and scheduler it runs as processes; None when there is none or it
    expired. Optional: a user who may not read Leases in kube-system is checked without it, not stopped."""
    try:
        lease = rest.request_sync(http, "GET", LEASE_PATH)
    except (NotFound, Forbidden):
        return None
    except KubeApiError as err:
        raise _aborted(err, LEASE_PATH, "get", "leases") from err
    return LocalProcesses.from_lease(lease, dt.datetime.now(dt.UTC))


def read_configz(http: httpx2.Client, nodes: list[str]) -> dict[str, JsonObj | str]:
    out: dict[str, JsonObj | str] = {}
    for node, config in read_configz_many(http, nodes).items():
        out[node] = str(config) if isinstance(config, ConfigzError) else config
    return out


def gather(http: httpx2.Client, settings: CheckSettings) -> ClusterState:
    """One snapshot of everything the checks look at."""
    nodes = read_nodes(http, settings.node_selector)
    names = sorted(n["metadata"]["name"] for n in nodes)
    nrts = read_nrts(http)
    return ClusterState(
        nodes=nodes,
        nrts=nrts or {},
        nrt_crd_served=nrts is not None,
        configz=read_configz(http, names),
        pods=read_pods(http),
        events=_failed_scheduling_events(http),
        schedulers=read_schedulers(http),
        exporter_selectors=settings.exporter_selectors,
        processes=read_processes(http),
    )
