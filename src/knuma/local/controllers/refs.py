"""Where the controllers' objects live in the API, and the time they read: shared by every controller."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from knuma.api.types import meta_of
from knuma.kube.events import ObjectReference

__all__ = ["pod_path", "pod_reference", "utcnow"]


def pod_reference(pod: Mapping[str, Any]) -> ObjectReference:
    meta = meta_of(pod)
    return ObjectReference("Pod", str(meta.get("namespace") or ""), str(meta.get("name")), str(meta.get("uid") or ""))


def pod_path(pod: Mapping[str, Any]) -> str:
    return f"/api/v1/namespaces/{meta_of(pod).get('namespace')}/pods/{meta_of(pod).get('name')}"


def utcnow() -> datetime:
    return datetime.now(UTC)
