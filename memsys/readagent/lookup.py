"""ReadAgent's interactive look-up (Sec. 3.3) and the expanded memory the answerer reads.

Parallel (ReadAgent-P): one call shows every gist under its ``<Page i>`` tag with the question and
asks for up to N pages at once ("... Page [7, 12] ..."); the first bracketed list is read, invalid
numbers are dropped. Sequential (ReadAgent-S): one page per call, the pages read so far shown
expanded and listed, until the model says STOP or N pages are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

_BRACKET = re.compile(r"\[([^\]]*)\]")
_STOP = re.compile(r"\bSTOP\b")


def parse_pages(reply: str, n_pages: int) -> tuple[list[int] | None, int]:
    """(valid page numbers of the first ``[...]`` in order, without repeats; None when the reply has
    no bracketed list or no number in it) and how many numbers were out of range."""
    match = _BRACKET.search(reply or "")
    if not match:
        return None, 0
    numbers = [int(n) for n in re.findall(r"-?\d+", match.group(1))]
    if not numbers:
        return None, 0
    valid = [n for n in dict.fromkeys(numbers) if 0 <= n < n_pages]
    return valid, len([n for n in numbers if not 0 <= n < n_pages])


@dataclass
class LookupCounts:
    """Look-up diagnostics over every question, for ``stats()``."""

    questions: int = 0
    calls: int = 0
    failed: int = 0  # the call failed: nothing expanded from it
    unparsed: int = 0  # no page list (nor STOP) in the reply
    invalid_pages: int = 0  # page numbers out of range, dropped
    pages_expanded: int = 0  # pages picked (before the budget)
    expansions_dropped: int = 0  # picked pages shown as their gist again to fit the budget
    gists_dropped: int = 0  # gists left out because the gists alone exceed the budget
    per_question: list[int] = field(default_factory=list)  # pages picked per question
    context_words: list[int] = field(default_factory=list)  # words returned per question
    reachable_words: list[int] = field(default_factory=list)  # words under the gists shown


Ask = Callable[[str], "tuple[str | None, bool]"]


def memory_text(
    gists: Sequence[str], pages: Sequence[str], expanded: Sequence[int], shown: int
) -> str:
    """The ``<Page i>``-tagged memory of the first ``shown`` pages, looked-up pages in full."""
    picked = set(expanded)
    return "\n".join(f"<Page {i}>\n{pages[i] if i in picked else gists[i]}" for i in range(shown))


def parallel(ask: Ask, prompt: str, shown: int, max_pages: int, counts: LookupCounts) -> list[int]:
    """One call naming up to ``max_pages`` pages; extra pages beyond the cap are not read."""
    counts.calls += 1
    reply, ok = ask(prompt)
    if not ok:
        counts.failed += 1
        return []
    pages, invalid = parse_pages(reply or "", shown)
    counts.invalid_pages += invalid
    if pages is None:
        counts.unparsed += 1
        return []
    return pages[:max_pages]


def sequential(
    ask: Ask,
    prompt_for: Callable[[list[int]], str],
    shown: int,
    max_pages: int,
    counts: LookupCounts,
) -> list[int]:
    """One page per call until STOP, an unusable reply, or ``max_pages`` pages are read."""
    read: list[int] = []
    while len(read) < max_pages:
        counts.calls += 1
        reply, ok = ask(prompt_for(read))
        if not ok:
            counts.failed += 1
            break
        pages, invalid = parse_pages(reply or "", shown)
        counts.invalid_pages += invalid
        fresh = [p for p in pages or [] if p not in read]
        if fresh:
            read.append(fresh[0])
        else:
            counts.unparsed += pages is None and not _STOP.search(reply or "")
            break
    return read
