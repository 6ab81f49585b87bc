"""Reading a kubelet's live configuration through the API server's node proxy (`/api/v1/nodes/N/proxy/configz`),
without `kubectl proxy` (which the upstream deployer spawns)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx2

from knuma.errors import OperationFailed

__all__ = ["ConfigzError", "list_node_names", "read_configz", "read_configz_many"]


class ConfigzError(OperationFailed):
    """The node's configuration could not be read; the message is the reason, for the report."""


def _status_message(reply: httpx2.Response) -> str:
    try:
        body = reply.json()
    except ValueError:
        return reply.text.strip()[:200]
    return str(body.get("message") or body) if isinstance(body, dict) else str(body)[:200]


def list_node_names(http: httpx2.Client, label_selector: str) -> list[str]:
    reply = http.get("/api/v1/nodes", params={"labelSelector": label_selector} if label_selector else None)
    if reply.status_code != 200:
        raise ConfigzError(f"cannot list nodes (HTTP {reply.status_code}): {_status_message(reply)}")
    return sorted(item["metadata"]["name"] for item in reply.json().get("items") or [])


def read_configz(http: httpx2.Client, node: str) -> dict[str, Any]:
    """The node's `KubeletConfiguration` (the `kubeletconfig` member of configz's reply)."""
    try:
        reply = http.get(f"/api/v1/nodes/{quote(node, safe='')}/proxy/configz", headers={"Accept": "application/json"})
    except httpx2.HTTPError as err:
        raise ConfigzError(f"request failed: {err}") from err
    if reply.status_code != 200:
        raise ConfigzError(f"HTTP {reply.status_code}: {_status_message(reply)}")
    try:
        body = reply.json()
    except (ValueError, json.JSONDecodeError) as err:
        raise ConfigzError(f"configz did not return JSON: {err}") from err
    config = body.get("kubeletconfig") if isinstance(body, dict) else None
    if not isinstance(config, dict):
        raise ConfigzError("configz reply has no kubeletconfig object")
    return config


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
