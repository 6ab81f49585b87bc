"""The kubeconfig `knuma apiserver` prints or writes, so kubectl, lightkube and kopf connect unchanged."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from knuma.api.types import JsonObj


def build(url: str, token: str | None, *, ca_pem: str | None = None, name: str = "knuma") -> JsonObj:
    user: JsonObj = {"token": token} if token else {}
    cluster: JsonObj = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


def render(url: str, token: str | None, *, ca_pem: str | None = None, name: str = "knuma") -> str:
    return yaml.safe_dump(build(url, token, ca_pem=ca_pem, name=name), sort_keys=False)


def write(path: Path, url: str, token: str | None, *, ca_pem: str | None = None, name: str = "knuma") -> Path:
    """Write the kubeconfig readable by the owner only (it holds the bearer token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(render(url, token, ca_pem=ca_pem, name=name))
    tmp.replace(path)
    return path
