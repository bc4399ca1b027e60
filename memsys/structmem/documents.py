"""Memory-Doc (Zeng et al., 2024, Sec. 3.3): retrieved memory units mapped back to their documents.

What a unit's *document* is (``documents``):

- ``passage``: the source chunk the unit was extracted from (a dataset unit, or its piece when
  ``extraction.chunk_tokens`` cuts units): the text the memory unit stands for;
- ``chunk``: the whole dataset unit it came from (equals ``passage`` unless ``extraction.chunk_tokens`` is set);
- ``source``: every dataset unit with the unit's ``source_id``, in stream order (the whole article or
  conversation). On a dataset with one source per episode (QuALITY, MSC-E) every unit maps to the same
  document, so the context is its first ``budget`` tokens whatever the question;
- ``auto``: ``passage`` when the memory holds a single source document, ``source`` otherwise.

Documents are de-duplicated in first-retrieved order (the released code's ``set()`` loses the order),
each with the score of the first unit that led to it, and fill the budget in order; the first that
does not fit is cut to the tokens left (the paper's 4k window), never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from memharness.memsys.types import RetrievedItem

DOCUMENTS = ("auto", "passage", "chunk", "source")


def resolve(mode: str, doc_texts: Mapping[str, tuple[str, str]]) -> str:
    """The mapping in force: ``auto`` is ``passage`` over one source document, else ``source``."""
    if mode != "auto":
        return mode
    sources = {source for source, _ in doc_texts.values()}
    return "passage" if len(sources) <= 1 else "source"


class DocumentMap:
    """Where each memory unit's document comes from: the dataset units and the source chunks read."""

    def __init__(self) -> None:
        self.doc_texts: dict[str, tuple[str, str]] = {}  # dataset unit id -> (source id, text)
        self.passages: dict[str, tuple[str, str]] = {}  # source chunk id -> (unit id, text)

    def key(self, mode: str, unit_id: str, chunk_id: str | None) -> str:
        """The document a memory unit maps to under ``mode`` (a resolved mode, not ``auto``)."""
        if mode == "source":
            return self.doc_texts[unit_id][0]
        if mode == "passage" and chunk_id in self.passages:
            return chunk_id
        return unit_id

    def members(self, mode: str, key: str) -> tuple[list[str], str]:
        """The dataset unit ids of document ``key`` (its provenance) and its text."""
        if mode == "source":
            ids = [u for u, (source, _) in self.doc_texts.items() if source == key]
            return ids, "\n\n".join(self.doc_texts[u][1] for u in ids)
        if mode == "passage" and key in self.passages:
            unit_id, text = self.passages[key]
            return [unit_id], text
        return [key], self.doc_texts[key][1]  # chunk, or a passage saved before passages were kept

    def items(
        self, mode: str, ranked: Sequence[tuple[Any, float, str, str | None]], tokenizer: Any
    ) -> list[RetrievedItem]:
        """``ranked``: (node, score, dataset unit id, source chunk id) in answer order -> one item per
        document in first-retrieved order, with the score of the first unit that led to it."""
        items, seen = [], set()
        for _, score, unit_id, chunk_id in ranked:
            key = self.key(mode, unit_id, chunk_id)
            if key in seen:
                continue
            seen.add(key)
            unit_ids, text = self.members(mode, key)
            items.append(
                RetrievedItem(
                    text=text,
                    score=float(score),
                    node_id=f"doc:{key}",
                    level=0,
                    source_unit_ids=tuple(unit_ids),
                    tokens=tokenizer.count(text),
                )
            )
        return items

    def fill(
        self, items: Sequence[RetrievedItem], budget_tokens: int, tokenizer: Any
    ) -> tuple[list[RetrievedItem], int]:
        """Documents in order while they fit; the first that does not is cut to the tokens left and
        fills the budget. Returns the items and how many were cut (0 or 1); nothing is skipped."""
        kept, used = [], 0
        for item in items:
            left = budget_tokens - used
            if left <= 0:
                break
            if item.tokens <= left:
                kept.append(item)
                used += item.tokens
                continue
            kept.append(self.cut(item, left, tokenizer))
            return kept, 1
        return kept, 0

    def cut(self, item: RetrievedItem, max_tokens: int, tokenizer: Any) -> RetrievedItem:
        """The document's first ``max_tokens`` tokens; its provenance keeps the units starting inside."""
        limit, text = max_tokens, tokenizer.truncate(item.text, max_tokens)
        while limit > 0 and tokenizer.count(text) > max_tokens:  # re-encoding a cut can add a token
            limit -= 1
            text = tokenizer.truncate(item.text, limit)
        start, units = 0, []
        for uid in item.source_unit_ids:  # a document is its units' texts joined by a blank line
            if start < len(text):
                units.append(uid)
            start += len(self.doc_texts[uid][1]) + 2
        return replace(item, text=text, tokens=tokenizer.count(text), source_unit_ids=tuple(units))

    def to_json(self) -> dict[str, Any]:
        return {
            "doc_texts": [[uid, src, text] for uid, (src, text) in self.doc_texts.items()],
            "passages": [[cid, uid, text] for cid, (uid, text) in self.passages.items()],
        }

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore from ``to_json``; a state saved before passages were kept maps them to units."""
        self.doc_texts = {uid: (src, text) for uid, src, text in state.get("doc_texts", [])}
        self.passages = {cid: (uid, text) for cid, uid, text in state.get("passages", [])}
