"""ReadAgent (Lee et al., ICML 2024, "A Human-Inspired Reading Agent with Gist Memory of Very Long
Contexts") as a memory: pagination, one gist per page, and a per-question look-up that expands the
pages the LLM asks to re-read. Settings are documented in ``conf/memory/readagent.yaml``; what is
ours and what is the paper's in ``docs/readagent.md``.

Offline: the pages and gists are built once per episode from every inserted unit (rebuilt from
scratch when units arrive later; the call cache serves the repeated calls). The look-up runs in
``search``; the runner's shared answer prompt then answers over the expanded memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Annotated, Any

from memharness.memsys.base import MemorySystem
from memharness.memsys.readagent import lookup as lk
from memharness.memsys.readagent.merging import MergeCounts, Page, fit_window
from memharness.memsys.readagent.pagination import (
    PaginationCounts,
    count_words,
    paginate,
    pieces_of,
)
from memharness.memsys.readagent.settings import Gists, Lookup, Pagination, Settings
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.settings import Range, group
from memharness.memsys.types import Question, RetrievedItem, Unit, content_id, option_letters


class ReadAgent(MemorySystem):
    """Gist memory with LLM pagination and look-up."""

    online = False
    name = "readagent"
    retrieval_settings = ("lookup", "answer_page_tags")  # the whole lookup section

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        pagination: Pagination | None = None,
        gists: Gists | None = None,
        lookup: Lookup | None = None,
        min_words: Annotated[int, Range(1)] = 280,
        max_words: Annotated[int, Range(1)] = 600,
        answer_page_tags: bool = False,
        temperature: Annotated[float, Range(0, 2)] = 0.0,
    ) -> None:
        super().__init__(llm, embedder, tokenizer)
        if min_words > max_words:
            raise ValueError(
                f"memory.min_words ({min_words}) must not exceed memory.max_words ({max_words})"
            )
        # one object per group: the sections of conf/memory/readagent.yaml (readagent/settings.py)
        self.settings = Settings(
            group(Pagination, pagination),
            group(Gists, gists),
            group(Lookup, lookup),
            min_words,
            max_words,
            answer_page_tags,
            temperature,
        )
        self.pages: list[Page] = []
        self.pagination = PaginationCounts()
        self.gist_failed = 0
        self.merging = MergeCounts()
        self.counts = lk.LookupCounts()

    @classmethod
    def check_settings(cls, settings: dict[str, Any]):
        """Cross-field rule: a page's lower bound cannot exceed its upper bound."""
        lo, hi = settings.get("min_words"), settings.get("max_words")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            yield "min_words", f"must not exceed max_words ({hi}), got {lo}"

    # ------------------------------------------------------------------ construction
    def _ask(self, prompt: str, max_tokens: int) -> tuple[str | None, bool]:
        request = ChatRequest.user(
            prompt, max_tokens=max_tokens, temperature=self.settings.temperature
        )
        completion = self.llm.complete_one(request)
        return (completion.text, True) if completion.ok else (None, False)

    def build(self, units: Sequence[Unit]) -> None:
        """Paginate every inserted unit, then gist every page in one concurrent batch."""
        s, p = self.settings, self.settings.pagination
        pieces = pieces_of(units, p.breaks)
        self.pagination = PaginationCounts()
        bounds = paginate(
            pieces,
            s.min_words,
            s.max_words,
            p.last_page_words,
            p.prompt,
            lambda prompt: self._ask(prompt, p.max_tokens),
            self.pagination,
        )
        texts, provenance = [], []
        for start, end in bounds:
            texts.append("\n".join(p.text for p in pieces[start:end]))
            ids = [u for p in pieces[start:end] for u in p.unit_ids]
            provenance.append(tuple(dict.fromkeys(ids)))
        self.degradation.pop("gist_failed", None)
        self.gist_failed = 0
        gists = []
        for text, gist in zip(texts, self._shorten(texts, "gists"), strict=True):
            if not gist:
                self.gist_failed += 1
                self.degrade("gist_failed")
            gists.append(gist or text)  # a failed or empty gist keeps the raw page (counted)
        self.pages = [Page(t, g, u) for t, g, u in zip(texts, gists, provenance, strict=True)]
        self.merging = MergeCounts(pages_before=len(self.pages))
        g = self.settings.gists
        if g.window_tokens is not None:
            self.pages = fit_window(
                self.pages,
                int(g.window_tokens * g.window_share),
                lambda pages: sum(
                    self._tokens(self._tagged(i, p.gist)) for i, p in enumerate(pages)
                ),
                lambda joined: self._shorten(joined, "regists"),
                self.merging,
            )

    def _shorten(self, texts: list[str], desc: str) -> list[str | None]:
        """The gist prompt's reply for each text; None for a failed or empty reply."""
        s = self.settings
        requests = [
            ChatRequest.user(
                s.gists.prompt.format(page=t),
                max_tokens=s.gists.max_tokens,
                temperature=s.temperature,
            )
            for t in texts
        ]
        completions = self.llm.complete(requests, desc=desc)
        return [(c.text.strip() or None) if c.ok else None for c in completions]

    # ------------------------------------------------------------------ look-up
    def retrieve_question(self, question: Question, budget_tokens: int) -> list[RetrievedItem]:
        """The look-up sees the answer options with the question where the dataset has them
        (``lookup.options_prompt``), as the paper's QuALITY look-up does."""
        text = question.text
        if question.options:
            letters = option_letters(len(question.options), question.id)
            options = "\n".join(
                f"({k}) {o}" for k, o in zip(letters, question.options, strict=False)
            )
            text = self.settings.lookup.options_prompt.format(question=text, options=options)
        return self.retrieve(text, budget_tokens)

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Look up pages for ``question`` and return the gists in page order, the looked-up pages
        in full, within ``budget_tokens``."""
        if not self.pages:
            return []
        s, counts = self.settings.lookup, self.counts
        shown = self._gists_that_fit(budget_tokens)
        counts.gists_dropped += len(self.pages) - shown
        gists = [p.gist for p in self.pages]
        raw = [p.text for p in self.pages]
        ask = lambda prompt: self._ask(prompt, s.max_tokens)  # noqa: E731
        counts.questions += 1
        if s.mode == "parallel":
            prompt = s.prompt.format(
                gists=lk.memory_text(gists, raw, [], shown),
                question=question,
                max_pages=s.max_pages,
            )
            picked = lk.parallel(ask, prompt, shown, s.max_pages, counts)
        else:

            def prompt_for(read: list[int]) -> str:
                return s.sequential_prompt.format(
                    gists=lk.memory_text(gists, raw, read, shown),
                    question=question,
                    max_pages=s.max_pages,
                    read=", ".join(map(str, read)) or "none",
                )

            picked = lk.sequential(ask, prompt_for, shown, s.max_pages, counts)
        counts.pages_expanded += len(picked)
        counts.per_question.append(len(picked))
        items = self._context(picked, shown, budget_tokens)
        counts.context_words.append(sum(count_words(it.text) for it in items))
        counts.reachable_words.append(sum(count_words(p.text) for p in self.pages[:shown]))
        return items

    def _tokens(self, text: str) -> int:
        return self.tokenizer.count(text)

    def _item_text(self, i: int, expanded: bool) -> str:
        return self._tagged(i, self.pages[i].text if expanded else self.pages[i].gist)

    def _tagged(self, i: int, body: str) -> str:
        return f"<Page {i}>\n{body}" if self.settings.answer_page_tags else body

    def _gists_that_fit(self, budget_tokens: int) -> int:
        """How many gists, from the first page on, fit the budget together."""
        used = 0
        for i in range(len(self.pages)):
            used += self._tokens(self._item_text(i, False))
            if used > budget_tokens:
                return i
        return len(self.pages)

    def _context(self, picked: list[int], shown: int, budget_tokens: int) -> list[RetrievedItem]:
        """Gists in page order with the picked pages in full; over the budget, the last-picked
        expansion goes back to its gist first."""
        gist_tokens = [self._tokens(self._item_text(i, False)) for i in range(shown)]
        full_tokens = {i: self._tokens(self._item_text(i, True)) for i in picked}
        kept = list(picked)
        total = sum(gist_tokens) + sum(full_tokens[i] - gist_tokens[i] for i in kept)
        while kept and total > budget_tokens:
            i = kept.pop()
            total -= full_tokens[i] - gist_tokens[i]
            self.counts.expansions_dropped += 1
        items = []
        for i in range(shown):
            full = i in kept
            items.append(
                RetrievedItem(
                    text=self._item_text(i, full),
                    score=1.0 if full else 0.5,
                    node_id=content_id("readagent", i, self.pages[i].unit_ids, full, prefix="ra-"),
                    level=0 if full else 1,
                    source_unit_ids=self.pages[i].unit_ids,
                    tokens=full_tokens[i] if full else gist_tokens[i],
                )
            )
        return items

    # ------------------------------------------------------------------ snapshots and stats
    def state(self) -> dict[str, Any]:
        return {
            "pages": [asdict(p) for p in self.pages],
            "pagination": asdict(self.pagination),
            "gist_failed": self.gist_failed,
            "merging": asdict(self.merging),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.pages = [Page(p["text"], p["gist"], tuple(p["unit_ids"])) for p in state["pages"]]
        self.pagination = PaginationCounts(**state["pagination"])
        self.gist_failed = int(state["gist_failed"])
        self.merging = MergeCounts(**state["merging"])

    def stats(self) -> dict[str, Any]:
        page_words = [count_words(p.text) for p in self.pages]
        gist_words = [count_words(p.gist) for p in self.pages]
        total, gisted = sum(page_words), sum(gist_words)
        counts = asdict(self.counts)
        per_question = counts.pop("per_question")
        context, reachable = counts.pop("context_words"), counts.pop("reachable_words")
        return {
            **super().stats(),
            "pages": len(self.pages),
            "mean_words_per_page": total / len(self.pages) if self.pages else None,
            "min_words_per_page": min(page_words, default=None),
            "max_words_per_page": max(page_words, default=None),
            "gists": len(self.pages),
            "gist_failed": self.gist_failed,
            "gist_compression_ratio": gisted / total if total else None,
            "compression_rate_percent": 100.0 * (1 - gisted / total) if total else None,
            # the paper's CR of what the answerer reads at each query (gists + looked-up pages)
            "compression_rate_percent_final_query": (
                100.0 * (1 - sum(context) / (total * len(context))) if total and context else None
            ),
            # share of the text whose gist the look-up saw (the rest cannot be looked up)
            "lookup_reach": sum(reachable) / (total * len(reachable))
            if total and reachable
            else None,
            "merging": asdict(self.merging),
            "pagination": asdict(self.pagination),
            "lookup_mode": self.settings.lookup.mode,
            "lookup": {
                **counts,
                "mean_pages_per_question": (
                    sum(per_question) / len(per_question) if per_question else None
                ),
            },
        }
