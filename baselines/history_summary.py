"""Full-history summary: the LLM summarises the episode's history; the answer sees only that summary.

MemTree's Table 1 row "Query + full history summary" (numbers copied from Packer et al.'s MemGPT
paper, whose baselines "see a lossy summarization of the past five conversations"; neither paper
says how the summary was written). Two ways, ``mode``:

- ``incremental`` (default): the history is read in insert order, one step per source (an MSC
  session, a document), a source longer than ``step_max_tokens`` split into consecutive steps; each
  step rewrites the summary so far together with the step's text (``incremental_prompt``). Units
  inserted later are folded into the same summary, so nothing is summarised twice.
- ``one_shot``: one call over the whole history (``one_shot_prompt``), the most recent
  ``history_max_tokens`` kept when it is longer (tokens cut are counted). Units inserted later make
  it rewrite the summary from the whole history.

The system is offline: the summary is written on the first retrieval after new units, so once per
episode when every question follows the last insert (and once per insert event on a dataset that
interleaves questions), never per question. Every question gets the same item: the summary, cut to
the budget when longer (counted), with every summarised unit as its provenance. A failed or empty
reply leaves the summary as it was and its units out of the provenance (``degrade`` counts it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from memharness.memsys.base import MemorySystem
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.settings import Placeholders, Range
from memharness.memsys.types import RetrievedItem, Unit, content_id


class HistorySummary(MemorySystem):
    """One LLM-written summary of everything inserted; the answerer's whole context."""

    name = "history_summary"
    online = False

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        mode: Literal["incremental", "one_shot"] = "incremental",
        summary_max_tokens: Annotated[int, Range(1)] = 512,
        step_max_tokens: Annotated[int, Range(1)] = 2048,
        history_max_tokens: Annotated[int, Range(1)] | None = None,
        separator: str = "\n",
        source_header: Annotated[str, Placeholders(optional=("index", "source"))] = "",
        empty_summary: str = "(nothing yet)",
        incremental_prompt: Annotated[str, Placeholders("summary", "history")] = (
            "{summary}\n{history}"
        ),
        one_shot_prompt: Annotated[str, Placeholders("history")] = "{history}",
    ) -> None:
        super().__init__(llm, embedder, tokenizer)
        self.mode = mode
        self.summary_max_tokens = summary_max_tokens
        self.step_max_tokens = step_max_tokens
        self.history_max_tokens = history_max_tokens
        self.separator = separator
        self.source_header = source_header
        self.empty_summary = empty_summary
        self.incremental_prompt = incremental_prompt
        self.one_shot_prompt = one_shot_prompt
        self.summary = ""
        self.summarised: list[str] = []  # unit ids the summary covers, insert order
        self._done = 0  # units already read (incremental)
        self.counts = {
            "summary_calls": 0,
            "summary_failures": 0,
            "input_tokens": 0,
            "history_tokens_cut": 0,
            "summary_cut_at_retrieval": 0,
            "builds": 0,
        }

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """The summary must be able to fit an incremental step's prompt beside the new text."""
        if settings.get("mode", "incremental") == "incremental" and int(
            settings.get("summary_max_tokens", 512)
        ) > int(settings.get("step_max_tokens", 2048)):
            yield ("summary_max_tokens", "must not exceed step_max_tokens in incremental mode")

    # -- building -----------------------------------------------------------------------------

    def build(self, units: Sequence[Unit]) -> None:
        """Summarise what arrived since the last build (incremental) or everything (one_shot)."""
        self.counts["builds"] += 1
        if self.mode == "one_shot":
            self._one_shot(list(units))
            return
        for step in self.steps(list(units[self._done :])):
            self._fold(step)
        self._done = len(units)

    def render(self, units: Sequence[Unit]) -> str:
        """The units' text in insert order, with ``source_header`` before each new source."""
        parts, last, index = [], None, self._source_index(units)
        for unit in units:
            if self.source_header and unit.source_id != last:
                parts.append(
                    self.source_header.format(index=index[unit.source_id], source=unit.source_id)
                )
            parts.append(unit.text)
            last = unit.source_id
        return self.separator.join(parts)

    def _source_index(self, units: Sequence[Unit]) -> dict[str, int]:
        """1-based order of first appearance of each source in the whole episode so far."""
        order: dict[str, int] = {}
        for unit in [*self.units, *units]:
            order.setdefault(unit.source_id, len(order) + 1)
        return order

    def steps(self, units: list[Unit]) -> list[list[Unit]]:
        """Consecutive units of one source, cut so each step's text stays within ``step_max_tokens``."""
        out: list[list[Unit]] = []
        used = 0
        for unit in units:
            n = self.tokenizer.count(unit.text)
            same = out and out[-1][-1].source_id == unit.source_id
            if same and used + n <= self.step_max_tokens:
                out[-1].append(unit)
                used += n
            else:
                out.append([unit])
                used = n
        return out

    def _fold(self, step: list[Unit]) -> None:
        history = self.render(step)
        prompt = self.incremental_prompt.format(
            summary=self.summary or self.empty_summary, history=history
        )
        if self._call(prompt, history):
            self.summarised.extend(u.id for u in step)

    def _one_shot(self, units: list[Unit]) -> None:
        kept, used = [], 0
        for unit in reversed(units):  # the most recent history is kept when it is too long
            n = self.tokenizer.count(unit.text)
            if self.history_max_tokens is not None and used + n > self.history_max_tokens:
                self.counts["history_tokens_cut"] += sum(
                    self.tokenizer.count(u.text) for u in units[: len(units) - len(kept)]
                )
                break
            kept.append(unit)
            used += n
        kept.reverse()
        history = self.render(kept)
        self.summary, self.summarised = "", []
        if self._call(self.one_shot_prompt.format(history=history), history):
            self.summarised = [u.id for u in kept]

    def _call(self, prompt: str, history: str) -> bool:
        """One summary call; the summary is replaced only by a usable reply."""
        self.counts["summary_calls"] += 1
        self.counts["input_tokens"] += self.tokenizer.count(history)
        request = ChatRequest.user(prompt, max_tokens=self.summary_max_tokens)
        completion = self.llm.complete([request], desc="summary")[0]
        text = completion.text.strip() if completion.ok else ""
        if not text:
            self.counts["summary_failures"] += 1
            self.degrade("summary_failed")
            return False
        self.summary = text
        return True

    # -- retrieval ----------------------------------------------------------------------------

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        if not self.summary:
            return []
        text, n = self.summary, self.tokenizer.count(self.summary)
        if n > budget_tokens:
            self.counts["summary_cut_at_retrieval"] += 1
            text = self.tokenizer.truncate(text, budget_tokens)
            n = self.tokenizer.count(text)
        return [
            RetrievedItem(
                text=text,
                score=1.0,
                node_id=content_id(self.summary, prefix="summary-"),
                level=1,
                source_unit_ids=tuple(self.summarised),
                tokens=n,
            )
        ]

    # -- snapshots and diagnostics ------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "summarised": list(self.summarised),
            "done": self._done,
            "counts": dict(self.counts),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.summary = str(state["summary"])
        self.summarised = list(state["summarised"])
        self._done = int(state["done"])
        self.counts.update({k: int(v) for k, v in state["counts"].items()})

    def stats(self) -> dict[str, Any]:
        summary_tokens = self.tokenizer.count(self.summary) if self.summary else 0
        source_tokens = sum(self.tokenizer.count(u.text) for u in self.units)
        return {
            **super().stats(),
            "mode": self.mode,
            **self.counts,
            "summary_tokens": summary_tokens,
            "source_tokens": source_tokens,
            "summarised_units": len(self.summarised),
            "unsummarised_units": len(self.units) - len(set(self.summarised)),
            # history tokens per summary token (null when there is no summary)
            "compression_ratio": source_tokens / summary_tokens if summary_tokens else None,
        }
