"""A persistent content-addressed cache for LLM and embedding calls.

SQLite in WAL mode, one connection per thread, each write committed at once so
a killed run loses nothing it finished. Several processes may write at once
(Hydra multirun with the joblib launcher); SQLite serialises the writers.

A path that cannot hold the cache (under a regular file, a folder, not an SQLite file, no
permission) is a ``ConfigError`` naming the setting; a write that fails mid-run (disk full)
aborts the run (``CacheUnavailable``), since every later call would fail to be kept too.

SQLite's WAL locking needs shared memory between writers: it is unsafe on a network file system
(NFS, SMB, Lustre...). ``network_filesystem`` detects that case so the factory can say so; the
remedy is ``cache.mode=per_job``: each run writes its own cache in its folder and only *reads* the
shared one (``read_from``), and ``memharness cache-merge`` merges the job caches
into the shared one afterwards, so a cluster sweep still never pays twice for a call.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
from memharness.memsys.services.secrets import redact_text
from memharness.memsys.services.types import CacheUnavailable, ConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, model TEXT, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embed (key TEXT PRIMARY KEY, model TEXT, dim INTEGER, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS embed_latency (key TEXT PRIMARY KEY, latency_s REAL NOT NULL);
"""


class CallCache:
    """Maps request hashes to completions (JSON) and embeddings (float32 bytes)."""

    def __init__(
        self, path: str | Path, setting: str = "cache.path", read_from: str | Path | None = None
    ) -> None:
        self.path = Path(path)
        self.setting = setting
        self.read_from = (
            Path(read_from) if read_from is not None else None
        )  # a shared cache, read only
        self._local = threading.local()
        # One writer at a time inside this process: SQLite lets a blocked writer poll with sleeps of
        # up to tens of milliseconds (busy_timeout), which delayed every reply of a concurrent batch.
        self._write_lock = threading.Lock()
        try:
            if self.path.is_dir():
                raise IsADirectoryError(21, "it is a folder, not a file", str(self.path))
            blocker = next((p for p in self.path.parents if p.exists() and not p.is_dir()), None)
            if blocker is not None:
                raise NotADirectoryError(20, f"{blocker} is a file, not a folder", str(blocker))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn()
            conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise ConfigError(
                f"{setting}={str(self.path)!r}: cannot use it as the call cache ({_reason(err)}); "
                f"point {setting} at a new or existing SQLite file in a writable folder, "
                "or set cache.enabled=false"
            ) from None

    def _write(self, sql: str, rows: list[tuple] | tuple, many: bool = False) -> None:
        conn = self._conn()
        try:
            with self._write_lock:
                if many:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        conn.executemany(sql, rows)
                        conn.execute("COMMIT")
                    except BaseException:
                        conn.execute("ROLLBACK")
                        raise
                else:
                    conn.execute(sql, rows)
        except sqlite3.Error as err:
            raise self._unavailable("write", err) from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def _shared(self) -> sqlite3.Connection | None:
        """A read-only connection to ``read_from`` (None when there is no such file yet)."""
        if self.read_from is None or not self.read_from.is_file():
            return None
        conn = getattr(self._local, "shared", None)
        if conn is None:
            conn = sqlite3.connect(
                f"file:{self.read_from}?mode=ro", uri=True, timeout=60.0, check_same_thread=False
            )
            self._local.shared = conn
        return conn

    def get_chat(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._conn().execute("SELECT value FROM chat WHERE key=?", (key,)).fetchone()
            shared = self._shared() if row is None else None
            if shared is not None:
                row = shared.execute("SELECT value FROM chat WHERE key=?", (key,)).fetchone()
        except sqlite3.Error as err:
            raise self._unavailable("read", err) from None
        return json.loads(row[0]) if row else None

    def get_chats(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The cached replies among ``keys`` (one query per 500 keys, not one per key)."""
        found: dict[str, dict[str, Any]] = {}
        try:
            for conn in (self._conn(), self._shared()):
                todo = [k for k in dict.fromkeys(keys) if k not in found]
                if conn is None or not todo:
                    continue
                for start in range(0, len(todo), 500):
                    batch = todo[start : start + 500]
                    marks = ",".join("?" * len(batch))
                    for key, value in conn.execute(
                        f"SELECT key, value FROM chat WHERE key IN ({marks})", batch
                    ):
                        found[key] = json.loads(value)
        except sqlite3.Error as err:
            raise self._unavailable("read", err) from None
        return found

    def _unavailable(self, verb: str, err: BaseException) -> CacheUnavailable:
        return CacheUnavailable(
            f"cannot {verb} the call cache {self.setting}={str(self.path)!r} ({_reason(err)}); "
            f"free disk space, or choose another {self.setting} or cache.enabled=false"
        )

    def put_chat(self, key: str, model: str, value: dict[str, Any]) -> None:
        text = redact_text(json.dumps(value))  # the cache is a file the harness writes, too
        self._write("INSERT OR REPLACE INTO chat VALUES (?,?,?)", (key, model, text))

    def _select_in(self, sql: str, keys: list[str], found: dict[str, Any], row: Any) -> None:
        """``found[key] = row(*columns)`` for every key of ``keys`` this cache or the shared one
        holds (``sql`` selects the key first, ``{marks}`` the batch's placeholders); a shared cache
        written before a table existed simply has none of it."""
        try:
            for conn in (self._conn(), self._shared()):
                todo = [k for k in keys if k not in found]
                for start in range(0, len(todo) if conn is not None else 0, 500):
                    batch = todo[start : start + 500]
                    try:
                        rows = conn.execute(sql.format(marks=",".join("?" * len(batch))), batch)
                    except sqlite3.OperationalError:
                        if conn is self._conn():
                            raise
                        break
                    found.update((key, row(*rest)) for key, *rest in rows)
        except sqlite3.Error as err:
            raise self._unavailable("read", err) from None

    def get_embeddings(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        sql = "SELECT key, dim, value FROM embed WHERE key IN ({marks})"
        self._select_in(sql, keys, found, lambda dim, blob: np.frombuffer(blob, np.float32, dim))
        return found

    def put_embeddings(
        self, model: str, items: dict[str, np.ndarray], latencies: dict[str, float] | None = None
    ) -> None:
        """Store vectors by key and, with ``latencies``, the seconds each took to make."""
        rows = [
            (k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for k, v in items.items()
        ]
        self._write("INSERT OR REPLACE INTO embed VALUES (?,?,?,?)", rows, many=True)
        if latencies:
            times = [(k, float(t)) for k, t in latencies.items()]
            self._write("INSERT OR REPLACE INTO embed_latency VALUES (?,?)", times, many=True)

    def get_embed_latencies(self, keys: list[str]) -> dict[str, float]:
        """The recorded making time of each vector among ``keys`` (older entries have none)."""
        found: dict[str, float] = {}
        sql = "SELECT key, latency_s FROM embed_latency WHERE key IN ({marks})"
        self._select_in(sql, keys, found, float)
        return found

    def __len__(self) -> int:
        conn = self._conn()
        return sum(
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("chat", "embed")
        )


NETWORK_FS = (
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "lustre",
    "gpfs",
    "beegfs",
    "fuse.sshfs",
    "9p",
    "ceph",
    "fuse.glusterfs",
    "afs",
)


def network_filesystem(path: str | Path, mounts: str | None = None) -> str | None:
    """The type of the network file system holding ``path`` (from /proc/mounts), or None."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return None
    target = os.path.abspath(str(path))
    best, fstype = "", None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, fstype = point, parts[2]
    return fstype if fstype in NETWORK_FS else None


def _reason(err: BaseException) -> str:
    """A short cause without a traceback: 'Not a directory', 'file is not a database', ..."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).splitlines()[0] if str(err) else type(err).__name__
