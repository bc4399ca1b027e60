"""Which texts become CAM's level-0 chunks.

``units`` (default): every dataset unit is one chunk. The harness's loaders already cut long
documents (NovelQA at 512 tokens, CAM's size; MultiHop-RAG at ``dataset.loader.chunk_size``), so
every memory system sees the same atoms and evidence recall compares like with like.

``pack``: CAM's own chunker (released code, ``prototype/chunks.py`` ``chunk_text``), re-applied to
the units of one insert batch. Each unit's text is split into paragraphs at newlines (empty ones
dropped); consecutive paragraphs of one source are joined with newlines while the open chunk stays
within ``max_tokens``, else the open chunk is closed and the paragraph opens the next. A paragraph
longer than ``max_tokens`` is joined to the open chunk first and the whole is then cut, as the code
does, so the open chunk is filled with the paragraph's first sentences: the text is trimmed back from
its end one sentence mark at a time (``. ? !``, or a quote right after one; with fewer than two marks
commas count too) until it fits, the cut never falling on the text's last mark; the rest is cut the
same way while it is still too long, and its last piece stays open for the next paragraphs. Pieces
are exact substrings (rejoined they give the text back). One difference, ours: where no mark is left
to cut at, the piece is cut into a token window (the code keeps it whole, over the limit, or stops
with an error). Packing never crosses a source or a batch boundary (the code chunks one book at a
time). Each chunk keeps the ids of every unit it took text from, so provenance and evidence recall
still work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memharness.memsys.types import Unit

CHUNKINGS = ("units", "pack")
_MARKS, _QUOTES = frozenset(".?!"), frozenset("'\"")


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


def _marks(text: str, commas: bool) -> list[int]:
    """Character offsets of sentence marks: . ? ! (and , with ``commas``), or a quote right after
    one of . ? !."""
    return [
        i
        for i, c in enumerate(text)
        if c in _MARKS
        or (commas and c == ",")
        or (c in _QUOTES and i > 0 and text[i - 1] in _MARKS)
    ]


def cut_head(text: str, tokenizer: Any, max_tokens: int) -> int:
    """Length of the head the code's trimming keeps: drop the text after its second-to-last mark
    until it fits (commas count when fewer than two marks remain); with no mark left, a token window
    (ours)."""
    end = len(text)
    while tokenizer.count(text[:end]) > max_tokens:
        head = text[:end]
        marks = _marks(head, commas=False)
        if len(marks) < 2:
            marks = _marks(head, commas=True)
        if len(marks) < 2:
            window = tokenizer.decode(tokenizer.encode(head)[:max_tokens])
            at = head.find(window) if window else -1  # a tokenizer may drop leading whitespace
            return at + len(window) if at >= 0 else end
        end = marks[-2] + 1
    return end


def _owners(spans: list[tuple[int, int, str]], start: int, end: int) -> tuple[str, ...]:
    return tuple(dict.fromkeys(u for a, b, u in spans if a < end and b > start))


def pack_source(units: Sequence[Unit], tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """Pack the paragraphs of consecutive units of one source into chunks of at most ``max_tokens``
    (see the module doc: the released ``chunk_text``'s rules)."""
    if max_tokens <= 0:
        raise ValueError(f"memory.chunk_tokens must be positive, got {max_tokens}")
    source = units[0].source_id
    out: list[Chunk] = []
    text, spans = "", []  # the open chunk, and which unit each character range came from

    def joined_with(paragraph: str, unit: str) -> tuple[str, list[tuple[int, int, str]]]:
        if not text:
            return paragraph, [(0, len(paragraph), unit)]
        offset = len(text) + 1
        return f"{text}\n{paragraph}", [*spans, (offset, offset + len(paragraph), unit)]

    for unit in units:
        for paragraph in (p for p in unit.text.split("\n") if p):
            joined, joined_spans = joined_with(paragraph, unit.id)
            if tokenizer.count(paragraph) > max_tokens:
                start = 0
                while True:  # the open chunk plus the paragraph, cut; the last piece stays open
                    end = start + cut_head(joined[start:], tokenizer, max_tokens)
                    out.append(Chunk(joined[start:end], _owners(joined_spans, start, end), source))
                    start = end
                    if tokenizer.count(joined[start:]) <= max_tokens:
                        break
                text = joined[start:]
                spans = [(max(a - start, 0), b - start, u) for a, b, u in joined_spans if b > start]
            elif tokenizer.count(joined) > max_tokens:
                if text:
                    out.append(Chunk(text, _owners(spans, 0, len(text)), source))
                text, spans = paragraph, [(0, len(paragraph), unit.id)]
            else:
                text, spans = joined, joined_spans
    if text:
        out.append(Chunk(text, _owners(spans, 0, len(text)), source))
    return out
