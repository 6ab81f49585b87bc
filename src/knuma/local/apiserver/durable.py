"""The `--data-dir` backend: sqlite in WAL mode, one row per object plus the resourceVersion counter.

Each write is its own transaction, committed before the API answers, so an acknowledged write survives `kill -9`
of the server (WAL with `synchronous=NORMAL` loses nothing on a process crash; only a power loss can drop the last
transactions, and `--fsync` switches to `synchronous=FULL` for that).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from knuma.api.types import JsonObj

GroupResource = tuple[str, str]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (grp, resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SqliteBackend:
    def __init__(self, data_dir: Path, *, fsync: bool = False) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "knuma-apiserver.sqlite3"
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        self._db.executescript(_SCHEMA)

    def load(self) -> tuple[int, list[tuple[GroupResource, JsonObj]]]:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
        rv = int(row[0]) if row else 0
        objects = [
            ((grp, resource), json.loads(body))
            for grp, resource, body in self._db.execute("SELECT grp, resource, body FROM objects ORDER BY rv")
        ]
        return rv, objects

    def put(self, gr: GroupResource, obj: JsonObj, rv: int) -> None:
        md = obj["metadata"]
        body = json.dumps(obj, separators=(",", ":"))
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO objects (grp, resource, namespace, name, rv, body) VALUES (?, ?, ?, ?, ?, ?)",
                (gr[0], gr[1], md.get("namespace") or "", md["name"], rv, body),
            )
            self._set_rv(rv)

    def delete(self, gr: GroupResource, namespace: str, name: str, rv: int) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "DELETE FROM objects WHERE grp = ? AND resource = ? AND namespace = ? AND name = ?",
                (gr[0], gr[1], namespace, name),
            )
            self._set_rv(rv)

    def _set_rv(self, rv: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", (rv,))

    def close(self) -> None:
        self._db.close()
