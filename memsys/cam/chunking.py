"""Which texts become CAM's level-0 chunks.

``units`` (default): every dataset unit is one chunk. The harness's loaders already cut long
documents (NovelQA in hard 512-token windows, CAM's size but cut mid-sentence, where CAM's chunker
keeps paragraphs and sentences whole; MultiHop-RAG at ``dataset.loader.chunk_size``), so every
memory system sees the same atoms and evidence recall compares like with like.

``pack``: CAM's own chunker (released code, ``prototype/chunks.py`` ``chunk_text``), re-applied to
the units of one insert batch. The units of one source are read as one text (a unit that continues
a loader's token window, such as NovelQA's 512-token cuts, is appended exactly; any other starts a
new paragraph), which is split into paragraphs at newlines (empty ones dropped); consecutive
paragraphs of one source are joined with newlines while the open chunk stays within ``max_tokens``,
else the open chunk is closed and the paragraph opens the next. A paragraph longer than
``max_tokens`` is joined to the open chunk first and the whole is then cut, as the code does, so
the open chunk is filled with the paragraph's first sentences: the text is trimmed back from its
end one sentence mark at a time (``. ? !``, or a quote right after one; with fewer than two marks
commas count too) until it fits, the cut never falling on the text's last mark; the rest is cut the
same way while it is still too long, and its last piece stays open for the next paragraphs. Pieces
are exact substrings (rejoined they give the text back). One difference, ours: where no mark is
left to cut at, the piece is cut into a token window (the code keeps it whole, over the limit, or
stops with an error). Packing never crosses a source or a batch boundary (the code chunks one book
at a time). Each chunk keeps the ids of every unit it took text from, so provenance and evidence
recall still work.
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
        raise ValueError(f"memory.chunks.mode must be one of {' | '.join(CHUNKINGS)}, got {mode!r}")
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


def _source_text(units: Sequence[Unit]) -> tuple[str, list[tuple[int, int, str]]]:
    """The units of one source read as one text: a unit that continues a cut (a token window of the
    loader, ``units_from_texts(cut=True)``) is appended exactly, any other starts a new paragraph.
    Returns the text and each unit's character span."""
    text, spans = "", []
    for unit in units:
        if text and not unit.metadata.get("continues"):
            text += "\n"
        spans.append((len(text), len(text) + len(unit.text), unit.id))
        text += unit.text
    return text, spans


def pack_source(units: Sequence[Unit], tokenizer: Any, max_tokens: int) -> list[Chunk]:
    """Pack the paragraphs of consecutive units of one source into chunks of at most ``max_tokens``
    (see the module doc: the released ``chunk_text``'s rules)."""
    if max_tokens <= 0:
        raise ValueError(f"memory.chunks.size must be positive, got {max_tokens}")
    source = units[0].source_id
    whole, unit_spans = _source_text(units)
    out: list[Chunk] = []
    # the open chunk, and where its pieces come from: (start, end) in it -> start in ``whole``
    text, segs = "", []

    def owners(segments: list[tuple[int, int, int]], a: int, b: int) -> tuple[str, ...]:
        ranges = [
            (s + max(a, cs) - cs, s + min(b, ce) - cs)
            for cs, ce, s in segments
            if cs < b and ce > a
        ]
        return tuple(
            dict.fromkeys(u for lo, hi in ranges for x, y, u in unit_spans if x < hi and y > lo)
        )

    offset = 0
    for paragraph in whole.split("\n"):
        at, offset = offset, offset + len(paragraph) + 1
        if not paragraph:
            continue
        seg = (0, len(paragraph), at)
        if text:
            shift = len(text) + 1
            joined, joined_segs = (
                f"{text}\n{paragraph}",
                [*segs, (shift, shift + len(paragraph), at)],
            )
        else:
            joined, joined_segs = paragraph, [seg]
        if tokenizer.count(paragraph) > max_tokens:
            start = 0
            while True:  # the open chunk plus the paragraph, cut; the last piece stays open
                end = start + cut_head(joined[start:], tokenizer, max_tokens)
                out.append(Chunk(joined[start:end], owners(joined_segs, start, end), source))
                start = end
                if tokenizer.count(joined[start:]) <= max_tokens:
                    break
            text = joined[start:]
            segs = [
                (max(cs - start, 0), ce - start, s + max(start - cs, 0))
                for cs, ce, s in joined_segs
                if ce > start
            ]
        elif tokenizer.count(joined) > max_tokens:
            if text:
                out.append(Chunk(text, owners(segs, 0, len(text)), source))
            text, segs = paragraph, [seg]
        else:
            text, segs = joined, joined_segs
    if text:
        out.append(Chunk(text, owners(segs, 0, len(text)), source))
    return out
