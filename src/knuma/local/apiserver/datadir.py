"""The `--data-dir` is private: the directory 0700, the server's files in it 0600.

Why: it holds every object the server stores, Secrets included (SQLite database and its WAL), the serving key and the
bearer token. A 0644 database in a 0755 directory lets every local user read them. kube-apiserver's etcd data dir is
0700 for the same reason.

A `--data-dir` that is not a directory, or a file of the server's it cannot use (a database SQLite cannot open, a
token or a certificate that is not one), is a `DataDirError` naming it: the start stops with an error line (exit 2)
saying to move the file aside. knuma never deletes or overwrites what it cannot read: it may be the user's only copy.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from knuma.errors import InvalidInput

log = logging.getLogger("knuma.local.apiserver")

DIR_MODE = 0o700
FILE_MODE = 0o600
DATABASE = "knuma-apiserver.sqlite3"


class DataDirError(InvalidInput):
    """The data directory, or a file the server keeps in it, cannot be used; the message names it and says what to
    do (the CLI exits 2)."""


OWN_FILES = frozenset({DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", "token", "serving.crt", "serving.key"})
"""What the server keeps in its data directory (`durable`, `server.persistent_token`, `tls.load_or_create`)."""


def secure(data_dir: Path) -> None:
    """Create `data_dir` if needed and tighten the server's own files in it (SQLite's WAL and shared-memory files
    inherit the database file's mode, so tightening the database first covers the files it creates later), and the
    directory itself when it holds nothing else.

    Only those: `--data-dir .` in a checkout, or `--data-dir ~`, must not lose its files' modes (a recursive chmod
    took every exec bit of a repository). A directory that also holds other files keeps its mode, with a warning."""
    make_directory(data_dir)
    others = sorted(p.name for p in data_dir.iterdir() if p.name not in OWN_FILES)
    if others:
        log.warning(
            "data dir %s also holds %s: its mode is left as it is (%o), only the server's own files are made private; "
            "give the server a directory of its own",
            data_dir,
            ", ".join(others[:3]) + (", ..." if len(others) > 3 else ""),
            stat.S_IMODE(data_dir.stat().st_mode),
        )
    else:
        os.chmod(data_dir, DIR_MODE)
    for name in sorted(OWN_FILES):
        path = data_dir / name
        if path.is_file() and not path.is_symlink():
            os.chmod(path, FILE_MODE)


def make_directory(path: Path, mode: int = DIR_MODE) -> None:
    """Create the data directory `path` (and its parents) when missing; a `DataDirError` when it is a file or cannot
    be created."""
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError as err:
        if path.exists() and not path.is_dir():
            raise DataDirError(
                f"{path} is not a directory: --data-dir needs a directory (it is created when missing); "
                "give another --data-dir"
            ) from None
        raise DataDirError(
            f"cannot create the data directory {path}: {err.strerror or err}; give --data-dir a directory you can write"
        ) from None


def create_private(path: Path) -> None:
    """Create `path` empty with mode 0600 when it does not exist (before anyone writes secrets into it)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
