"""The `--data-dir` is private: the directory 0700, every file in it 0600.

Why: it holds every object the server stores, Secrets included (SQLite database and its WAL), the serving key and the
bearer token. A 0644 database in a 0755 directory lets every local user read them. kube-apiserver's etcd data dir is
0700 for the same reason.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def secure(data_dir: Path) -> None:
    """Create `data_dir` if needed and tighten it and every file under it (SQLite's WAL and shared-memory files
    inherit the database file's mode, so tightening the database first covers the files it creates later)."""
    data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(data_dir, DIR_MODE)
    for path in data_dir.rglob("*"):
        if path.is_symlink():
            continue
        os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)


def create_private(path: Path) -> None:
    """Create `path` empty with mode 0600 when it does not exist (before anyone writes secrets into it)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
