"""MemGPT's three memories outside the FIFO queue (Packer et al. 2023, Sec. 2): core memory (the
persona and human blocks of the working context, each under a character limit), recall storage
(every message, searched by case-insensitive substring) and archival storage (searched by
embedding). Both searches page their results, ``page_size`` per page, in the code's result format.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


class FunctionFailed(Exception):
    """A function call the agent made could not be carried out; the message goes back to it."""


@dataclass
class CoreMemory:
    """The read/write blocks of the working context, each capped at ``limit`` characters."""

    blocks: dict[str, str]
    limit: int

    def append(self, name: str, content: str) -> None:
        self._set(name, (self._get(name) + "\n" + content) if self._get(name) else content)

    def replace(self, name: str, old: str, new: str) -> None:
        current = self._get(name)
        if not old or old not in current:
            raise FunctionFailed(f"the text to replace was not found in {name} (give it exactly)")
        self._set(name, current.replace(old, new))

    def _get(self, name: str) -> str:
        if name not in self.blocks:
            raise FunctionFailed(f"no core memory block {name!r} (use persona or human)")
        return self.blocks[name]

    def _set(self, name: str, text: str) -> None:
        if len(text) > self.limit:
            raise FunctionFailed(
                f"edit refused: {name} would hold {len(text)} characters, over its limit of "
                f"{self.limit}; shorten it or move details to archival memory first"
            )
        self.blocks[name] = text

    def render(self) -> str:
        return "\n".join(
            f"<{name} characters={len(text)}/{self.limit}>\n{text}\n</{name}>"
            for name, text in self.blocks.items()
        )


@dataclass
class Entry:
    """One stored message or passage; ``unit_id`` links it to the unit it came from (provenance)."""

    text: str
    role: str = "user"
    timestamp: str | None = None
    unit_id: str | None = None


def page_text(entries: list[Entry], total: int, page: int, page_size: int, recall: bool) -> str:
    """The code's result string: a header with counts and pages, then one line per entry."""
    if not entries:
        return "No results found."
    pages = math.ceil(total / page_size) - 1  # the last page's 0-based number, as the code shows it
    if recall:
        lines = [f"timestamp: {e.timestamp}, {e.role} - {e.text}" for e in entries]
    else:
        lines = [f"timestamp: {e.timestamp}, memory: {e.text}" for e in entries]
    return f"Showing {len(entries)} of {total} results (page {page}/{pages}): {json.dumps(lines)}"


@dataclass
class RecallStore:
    """Every message, in order; searched by case-insensitive substring."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def search(self, query: str, page: int, page_size: int) -> tuple[list[Entry], int]:
        needle = query.lower()
        hits = [e for e in self.entries if needle in e.text.lower()]
        return hits[page * page_size : (page + 1) * page_size], len(hits)


@dataclass
class ArchivalStore:
    """Passages with unit-normalised embeddings; searched by cosine similarity."""

    entries: list[Entry] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)

    def add(self, entries: list[Entry], vectors: np.ndarray) -> None:
        self.entries.extend(entries)
        self.vectors.extend(np.asarray(v, dtype=np.float32) for v in vectors)

    def search(
        self, query_vector: np.ndarray, page: int, page_size: int
    ) -> tuple[list[Entry], int]:
        if not self.entries:
            return [], 0
        scores = np.stack(self.vectors) @ np.asarray(query_vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")
        ranked = [self.entries[i] for i in order]
        return ranked[page * page_size : (page + 1) * page_size], len(ranked)


def entries_json(entries: list[Entry]) -> list[dict[str, Any]]:
    return [asdict(e) for e in entries]


def entries_from(rows: list[dict[str, Any]]) -> list[Entry]:
    return [Entry(**r) for r in rows]
