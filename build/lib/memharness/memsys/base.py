"""The small interface every memory system implements.

A system is built per episode by Hydra from ``conf/memory/<name>.yaml``
(``_target_`` plus hyperparameters) with three shared services passed in:
``llm`` (``memsys.backends.llm.LLM``), ``embedder``
(``memsys.backends.embed.Embedder``) and ``tokenizer``
(``memsys.tokens.Tokenizer``).
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Sequence

from .types import RetrievedItem, Unit


class MemorySystem(ABC):
    """Insert batches of units; retrieve items with provenance under a token budget.

    ``online`` systems update their structure on every ``insert``. Offline
    systems (``online = False``) only buffer inserts; the structure is (re)built
    on the first ``retrieve`` after new inserts, and each rebuild is recorded in
    ``stats()["rebuilds"]``.
    """

    online: bool = True
    name: str = "memory"

    def __init__(self, llm: Any = None, embedder: Any = None, tokenizer: Any = None) -> None:
        self.llm = llm
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.units: list[Unit] = []
        self._pending = False
        self.rebuilds: list[dict[str, Any]] = []

    def insert(self, units: Sequence[Unit]) -> None:
        """Add a batch of units to memory."""
        units = list(units)
        if not units:
            return
        self.units.extend(units)
        if self.online:
            self.add(units)
        else:
            self._pending = True

    def retrieve(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Return the items to show the answerer for ``question``, within ``budget_tokens``."""
        self.ensure_built()
        return self.search(question, budget_tokens)

    def ensure_built(self) -> None:
        """Offline systems: rebuild if units arrived since the last build (the runner
        calls this under the "build" stage so rebuild time is not counted as retrieval)."""
        if not self.online and self._pending:
            start = time.perf_counter()
            self.build(self.units)
            self._pending = False
            self.rebuilds.append({"units": len(self.units), "seconds": time.perf_counter() - start})

    def add(self, units: Sequence[Unit]) -> None:
        """Online systems: integrate new units into the structure."""
        raise NotImplementedError(f"{type(self).__name__} is online but does not implement add()")

    def build(self, units: Sequence[Unit]) -> None:
        """Offline systems: build the structure from all units inserted so far."""
        raise NotImplementedError(f"{type(self).__name__} is offline but does not implement build()")

    @abstractmethod
    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Rank memory for ``question`` and fill ``budget_tokens``."""

    def stats(self) -> dict[str, Any]:
        """Structure diagnostics for ``memory_stats.json``."""
        return {"units": len(self.units), "rebuilds": list(self.rebuilds)}


def fill_budget(items: Sequence[RetrievedItem], budget_tokens: int, tokenizer: Any,
                stop_at_first_overflow: bool = False) -> list[RetrievedItem]:
    """Keep items in the given order while their token total stays within the budget.

    By default an item that would overflow is skipped and later, shorter items
    may still fit; ``stop_at_first_overflow`` stops instead (RAPTOR's code).
    """
    kept, used = [], 0
    for item in items:
        n = item.tokens or tokenizer.count(item.text)
        if used + n > budget_tokens:
            if stop_at_first_overflow:
                break
            continue
        kept.append(item if item.tokens else _with_tokens(item, n))
        used += n
    return kept


def _with_tokens(item: RetrievedItem, n: int) -> RetrievedItem:
    from dataclasses import replace

    return replace(item, tokens=n)
