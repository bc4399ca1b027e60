"""Which texts become CAM's level-0 chunks.

``units`` (default): every dataset unit is one chunk. The harness's loaders already cut long
documents (NovelQA at 512 tokens, CAM's size; MultiHop-RAG at ``dataset.loader.chunk_size``), so
every memory system sees the same atoms and evidence recall compares like with like.

``pack``: CAM's own chunker (released code, ``prototype/chunks.py``), re-applied to the units of
one insert batch: each unit's text is split into paragraphs at newlines (empty ones dropped) and
consecutive paragraphs of one source are packed while the chunk stays within ``max_tokens``; a
paragraph longer than that is cut at sentence ends (``. ? !``, a closing quote kept), a sentence
longer than that into token windows, and its last piece stays open for the next paragraphs, as in
the code. Packing never crosses a source or a batch boundary. Each chunk keeps the ids of every
unit it took text from, so provenance and evidence recall still work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memharness.memsys.types import Unit

CHUNKINGS = ("units", "pack")
_SENTENCE_END = re.compile(r"(?<=[.?!])['\"]?\s+")


@dataclass(frozen=True)
class Chunk:
    text: str
    units: tuple[str, ...]
    source: str


def chunks_of(units: Sequence[Unit], mode: str, tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """The chunks of one insert batch, in stream order."""
    if mode == "units":
        return [Chunk(u.text, (u.id,), u.source_id) for u in units]
    if mode != "pack":
        raise ValueError(f"memory.chunking must be one of {' | '.join(CHUNKINGS)}, got {mode!r}")
    out: list[Chunk] = []
    start = 0
    for i in range(1, len(units) + 1):
        if i == len(units) or units[i].source_id != units[start].source_id:
            out.extend(pack_source(units[start:i], tokenizer, max_tokens))
            start = i
    return out


def _split_long(text: str, tokenizer: Any, max_tokens: int) -> list[str]:
    """Pieces of at most ``max_tokens``: sentences packed greedily, over-long sentences windowed."""
    pieces: list[str] = []
    current = ""
    for sentence in (s for s in _SENTENCE_END.split(text) if s):
        if tokenizer.count(sentence) > max_tokens:
            if current:
                pieces.append(current)
                current = ""
            tokens = tokenizer.encode(sentence)
            pieces.extend(
                tokenizer.decode(tokens[i : i + max_tokens])
                for i in range(0, len(tokens), max_tokens)
            )
            continue
        joined = f"{current} {sentence}" if current else sentence
        if tokenizer.count(joined) > max_tokens:
            pieces.append(current)
            current = sentence
        else:
            current = joined
    if current:
        pieces.append(current)
    return pieces


def pack_source(units: Sequence[Unit], tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """Pack the paragraphs of consecutive units of one source into chunks of at most ``max_tokens``."""
    if max_tokens <= 0:
        raise ValueError(f"memory.chunk_tokens must be positive, got {max_tokens}")
    source = units[0].source_id
    out: list[Chunk] = []
    text, owners = "", []

    def flush() -> None:
        nonlocal text, owners
        if text:
            out.append(Chunk(text, tuple(dict.fromkeys(owners)), source))
        text, owners = "", []

    for unit in units:
        for paragraph in (p for p in unit.text.split("\n") if p):
            if tokenizer.count(paragraph) > max_tokens:
                flush()
                *full, last = _split_long(paragraph, tokenizer, max_tokens)
                out.extend(Chunk(piece, (unit.id,), source) for piece in full)
                text, owners = last, [unit.id]
                continue
            joined = f"{text}\n{paragraph}" if text else paragraph
            if tokenizer.count(joined) > max_tokens:
                flush()
                text, owners = paragraph, [unit.id]
            else:
                text, owners = joined, owners + [unit.id]
    flush()
    return out
