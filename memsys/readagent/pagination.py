"""ReadAgent's episode pagination (Lee et al. 2024, Sec. 3.1): the text is read piece by piece
(paragraphs, or the dataset's units) and the LLM picks a natural pause point among numbered breaks.

A label ``<j>`` stands for the break before piece ``j`` (global piece index, as in the demo
notebook). From the start of a page, pieces are added while the page has fewer than ``max_words``
words; a break is offered when the page it would close holds between ``min_words`` and
``max_words`` words. A reply naming no offered label falls back to the last one (the demo's
``allow_fallback_to_last``), counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memharness.memsys.types import Unit, rejoin_separator

_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_LABEL = re.compile(r"<\s*(\d+)\s*>")


def count_words(text: str) -> int:
    """Whitespace words, as the paper counts them."""
    return len(text.split())


@dataclass
class Piece:
    """One breakable stretch of text (a paragraph) with the units it came from."""

    text: str
    unit_ids: list[str] = field(default_factory=list)

    @property
    def words(self) -> int:
        return count_words(self.text)


def pieces_of(units: Sequence[Unit], breaks: str) -> list[Piece]:
    """The episode cut into pieces. ``units``: one piece per unit. ``paragraphs``: each unit split at
    blank lines; a unit that continues a cut (``units_from_texts(cut=True)``) is joined to the piece
    before it, so a paragraph split across two token windows is one piece with both units."""
    pieces: list[Piece] = []
    for unit in units:
        if not unit.text.strip():
            continue
        parts = [unit.text] if breaks == "units" else _PARAGRAPH.split(unit.text)
        parts = [p for p in parts if p.strip()] or [unit.text]
        if breaks == "paragraphs" and pieces and unit.metadata.get("continues"):
            first, parts = parts[0], parts[1:]
            last = pieces[-1]
            last.text += rejoin_separator(last.text, unit, "") + first
            last.unit_ids.append(unit.id)
        pieces.extend(Piece(p.strip(), [unit.id]) for p in parts)
    return [p for p in pieces if p.text]


@dataclass
class Window:
    """The pieces offered for one page: ``start`` .. ``end`` (exclusive) and the offered labels."""

    start: int
    end: int
    labels: list[int]
    oversize: bool = False  # no break fits [min_words, max_words]: the first above min_words


def window(pieces: Sequence[Piece], start: int, min_words: int, max_words: int) -> Window:
    """Pieces from ``start`` while the page is under ``max_words`` words, and the breaks that close
    a page of ``min_words``..``max_words`` words (never an empty page)."""
    words, end, labels, first_over = 0, start, [], None
    while end < len(pieces) and (end == start or words < max_words):
        words += pieces[end].words
        end += 1
        if min_words <= words <= max_words:
            labels.append(end)
        elif words > max_words and first_over is None and not labels:
            first_over = end
    if labels:
        return Window(start, end, labels)
    return Window(start, end, [first_over or end], oversize=first_over is not None)


def parse_label(reply: str) -> int | None:
    """The first ``<n>`` of a reply ("Break point: <57> Because ..."), or None."""
    match = _LABEL.search(reply or "")
    return int(match.group(1)) if match else None


@dataclass
class PaginationCounts:
    """What the pagination did, for ``stats()``."""

    calls: int = 0
    failed: int = 0  # the call itself failed: fell back to the last label
    unparsed: int = 0  # no <n> in the reply: fell back to the last label
    out_of_range: int = 0  # a label that was not offered: fell back to the last label
    forced: int = 0  # one label only (or the short remainder): no call
    oversize: int = 0  # a piece made the page jump past max_words before reaching min_words


Ask = Callable[[str], "tuple[str | None, bool]"]  # prompt -> (reply text, ok)


def render_prompt(pieces: Sequence[Piece], w: Window, previous: str, template: str) -> str:
    """The pagination prompt: the previous page as context, the passage with its labels, the
    following piece as the end tag."""
    offered = set(w.labels)
    lines = []
    for j in range(w.start, w.end):
        if j in offered:
            lines.append(f"<{j}>")
        lines.append(pieces[j].text)
    lines.append(f"<{w.end}>" if w.end in offered else "")
    preceding = f"...\n{previous}" if previous else ""
    following = f"{pieces[w.end].text}\n..." if w.end < len(pieces) else ""
    return template.format(
        previous=preceding, passage="\n".join(lines).rstrip("\n"), next=following
    )


def paginate(
    pieces: Sequence[Piece],
    min_words: int,
    max_words: int,
    last_page_words: int,
    template: str,
    ask: Ask,
    counts: PaginationCounts,
) -> list[tuple[int, int]]:
    """Page boundaries ``(start, end)`` over ``pieces``, one LLM call per page with a choice."""
    pages: list[tuple[int, int]] = []
    start = 0
    while start < len(pieces):
        remaining = sum(p.words for p in pieces[start:])
        if remaining < last_page_words:
            counts.forced += 1
            pages.append((start, len(pieces)))
            break
        w = window(pieces, start, min_words, max_words)
        counts.oversize += w.oversize
        end = w.labels[-1]
        if len(w.labels) == 1:
            counts.forced += 1
        else:
            previous = (
                "\n".join(p.text for p in pieces[pages[-1][0] : pages[-1][1]]) if pages else ""
            )
            counts.calls += 1
            reply, ok = ask(render_prompt(pieces, w, previous, template))
            label = parse_label(reply) if ok else None
            if not ok:
                counts.failed += 1
            elif label is None:
                counts.unparsed += 1
            elif label not in w.labels:
                counts.out_of_range += 1
            else:
                end = label
        pages.append((start, end))
        start = end
    return pages
