"""ReadAgent's gist-memory merge for long texts (the paper's App. H): when the tagged gists of every
page exceed the look-up window, neighbouring pages are merged two by two and each merged page is
gisted again from its two gists, round after round, until the gists fit or one page is left.

A merged page keeps the raw text and the units of both pages (a look-up expands it to both), so
every part of the text stays reachable from the look-up; only the granularity of the gists coarsens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass
class Page:
    """One page: its raw text, its gist and the units it came from (provenance)."""

    text: str
    gist: str
    unit_ids: tuple[str, ...]


@dataclass
class MergeCounts:
    """What the merge did, for ``stats()``."""

    pages_before: int = 0  # pages paginated, before any merge
    rounds: int = 0  # merge rounds (each halves the number of pages)
    merged: int = 0  # pages made by merging two
    regist_calls: int = 0  # gists asked of merged pages
    regist_failed: int = 0  # failed or empty: the two gists joined stand as the gist
    over_window: bool = False  # a single page's gist still exceeds the window


Regist = Callable[[list[str]], list[str | None]]  # joined gists -> re-gists (None: failed)


def merge_round(pages: Sequence[Page], regist: Regist, counts: MergeCounts) -> list[Page]:
    """Pages 2k and 2k+1 merged into one (an odd last page stays as it is); each merged page's gist
    is the re-gist of the two gists joined by a line break."""
    pairs = [pages[i : i + 2] for i in range(0, len(pages), 2)]
    joined = ["\n".join(p.gist for p in pair) for pair in pairs if len(pair) == 2]
    replies = iter(regist(joined) if joined else [])
    counts.regist_calls += len(joined)
    out = []
    for pair in pairs:
        if len(pair) == 1:
            out.append(pair[0])
            continue
        both = "\n".join(p.gist for p in pair)
        gist = (next(replies) or "").strip()
        if not gist:
            counts.regist_failed += 1
        units = tuple(dict.fromkeys(u for p in pair for u in p.unit_ids))
        out.append(Page("\n".join(p.text for p in pair), gist or both, units))
        counts.merged += 1
    return out


def fit_window(
    pages: list[Page],
    window_tokens: int,
    gist_tokens: Callable[[Sequence[Page]], int],
    regist: Regist,
    counts: MergeCounts,
) -> list[Page]:
    """Merge rounds until ``gist_tokens(pages)`` fits ``window_tokens`` or one page is left."""
    counts.pages_before = len(pages)
    while len(pages) > 1 and gist_tokens(pages) > window_tokens:
        pages = merge_round(pages, regist, counts)
        counts.rounds += 1
    counts.over_window = gist_tokens(pages) > window_tokens if pages else False
    return pages
