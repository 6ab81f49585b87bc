"""`knuma.kube.apply` raises the same typed errors as the raw request path (`knuma.kube.errors`), so the deployer
and the operator handle a refused apply the way every other caller does, against a real `knuma apiserver`."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from knuma.deploy.cluster import Session, connect
from knuma.kube.apply import Change, apply_object, delete_object, get_object
from knuma.kube.errors import Forbidden, Unavailable
from knuma.testing.apiserver import RunningApiServer


def config_map(namespace: str, name: str = "settings") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def test_apply_into_a_terminating_namespace_is_forbidden_with_the_servers_words(session: Session) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held", "finalizers": ["x.io/hold"]}}
    assert apply_object(session.client, session.mapper, namespace, field_manager="test").change is Change.CREATED
    delete_object(session.client, session.mapper, namespace)
    with pytest.raises(Forbidden) as refused:
        apply_object(session.client, session.mapper, config_map("held"), field_manager="test")
    assert refused.value.status == 403
    assert refused.value.summary.startswith("Forbidden: ") and "being terminated" in refused.value.summary


def test_missing_objects_are_none_and_absent_not_errors(session: Session) -> None:
    assert get_object(session.client, session.mapper, config_map("default", "nowhere")) is None
    outcome = delete_object(session.client, session.mapper, config_map("default", "nowhere"))
    assert outcome.change is Change.ABSENT


def test_an_unreachable_server_is_unavailable_naming_the_url(api: RunningApiServer, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = yaml.safe_load(api.kubeconfig.read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(kubeconfig))
    with connect(str(dead)) as session, pytest.raises(Unavailable) as failed:
        get_object(session.client, session.mapper, config_map("default"))
    assert failed.value.status is None
    assert f"cannot reach the API server at https://127.0.0.1:{port}" in failed.value.summary
