"""The persistent token shared by `knuma apiserver --data-dir` and `knuma up --data-dir`."""

from __future__ import annotations

import stat
from pathlib import Path

from knuma.local.apiserver.server import persistent_token


def test_the_token_is_created_once_private_and_then_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "state"
    first = persistent_token(data_dir)
    assert len(first) > 20
    assert stat.S_IMODE((data_dir / "token").stat().st_mode) == 0o600
    assert persistent_token(data_dir) == first  # a restart keeps the kubeconfigs written earlier working


def test_each_data_dir_has_its_own_token(tmp_path: Path) -> None:
    assert persistent_token(tmp_path / "a") != persistent_token(tmp_path / "b")
