"""One `knuma up` per data directory.

Two `knuma up --data-dir D` at once would share D's database, rewrite its kubeconfig and port file, and the second
one's exit would remove files the first still uses. So the first one holds an exclusive `flock` on `D/up.lock` for
its whole life and writes its PID and API server URL into it; a second one fails at once and names them. The kernel
drops the lock when the process dies (also on SIGKILL), so a stale file never blocks a restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import IO, Any

from knuma.errors import OperationFailed
from knuma.local.apiserver.datadir import make_directory

__all__ = ["LOCK_FILE", "DataDirInUse", "DataDirLock"]

LOCK_FILE = "up.lock"


class DataDirInUse(OperationFailed):
    """Another `knuma up` runs on this data directory; the message names its PID and API server URL."""

    def __init__(self, data_dir: Path, holder: dict[str, Any]) -> None:
        pid = holder.get("pid")
        url = holder.get("url") or "not listening yet"
        who = f"PID {pid}" if pid else "another process"
        super().__init__(
            f"{data_dir} is in use by a running `knuma up` ({who}, API server {url}); use that cluster "
            f"(kubeconfig {data_dir / 'kubeconfig'}), stop it first (Ctrl-C in its terminal"
            + (f", or `kill {pid}`" if pid else "")
            + "), or choose another --data-dir"
        )
        self.data_dir = data_dir
        self.pid = pid
        self.url = holder.get("url")


class DataDirLock:
    """An exclusive lock on a data directory, held until `release()` (or the process's end)."""

    def __init__(self, data_dir: Path, file: IO[str]) -> None:
        self.data_dir = data_dir
        self._file: IO[str] | None = file

    @classmethod
    def acquire(cls, data_dir: Path) -> DataDirLock:
        """Lock `data_dir` (created if missing) or raise `DataDirInUse` (`DataDirError` when it is a file)."""
        make_directory(data_dir, mode=0o777)  # the umask's mode: only the API server's own directory is private
        path = data_dir / LOCK_FILE
        file = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(file)
            file.close()
            raise DataDirInUse(data_dir, holder) from None
        lock = cls(data_dir, file)
        lock.record(url=None)
        return lock

    def record(self, *, url: str | None) -> None:
        """Write this process's PID and API server URL into the lock file, for a second `knuma up` to report."""
        if self._file is None:
            return
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps({"pid": os.getpid(), "url": url}) + "\n")
        self._file.flush()

    def release(self) -> None:
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self._file.seek(0)
            self._file.truncate()
        self._file.close()  # closing the descriptor drops the flock
        self._file = None


def _read(file: IO[str]) -> dict[str, Any]:
    try:
        file.seek(0)
        value = json.loads(file.read() or "{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
