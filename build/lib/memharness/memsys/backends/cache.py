"""A persistent content-addressed cache for LLM and embedding calls.

SQLite in WAL mode, one connection per thread, each write committed at once so
a killed run loses nothing it finished. Several processes may write at once
(Hydra multirun with the joblib launcher); SQLite serialises the writers.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, model TEXT, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embed (key TEXT PRIMARY KEY, model TEXT, dim INTEGER, value BLOB NOT NULL);
"""


class CallCache:
    """Maps request hashes to completions (JSON) and embeddings (float32 bytes)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        conn = self._conn()
        conn.executescript(_SCHEMA)

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
        row = self._conn().execute("SELECT value FROM chat WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_chat(self, key: str, model: str, value: dict[str, Any]) -> None:
        self._conn().execute("INSERT OR REPLACE INTO chat VALUES (?,?,?)", (key, model, json.dumps(value)))

    def get_embeddings(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            batch = keys[start:start + 500]
            marks = ",".join("?" * len(batch))
            for key, dim, blob in conn.execute(f"SELECT key, dim, value FROM embed WHERE key IN ({marks})", batch):
                found[key] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def put_embeddings(self, model: str, items: dict[str, np.ndarray]) -> None:
        rows = [(k, model, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO embed VALUES (?,?,?,?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        conn = self._conn()
        return sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("chat", "embed"))
