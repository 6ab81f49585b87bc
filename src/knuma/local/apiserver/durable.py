"""The `--data-dir` backend: sqlite in WAL mode, one row per object plus the resourceVersion counter.

Each write is its own transaction, committed before the API answers, so an acknowledged write survives `kill -9`
of the server (WAL with `synchronous=NORMAL` loses nothing on a process crash; only a power loss can drop the last
transactions, and `--fsync` switches to `synchronous=FULL` for that).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from knuma.api.types import JsonObj
from knuma.local.apiserver import datadir
from knuma.local.apiserver.datadir import DataDirError

GroupResource = tuple[str, str]
log = logging.getLogger("knuma.local.apiserver")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (grp, resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS set_aside (
    grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL
);
"""


class SqliteBackend:
    def __init__(self, data_dir: Path, *, fsync: bool = False) -> None:
        datadir.secure(data_dir)
        self.path = data_dir / datadir.DATABASE
        try:
            datadir.create_private(self.path)
        except OSError as err:
            raise DataDirError(f"cannot open the server's database {self.path}: {err.strerror or err}") from None
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as err:
            raise self._unusable(err) from None

    def _unusable(self, err: sqlite3.DatabaseError) -> DataDirError:
        """A database file SQLite cannot read (not a database, damaged pages, another schema): the start stops
        naming it. Nothing is written to it, so moving it aside keeps what it holds for inspection or repair."""
        self._db.close()
        return DataDirError(
            f"{self.path} cannot be used as the server's database ({err}): move it aside, with its -wal and -shm "
            "files, to start with an empty store (knuma does not delete or overwrite it), or give another --data-dir"
        )

    def load(self) -> tuple[int, list[tuple[GroupResource, JsonObj]]]:
        """The resourceVersion counter and every stored object; a row whose body is not a JSON object is set
        aside (see `set_aside`) instead of stopping the server. A file SQLite cannot read is a `DataDirError`."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
            newest = self._db.execute("SELECT MAX(rv) FROM objects").fetchone()[0]
            rows = self._db.execute("SELECT grp, resource, namespace, name, body FROM objects ORDER BY rv").fetchall()
        except sqlite3.DatabaseError as err:
            raise self._unusable(err) from None
        rv = _counter(row[0] if row else 0, newest, self.path)
        objects: list[tuple[GroupResource, JsonObj]] = []
        for grp, resource, namespace, name, body in rows:
            try:
                obj = json.loads(body)
            except ValueError as exc:
                self.set_aside((grp, resource), namespace, name, f"the stored body is not JSON: {exc}")
                continue
            if not isinstance(obj, dict):
                self.set_aside((grp, resource), namespace, name, "the stored body is not a JSON object")
                continue
            objects.append(((grp, resource), obj))
        return rv, objects

    def set_aside(self, gr: GroupResource, namespace: str, name: str, reason: str) -> None:
        """Move one stored row out of the way (into table `set_aside`, with the reason), so that an object the
        server cannot serve never stops it from starting and can still be inspected or repaired by hand."""
        log.error(
            "set aside stored object %s/%s %s/%s: %s (kept in table set_aside of %s)",
            gr[0] or "core",
            gr[1],
            namespace or "-",
            name,
            reason,
            self.path,
        )
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO set_aside (grp, resource, namespace, name, rv, body, reason, at) "
                "SELECT grp, resource, namespace, name, rv, body, ?, ? FROM objects "
                "WHERE grp = ? AND resource = ? AND namespace = ? AND name = ?",
                (reason, at, gr[0], gr[1], namespace, name),
            )
            self._db.execute(
                "DELETE FROM objects WHERE grp = ? AND resource = ? AND namespace = ? AND name = ?",
                (gr[0], gr[1], namespace, name),
            )

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


def _counter(stored: object, newest: object, path: object) -> int:
    """The resourceVersion counter to go on from: the stored one, never below the newest object's (a counter behind
    its objects would hand out resourceVersions again, and watchers would miss events); a counter that is not a
    whole number (a hand-edited file) is logged and the objects' newest taken."""
    newest_rv = newest if isinstance(newest, int) else 0
    if isinstance(stored, int) and not isinstance(stored, bool):
        return max(stored, newest_rv)
    log.error("the stored resourceVersion counter %r of %s is not a number: going on from %d", stored, path, newest_rv)
    return newest_rv
