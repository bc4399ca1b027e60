"""RAPTOR's extraction α: dataset units → leaf chunks that remember the units they came from.

``sentences`` follows the public code's chunker (``parthsarthi03/raptor``, ``raptor/utils.py``
``split_text``), written anew:

1. Split the text at ``.``, ``!``, ``?`` and newlines; the delimiters are dropped (the public
   code's behaviour; ``keep_punctuation`` keeps each one on the piece it ends). Empty pieces are
   skipped; every piece is stripped.
2. Pack pieces greedily: a piece costs the tokens of ``" " + piece``; a chunk is closed when the
   next piece would take it over ``max_tokens``. Pieces are joined with one space.
3. A piece over ``max_tokens`` is split at ``,``, ``;`` and ``:`` and its parts are packed the same
   way into chunks of their own, emitted at once; the chunk being filled stays open, so sentences
   before and after a long sentence can share a chunk and that chunk comes after the long
   sentence's parts (as in the public code). A part still over the limit stays whole. The public
   code can emit an empty chunk there; empty chunks are never emitted here.

How chunks relate to dataset units: the units of one source document (a maximal run of
consecutive units with the same ``source_id``, in stream order) are read as one text, so packing
never crosses a document boundary and a sentence that a dataset's token window cut in two is whole
again. Units are joined as they are: a unit that continues a token-window cut
(``units_from_texts(cut=True)``) is appended exactly, so a word the window cut is whole again;
otherwise one space goes where neither side has whitespace at the joint. Units with no text but
whitespace are left out (counted as ``empty_units``), so they never glue the words around them
together nor become a chunk's source. Each chunk carries the ids of
every unit its text overlaps (its provenance).

``units`` makes each non-empty unit one leaf, as it is.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memharness.memsys.types import Unit, rejoin_separator

SENTENCE_DELIMITERS = re.compile(r"[.!?\n]")
CLAUSE_DELIMITERS = re.compile(r"[,;:]")
CHUNKERS = ("sentences", "units")


@dataclass(frozen=True)
class Chunk:
    """One leaf: its text and the ids of the units it was cut from, in stream order."""

    text: str
    units: tuple[str, ...]


@dataclass(frozen=True)
class _Piece:
    text: str
    start: int  # character span in the document text (for provenance)
    end: int


def source_runs(units: Sequence[Unit]) -> Iterator[list[Unit]]:
    """Maximal runs of consecutive units with the same ``source_id``."""
    run: list[Unit] = []
    for unit in units:
        if run and unit.source_id != run[-1].source_id:
            yield run
            run = []
        run.append(unit)
    if run:
        yield run


def join_units(units: Sequence[Unit]) -> tuple[str, list[int], list[str]]:
    """The run's text, each unit's start offset and the unit ids (offsets ascending).

    Units with no text but whitespace are left out: they neither join the words around them nor
    count as a source of any chunk (``empty_units`` counts them)."""
    parts, starts, ids, length = [], [], [], 0
    for unit in units:
        if not unit.text.strip():
            continue
        sep = rejoin_separator(parts[-1] if parts else "", unit)
        if sep:
            parts.append(sep)
            length += len(sep)
        starts.append(length)
        ids.append(unit.id)
        parts.append(unit.text)
        length += len(unit.text)
    return "".join(parts), starts, ids


def split_pieces(text: str, pattern: re.Pattern[str], keep: bool, offset: int = 0) -> list[_Piece]:
    """Non-empty, stripped pieces of ``text`` between delimiters, with their spans."""
    pieces, start = [], 0
    for m in [*pattern.finditer(text), None]:
        end = len(text) if m is None else (m.end() if keep else m.start())
        raw = text[start:end]
        stripped = raw.strip()
        if stripped:
            left = start + (len(raw) - len(raw.lstrip()))
            pieces.append(_Piece(stripped, offset + left, offset + left + len(stripped)))
        if m is not None:
            start = m.end()
    return pieces


class _Packer:
    """Greedy packing of pieces into chunks of at most ``max_tokens`` (``" " + piece`` counted)."""

    def __init__(self, count: Any, max_tokens: int) -> None:
        self.count, self.max_tokens = count, max_tokens

    def pack(self, pieces: Sequence[_Piece], keep: bool) -> list[list[_Piece]]:
        chunks: list[list[_Piece]] = []
        current: list[_Piece] = []
        used = 0
        for piece in pieces:
            n = self.count(" " + piece.text)
            if n > self.max_tokens:
                parts = split_pieces(piece.text, CLAUSE_DELIMITERS, keep, offset=piece.start)
                chunks.extend(self._pack_parts(parts))
            elif used + n > self.max_tokens:
                chunks.append(current)
                current, used = [piece], n
            else:
                current.append(piece)
                used += n
        if current:
            chunks.append(current)
        return chunks

    def _pack_parts(self, parts: Sequence[_Piece]) -> list[list[_Piece]]:
        out: list[list[_Piece]] = []
        current: list[_Piece] = []
        used = 0
        for part in parts:
            n = self.count(" " + part.text)
            if current and used + n > self.max_tokens:
                out.append(current)
                current, used = [], 0
            current.append(part)
            used += n
        if current:
            out.append(current)
        return out


def _units_of(pieces: Sequence[_Piece], starts: list[int], ids: list[str]) -> tuple[str, ...]:
    """Ids of the units whose text overlaps any of ``pieces`` (offsets are ascending)."""
    found: dict[str, None] = {}
    for p in pieces:
        first = bisect.bisect_right(starts, p.start) - 1
        last = bisect.bisect_right(starts, p.end - 1) - 1
        for i in range(max(first, 0), last + 1):
            found[ids[i]] = None
    return tuple(found)


def sentence_chunks(
    units: Sequence[Unit], tokenizer: Any, max_tokens: int = 100, keep_punctuation: bool = False
) -> list[Chunk]:
    """Sentence-packed chunks of every source run, in stream order (see the module docstring)."""
    if max_tokens <= 0:
        raise ValueError(f"memory.chunks.max_tokens must be positive, got {max_tokens}")
    packer = _Packer(tokenizer.count, max_tokens)
    chunks: list[Chunk] = []
    for run in source_runs(units):
        text, starts, ids = join_units(run)
        pieces = split_pieces(text, SENTENCE_DELIMITERS, keep_punctuation)
        for group in packer.pack(pieces, keep_punctuation):
            chunks.append(Chunk(" ".join(p.text for p in group), _units_of(group, starts, ids)))
    return chunks


def empty_units(units: Sequence[Unit]) -> int:
    """Units with no text but whitespace (no chunker makes a leaf of them)."""
    return sum(1 for u in units if not u.text.strip())


def unit_chunks(units: Sequence[Unit]) -> list[Chunk]:
    """One leaf per unit with text."""
    return [Chunk(u.text, (u.id,)) for u in units if u.text.strip()]


def make_chunks(
    units: Sequence[Unit],
    chunker: str,
    tokenizer: Any,
    max_tokens: int = 100,
    keep_punctuation: bool = False,
) -> list[Chunk]:
    """Leaves for ``units`` with the configured chunker."""
    if chunker == "sentences":
        return sentence_chunks(units, tokenizer, max_tokens, keep_punctuation)
    if chunker == "units":
        return unit_chunks(units)
    raise ValueError(
        f"memory.chunks.chunker must be one of {' | '.join(CHUNKERS)}, got {chunker!r}"
    )
