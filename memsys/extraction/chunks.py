"""Text units: the pieces of text extraction reads and local search returns.

Two choices (``chunks.size`` in config):

- ``None`` (default): one text unit per dataset unit. Every memory in the harness then sees the
  same units (the datasets' loaders already cut documents into 256-1,024-token units), and a text
  unit's provenance is exactly its dataset unit.
- an int: GraphRAG's chunker. The units of each source document (``Unit.source_id``) are joined in
  stream order (a unit continuing a token-window cut appended exactly, others after a newline)
  and cut into windows of ``chunks.size`` tokens, consecutive windows sharing
  ``chunks.overlap`` tokens (GraphRAG: 1,200 / 100). A chunk carries the ids of every dataset unit
  whose tokens it overlaps, so provenance stays exact at the dataset-unit level.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from memharness.memsys.settings import Range
from memharness.memsys.types import Unit, content_id


@dataclass(frozen=True)
class Chunks:
    """``chunks``: the text units of a system that extracts from them (GraphRAG-lite, HippoRAG)."""

    size: Annotated[int, Range(1)] | None = None  # null: one text unit per dataset unit
    overlap: Annotated[int, Range(0)] = 100


def chunk_problems(settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The rule between the ``chunks`` settings (a memory's ``check_settings``): a window must
    advance, so the overlap is smaller than the size."""
    chunks = settings.get("chunks") or {}
    size, overlap = chunks.get("size"), chunks.get("overlap", 100)
    if isinstance(size, int) and isinstance(overlap, int) and overlap >= size:
        yield "chunks.overlap", f"must be smaller than chunks.size ({size})"


@dataclass(frozen=True)
class TextUnit:
    """A chunk of source text and the dataset units it overlaps."""

    id: str
    text: str
    units: tuple[str, ...]
    source_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "units": list(self.units),
            "source_id": self.source_id,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TextUnit:
        return cls(id=d["id"], text=d["text"], units=tuple(d["units"]), source_id=d["source_id"])


def make_text_units(
    units: Sequence[Unit], tokenizer: Any, chunk_size: int | None = None, chunk_overlap: int = 100
) -> list[TextUnit]:
    """Text units from dataset units: one each (``chunk_size=None``) or token windows per document."""
    if chunk_size is None:
        return [
            TextUnit(id=u.id, text=u.text, units=(u.id,), source_id=u.source_id)
            for u in units
            if u.text.strip()
        ]
    if chunk_size <= 0 or not 0 <= chunk_overlap < chunk_size:
        raise ValueError(
            f"memory.chunks.size must be > memory.chunks.overlap >= 0, got {chunk_size} / {chunk_overlap}"
        )
    documents: dict[str, list[Unit]] = {}
    for u in units:
        documents.setdefault(u.source_id, []).append(u)
    out: list[TextUnit] = []
    for source_id, members in documents.items():
        out.extend(_windows(source_id, members, tokenizer, chunk_size, chunk_overlap))
    return out


def _windows(
    source_id: str, members: list[Unit], tokenizer: Any, size: int, overlap: int
) -> list[TextUnit]:
    """Token windows over one document's units joined by newlines; each knows the units it overlaps."""
    tokens: list[int] = []
    spans: list[tuple[int, int, str]] = []  # (start, end, unit id) in the joined token list
    newline = tokenizer.encode("\n")
    for u in members:
        if not u.text.strip():
            continue
        if tokens and not u.metadata.get("continues"):  # a continued cut is rejoined exactly
            tokens.extend(newline)
        encoded = tokenizer.encode(u.text)
        spans.append((len(tokens), len(tokens) + len(encoded), u.id))
        tokens.extend(encoded)
    out = []
    step = size - overlap
    for start in range(0, len(tokens), step):
        end = min(start + size, len(tokens))
        covered = tuple(uid for s, e, uid in spans if s < end and e > start)
        text = tokenizer.decode(tokens[start:end])
        out.append(
            TextUnit(
                id=content_id("graphrag-chunk", source_id, start, text, prefix="t-"),
                text=text,
                units=covered,
                source_id=source_id,
            )
        )
        if end >= len(tokens):
            break
    return out
