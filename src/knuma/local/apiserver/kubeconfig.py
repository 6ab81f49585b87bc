"""The kubeconfig `knuma apiserver` prints or writes, so kubectl, lightkube and kopf connect unchanged."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from knuma.api.types import JsonObj
from knuma.errors import InvalidInput
from knuma.manifests import YamlProblem, yaml_document


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


class KubeconfigInUse(InvalidInput):
    """`--kubeconfig-out` names a file holding someone else's kubeconfig: it is not overwritten."""


def check_writable(path: Path, name: str = "knuma") -> None:
    """Raise `KubeconfigInUse` when `path` holds a kubeconfig with clusters, users or contexts other than the one
    knuma writes (`name`): `--kubeconfig-out ~/.kube/config` replaced every cluster of it. A file knuma wrote (a
    resumed `knuma up`, a restarted server) or an empty one is overwritten."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise KubeconfigInUse(f"--kubeconfig-out {path} is a directory; give a file path") from None
    except (OSError, UnicodeDecodeError) as err:
        raise KubeconfigInUse(f"--kubeconfig-out {path} cannot be read ({err}); give another path") from None
    try:
        doc = yaml_document(text)
    except YamlProblem:  # malformed, several documents, or a value Python cannot hold: not knuma's
        doc = "not YAML"
    if doc is None:
        return
    names: set[str] = set()
    if isinstance(doc, dict):
        for key in ("clusters", "users", "contexts"):
            entries = doc.get(key) or []
            names |= (
                {str(e.get("name")) for e in entries if isinstance(e, dict)} if isinstance(entries, list) else {"?"}
            )
    if not isinstance(doc, dict) or names - {name}:
        others = ", ".join(sorted(names - {name})) or "not a kubeconfig knuma wrote"
        raise KubeconfigInUse(
            f"--kubeconfig-out {path} already holds another kubeconfig ({others}); knuma does not overwrite it: "
            "give another path, or move that file away first"
        )


def write(path: Path, url: str, token: str | None, *, ca_pem: str | None = None, name: str = "knuma") -> Path:
    """Write the kubeconfig readable by the owner only (it holds the bearer token), never over someone else's
    (`check_writable`)."""
    check_writable(path, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(render(url, token, ca_pem=ca_pem, name=name))
    tmp.replace(path)
    return path
