import os
from pathlib import Path

import pytest
import yaml
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


def test_the_default_kubeconfig_is_read_as_an_explicit_one_also_with_an_empty_kubeconfig_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`~/.kube/config` gets the same checks and messages as a file given by name (it named Python's codec), and
    `KUBECONFIG=` (empty) means unset, as kubectl reads it (it was `Configuration file  not found`)."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    default = tmp_path / ".kube" / "config"
    default.parent.mkdir()
    default.write_bytes(b"apiVersion: v1\n# caf\xe9\n")
    for variable in (None, ""):
        if variable is None:
            monkeypatch.delenv("KUBECONFIG", raising=False)
        else:
            monkeypatch.setenv("KUBECONFIG", variable)
        with pytest.raises(KubeConfigError) as raised:
            load_config()
        assert str(raised.value) == (
            f"cannot read kubeconfig {default}: not UTF-8 text (byte 0xe9 at offset 20); save it as UTF-8"
        )
    default.write_text("{}\n")
    with pytest.raises(KubeConfigError, match=f"kubeconfig {default} has no clusters"):
        load_config()
    default.unlink()
    with pytest.raises(KubeConfigError, match=r"Configuration file ~/.kube/config not found; pass --kubeconfig"):
        load_config()


def test_malformed_file_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        load_config(bad)


def test_unknown_context_lists_known_ones(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path) as api, pytest.raises(KubeConfigError) as raised:
        load_config(api.kubeconfig, "prod")
    assert str(raised.value) == "kubeconfig has no context 'prod' (contexts: knuma); pick one with --context"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- a\n- b\n", "is not a kubeconfig: expected a mapping with clusters, contexts and users, got list"),
        ("", "is not a kubeconfig: expected a mapping with clusters, contexts and users, got an empty file"),
        ("{}\n", "has no clusters; write one with `kubectl config set-cluster` or use the kubeconfig `knuma up` or"),
        ("clusters: 5\n", ": clusters must be a list"),
    ],
)
def test_a_file_that_is_no_kubeconfig_says_what_it_lacks(tmp_path: Path, text: str, problem: str) -> None:
    """lightkube's own errors were `'list' object has no attribute 'get'` and `'clusters'`."""
    bad = tmp_path / "kubeconfig"
    bad.write_text(text)
    with pytest.raises(KubeConfigError) as raised:
        load_config(bad)
    assert str(raised.value).startswith(f"kubeconfig {bad}{'' if problem.startswith(':') else ' '}{problem}")


def test_kubeconfig_env_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with apiserver_in_thread(tmp_path) as api:
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig))
        names = {ns.metadata.name for ns in sync_client().list(Namespace) if ns.metadata}
        assert "default" in names


def test_a_kubeconfig_list_is_merged_as_kubectl_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`KUBECONFIG=a:b` (kubectl's loading rules): missing files are skipped, the first file to name a context or set
    `current-context` wins, and a relative certificate path is read from its own file's directory. A real API server
    answers through the merged configuration."""
    with apiserver_in_thread(tmp_path / "api") as api:
        real = yaml.safe_load(api.kubeconfig.read_text())
        other = tmp_path / "other"
        other.mkdir()
        (other / "ca.crt").write_text("not used")
        first = {
            "current-context": real["current-context"],
            "contexts": [{"name": "elsewhere", "context": {"cluster": "far", "user": "nobody"}}],
            "clusters": [
                {"name": "far", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"}}
            ],
            "users": [{"name": "nobody", "user": {}}],
        }
        (other / "config").write_text(yaml.safe_dump(first))
        second = tmp_path / "second"
        second.write_text(yaml.safe_dump({**real, "current-context": "elsewhere"}))
        missing = tmp_path / "missing"
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(missing), str(other / "config"), str(second)]))
        single = load_config()
        assert single.context_name == real["current-context"]  # the first file's current-context
        names = {ns.metadata.name for ns in sync_client().list(Namespace) if ns.metadata}
        assert "default" in names
        far = load_config(context="elsewhere")
        assert far.cluster.certificate_auth == str(other / "ca.crt")
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(missing), str(tmp_path / "gone")]))
        with pytest.raises(KubeConfigError, match=r"none of the kubeconfig files in \$KUBECONFIG exists"):
            load_config()
