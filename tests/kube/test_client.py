from pathlib import Path

import pytest
from lightkube.resources.core_v1 import Namespace

from knuma.kube.client import KubeConfigError, load_config, sync_client
from knuma.testing.apiserver import apiserver_in_thread


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=r"nope\.yaml does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_missing_file_from_the_environment_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stale `export KUBECONFIG=...` (a stopped `knuma up` removes its temporary one): the user must learn that
    # the path came from the variable, not from a flag they did not pass.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone" / "kubeconfig"))
    with pytest.raises(
        KubeConfigError, match=r"gone/kubeconfig \(from \$KUBECONFIG\) does not exist; fix \$KUBECONFIG"
    ):
        load_config()
    with pytest.raises(KubeConfigError, match=r"nope\.yaml does not exist; pass --kubeconfig") as raised:
        load_config(tmp_path / "nope.yaml")
    assert "$KUBECONFIG" not in str(raised.value)


def test_no_configuration_at_all_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    with pytest.raises(
        KubeConfigError, match=r"no cluster configuration: .*pass --kubeconfig FILE or set \$KUBECONFIG"
    ):
        load_config()


def test_malformed_file_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        load_config(bad)


def test_unknown_context_lists_known_ones(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path) as api, pytest.raises(KubeConfigError, match=r"'prod'.*contexts: knuma"):
        load_config(api.kubeconfig, "prod")


def test_kubeconfig_env_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with apiserver_in_thread(tmp_path) as api:
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig))
        names = {ns.metadata.name for ns in sync_client().list(Namespace) if ns.metadata}
        assert "default" in names
