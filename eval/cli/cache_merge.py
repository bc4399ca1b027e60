"""Merge per-job call caches into one: ``memharness cache-merge INTO SOURCE...``.

With ``cache.mode=per_job`` (a cluster sweep on a network file system) every run writes the calls it
made into ``calls.sqlite`` in its own folder. This command copies every entry of the SOURCE caches
(files, or folders searched for ``calls.sqlite``) into INTO (created if missing; run it on a machine
where INTO is on a local disk, or while no job runs). An entry INTO already holds is kept: entries
are content-addressed, so two jobs that made the same call stored the same key. The next sweep,
pointed at INTO, pays for none of those calls again.

Every SOURCE is checked (read-only) before INTO is touched: a file that is not a call cache is named
in one line (exit 2), and an INTO this command created is removed again when the merge fails.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.types import ConfigError

COLUMNS = {"chat": ["key", "model", "value"], "embed": ["key", "model", "dim", "value"]}


def source_problem(src: Path) -> str | None:
    """Why ``src`` is not a call cache to merge from (None: it is), read-only."""
    try:
        conn = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True)
        try:
            for table, columns in COLUMNS.items():
                found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                if found != columns:
                    return f"has no {table} table of a call cache (columns {found or 'none'})"
        finally:
            conn.close()
    except sqlite3.Error as err:
        return f"is not a readable SQLite call cache ({err})"
    return None


def sources(paths: list[Path], into: Path) -> list[Path]:
    """Every cache file named by ``paths`` (folders are searched for calls.sqlite), INTO left out."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.rglob("calls.sqlite")) if path.is_dir() else [path])
    return [p for p in found if p.resolve() != into.resolve()]


def merge(into: Path, paths: list[Path]) -> dict[str, int]:
    """Copy every chat and embedding entry of ``paths`` into ``into``; return counts."""
    CallCache(into, setting="INTO")  # creates the file and its tables, with the usual checks
    counts = {"files": 0, "chat_added": 0, "embed_added": 0}
    conn = sqlite3.connect(into, timeout=60.0, isolation_level=None)
    try:
        for src in sources(paths, into):
            conn.execute("ATTACH DATABASE ? AS src", (str(src),))
            try:
                conn.execute("BEGIN IMMEDIATE")
                for table, key in (("chat", "chat_added"), ("embed", "embed_added")):
                    before = conn.execute(f"SELECT COUNT(*) FROM main.{table}").fetchone()[0]
                    conn.execute(f"INSERT OR IGNORE INTO main.{table} SELECT * FROM src.{table}")
                    counts[key] += (
                        conn.execute(f"SELECT COUNT(*) FROM main.{table}").fetchone()[0] - before
                    )
                tables = conn.execute("SELECT name FROM src.sqlite_master WHERE type='table'")
                if ("embed_latency",) in tables.fetchall():  # older caches have no such table
                    conn.execute(
                        "INSERT OR IGNORE INTO main.embed_latency SELECT * FROM src.embed_latency"
                    )
                conn.execute("COMMIT")
            finally:
                conn.execute("DETACH DATABASE src")
            counts["files"] += 1
    finally:
        conn.close()
    return counts


def merge_checked(into: Path, paths: list[Path]) -> dict[str, int]:
    """``merge`` after every source is checked; a failed merge leaves no INTO it created.
    Problems are ``ValueError`` lines naming the file to blame."""
    for src in sources(paths, into):
        problem = source_problem(src)
        if problem is not None:
            raise ValueError(f"{src}: {problem}; nothing was merged")
    created = not into.exists()
    try:
        return merge(into, paths)
    except (sqlite3.Error, ConfigError) as err:
        if created:
            for leftover in (
                into,
                Path(f"{into}-wal"),
                Path(f"{into}-shm"),
                Path(f"{into}-journal"),
            ):
                leftover.unlink(missing_ok=True)
        raise ValueError(f"could not merge into {into}: {err}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Merge per-job call caches (cache.mode=per_job) into one."
    )
    parser.add_argument("into", type=Path, help="the shared cache (cache.path of the next sweep)")
    parser.add_argument(
        "sources", type=Path, nargs="+", help="cache files, or sweep folders holding calls.sqlite"
    )
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.sources if not p.exists()]
    if missing:
        print(f"error: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        counts = merge_checked(args.into, args.sources)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"merged {counts['files']} caches into {args.into}: {counts['chat_added']} chat and "
        f"{counts['embed_added']} embedding entries added"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
