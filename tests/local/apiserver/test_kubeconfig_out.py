"""`--kubeconfig-out`: knuma writes its kubeconfig there, over one it wrote before, never over someone else's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from knuma.local.apiserver import kubeconfig
from knuma.local.apiserver.kubeconfig import KubeconfigInUse, check_writable

PROD = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "prod", "cluster": {"server": "https://10.0.0.1"}}],
    "users": [{"name": "prod", "user": {"token": "secret"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "prod"}}],
    "current-context": "prod",
}


def test_its_own_kubeconfig_is_rewritten_and_an_empty_or_missing_file_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "kc.yaml"
    check_writable(path)  # missing
    path.write_text("")
    kubeconfig.write(path, "https://127.0.0.1:1", "t1")
    kubeconfig.write(path, "https://127.0.0.1:2", "t2")  # a restarted server, a resumed knuma up
    assert yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:2"


@pytest.mark.parametrize(
    "content",
    [
        yaml.safe_dump(PROD),
        yaml.safe_dump({**PROD, "clusters": [*PROD["clusters"], {"name": "knuma"}]}),
        "- a\n",
        "clusters: [{name: big, port: " + "9" * 5000 + "}]\n",  # a value Python cannot hold: not a traceback
        "a: 1\n---\nb: 2\n",
    ],
    ids=["prod", "prod-and-knuma", "list", "5000-digit-number", "two-documents"],
)
def test_someone_elses_kubeconfig_is_not_overwritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / "config"
    path.write_text(content)
    with pytest.raises(KubeconfigInUse, match="knuma does not overwrite it"):
        kubeconfig.write(path, "https://127.0.0.1:1", "t")
    assert path.read_text() == content


def test_the_command_refuses_before_starting(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(PROD))
    for command in ("apiserver", "up"):
        done = subprocess.run(
            [sys.executable, "-m", "knuma", command, "--kubeconfig-out", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2, done.stderr
        assert "already holds another kubeconfig (prod)" in done.stderr
    assert yaml.safe_load(path.read_text()) == PROD
