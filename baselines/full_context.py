"""Full-context baseline: show the answerer everything inserted, most recent kept.

MemTree's "naive" baseline (Sec. 4): the whole history goes into the prompt.
When the history exceeds the token budget, the oldest units are dropped first
(MemTree: models with full chat history are given the longest context that fits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.memsys.base import MemorySystem
from memharness.memsys.types import RetrievedItem, Unit


class FullContext(MemorySystem):
    """Every inserted unit in insertion order, truncated from the oldest end to the budget."""

    name = "full_context"

    def __init__(self, llm: Any = None, embedder: Any = None, tokenizer: Any = None) -> None:
        super().__init__(llm, embedder, tokenizer)
        self._tokens: list[int] = []

    def add(self, units: Sequence[Unit]) -> None:
        self._tokens.extend(self.tokenizer.count(u.text) for u in units)

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        kept: list[RetrievedItem] = []
        used = 0
        for unit, n in zip(reversed(self.units), reversed(self._tokens), strict=False):
            if used + n > budget_tokens:
                break
            kept.append(
                RetrievedItem(
                    text=unit.text,
                    score=1.0,
                    node_id=unit.id,
                    level=0,
                    source_unit_ids=(unit.id,),
                    tokens=n,
                )
            )
            used += n
        kept.reverse()
        return kept

    def state(self) -> dict[str, Any]:
        return {"tokens": list(self._tokens)}

    def load_state(self, state: dict[str, Any]) -> None:
        self._tokens = list(state["tokens"])

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "total_tokens": int(sum(self._tokens))}
