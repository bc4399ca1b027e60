"""A persistent content-addressed cache for LLM and embedding calls.

SQLite in WAL mode, one connection per thread, each write committed at once so
a killed run loses nothing it finished. Several processes may write at once
(Hydra multirun with the joblib launcher); SQLite serialises the writers.

A path that cannot hold the cache (under a regular file, a folder, not an SQLite file, no
permission) is a ``ConfigError`` naming the setting; a write that fails mid-run (disk full)
aborts the run (``CacheUnavailable``), since every later call would fail to be kept too.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .types import CacheUnavailable, ConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, model TEXT, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embed (key TEXT PRIMARY KEY, model TEXT, dim INTEGER, value BLOB NOT NULL);
"""


class CallCache:
    """Maps request hashes to completions (JSON) and embeddings (float32 bytes)."""

    def __init__(self, path: str | Path, setting: str = "cache.path") -> None:
        self.path = Path(path)
        self.setting = setting
        self._local = threading.local()
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
            raise ConfigError(f"{setting}={str(self.path)!r}: cannot use it as the call cache ({_reason(err)}); "
                              f"point {setting} at a new or existing SQLite file in a writable folder, "
                              "or set cache.enabled=false") from None

    def _write(self, sql: str, rows: list[tuple] | tuple, many: bool = False) -> None:
        conn = self._conn()
        try:
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
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get_chat(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._conn().execute("SELECT value FROM chat WHERE key=?", (key,)).fetchone()
        except sqlite3.Error as err:
            raise self._unavailable("read", err) from None
        return json.loads(row[0]) if row else None

    def _unavailable(self, verb: str, err: BaseException) -> CacheUnavailable:
        return CacheUnavailable(f"cannot {verb} the call cache {self.setting}={str(self.path)!r} ({_reason(err)}); "
                                f"free disk space, or choose another {self.setting} or cache.enabled=false")

    def put_chat(self, key: str, model: str, value: dict[str, Any]) -> None:
        self._write("INSERT OR REPLACE INTO chat VALUES (?,?,?)", (key, model, json.dumps(value)))

    def get_embeddings(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        conn = self._conn()
        try:
            for start in range(0, len(keys), 500):
                batch = keys[start:start + 500]
                marks = ",".join("?" * len(batch))
                for key, dim, blob in conn.execute(f"SELECT key, dim, value FROM embed WHERE key IN ({marks})", batch):
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=dim)
        except sqlite3.Error as err:
            raise self._unavailable("read", err) from None
        return found

    def put_embeddings(self, model: str, items: dict[str, np.ndarray]) -> None:
        rows = [(k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        self._write("INSERT OR REPLACE INTO embed VALUES (?,?,?,?)", rows, many=True)

    def __len__(self) -> int:
        conn = self._conn()
        return sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("chat", "embed"))


def _reason(err: BaseException) -> str:
    """A short cause without a traceback: 'Not a directory', 'file is not a database', ..."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).splitlines()[0] if str(err) else type(err).__name__
