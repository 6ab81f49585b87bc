"""Reading a kubelet's live configuration through the API server's node proxy (`/api/v1/nodes/N/proxy/configz`),
without `kubectl proxy` (which the upstream deployer spawns)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx2

from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.errors import KubeApiError

__all__ = ["ConfigzError", "list_node_names", "read_configz", "read_configz_many"]


class ConfigzError(OperationFailed):
    """The node's configuration could not be read; the message is the reason, for the report."""


def list_node_names(http: httpx2.Client, label_selector: str) -> list[str]:
    try:
        listed = rest.request_sync(
            http, "GET", "/api/v1/nodes", params={"labelSelector": label_selector} if label_selector else None
        )
    except KubeApiError as err:
        raise ConfigzError(f"cannot list nodes ({_status(err)}): {err.message}") from err
    return sorted(item["metadata"]["name"] for item in listed.get("items") or [])


def read_configz(http: httpx2.Client, node: str) -> dict[str, Any]:
    """The node's `KubeletConfiguration` (the `kubeletconfig` member of configz's reply)."""
    try:
        body = rest.request_sync(http, "GET", f"/api/v1/nodes/{quote(node, safe='')}/proxy/configz")
    except KubeApiError as err:
        if err.status is not None and err.status < 400:  # answered, but not with a JSON object
            raise ConfigzError(f"configz did not return JSON: {err.message}") from err
        raise ConfigzError(f"{_status(err)}: {err.message}") from err
    config = body.get("kubeletconfig")
    if not isinstance(config, dict):
        raise ConfigzError("configz reply has no kubeletconfig object")
    return config


def _status(err: KubeApiError) -> str:
    """`HTTP 503` as the report has always said, or `request failed` when no answer came."""
    return f"HTTP {err.status}" if err.status is not None else "request failed"


def read_configz_many(
    http: httpx2.Client, nodes: list[str], parallelism: int = 8
) -> dict[str, dict[str, Any] | ConfigzError]:
    """Every node's configuration or the error reading it, fetched concurrently (large clusters)."""

    def one(node: str) -> dict[str, Any] | ConfigzError:
        try:
            return read_configz(http, node)
        except ConfigzError as err:
            return err

    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(nodes)))) as pool:
        return dict(zip(nodes, pool.map(one, nodes), strict=True))
