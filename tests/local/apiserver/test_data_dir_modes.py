"""Issue 18 item 7: the data dir holds Secrets, the serving key and the token: 0700, every file in it 0600, also
when it was created looser by an older version."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from knuma.testing.apiserver import apiserver_process
from tests.local.apiserver.conftest import Http

pytestmark = pytest.mark.slow


def _modes(data: Path) -> dict[str, int]:
    return {str(p.relative_to(data)): stat.S_IMODE(p.stat().st_mode) for p in data.rglob("*")}


def test_data_dir_is_0700_and_every_file_0600(tmp_path: Path) -> None:
    data = tmp_path / "data"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}
    with apiserver_process(tmp_path / "run", data_dir=data) as api:
        assert Http(api).post("/api/v1/namespaces/default/secrets", secret).status == 201
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        modes = _modes(data)
        assert {"knuma-apiserver.sqlite3", "knuma-apiserver.sqlite3-wal", "serving.key", "serving.crt"} <= set(modes)
        assert modes == dict.fromkeys(modes, 0o600)


def test_a_loose_data_dir_from_an_older_version_is_tightened_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with apiserver_process(tmp_path / "one", data_dir=data):
        pass
    os.chmod(data, 0o755)
    for path in data.iterdir():
        os.chmod(path, 0o644)
    with apiserver_process(tmp_path / "two", data_dir=data) as api:
        assert Http(api).get("/api/v1/namespaces").status == 200
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        modes = _modes(data)
        assert modes == dict.fromkeys(modes, 0o600)


def test_a_data_dir_with_other_files_keeps_them_as_they_are(tmp_path: Path) -> None:
    """`--data-dir .` in a checkout: the server makes its own files private and touches nothing else (a recursive
    chmod once took every exec bit of the directory's tree)."""
    data = tmp_path / "repo"
    (data / "sub").mkdir(parents=True)
    for script in (data / "run.sh", data / "sub" / "tool.sh"):
        script.write_text("#!/bin/sh\n")
        os.chmod(script, 0o755)
    os.chmod(data, 0o755)
    with apiserver_process(tmp_path / "run", data_dir=data) as api:
        assert Http(api).get("/api/v1/namespaces").status == 200
        modes = _modes(data)
        assert modes["run.sh"] == modes["sub/tool.sh"] == 0o755 and modes["sub"] != 0o700
        assert stat.S_IMODE(data.stat().st_mode) == 0o755
        assert modes["knuma-apiserver.sqlite3"] == modes["serving.key"] == 0o600
