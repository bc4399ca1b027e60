"""Global search: map-reduce over community reports (GraphRAG ``query/structured_search/global_search``).

1. Reports: those chosen at ``community_level`` (``rollup``: every entity rolls up to its deepest community
   at or above the level, or every report there, ``GraphIndex.rollup_reports``) with rating ≥ ``min_rating`` (GraphRAG's
   ``min_community_rank``; the reports left out are counted, ``selection()``); each gets an
   occurrence weight = distinct text units of its entities, divided by the largest.
2. Shuffled (``random.Random(shuffle_seed)``, GraphRAG: 86) and packed into batches of at most
   ``map_batch_tokens`` (a report larger than that goes alone). A batch is a table
   ``id|title|occurrence weight|content|rank`` ordered by (weight, rank).
3. Map, one call per batch, all batches in one concurrent batch (inside retrieval, so metered
   under "retrieve"): the system prompt holds the table, the user turn the question; the JSON reply
   ``{"points": [{"description", "score" (0-100)}]}``. A reply that cannot be read, a failed call
   and a malformed point are each counted with the raw text (GraphRAG scores them 0 silently).
4. Points scored below ``min_point_score`` are dropped and counted (default 1: GraphRAG drops
   exactly the score-0 points); the rest, by score, become ``----Analyst i----`` blocks (i = the
   batch) filling the answer budget (stop at the first that does not fit). These blocks are the
   retrieved items; each carries the dataset units of the reports its point cites
   (``[Data: Reports (ids)]``), or of its whole batch when it cites none.
5. Reduce (``GraphRAG.answer``, metered under "answer"): one call over the blocks. When no
   block remains (every score 0, or nothing fits in the budget) the configured no-data answer is
   returned without a call, as GraphRAG does. When every map batch failed or could not be read
   there is no answer at all: ``answer`` returns a failed completion (``global map: k/k batches
   failed or unparsed``; the runner records ``answer_failed``) instead of the no-data text; when
   only some did, the answer is flagged ``partial`` on the question's record.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, TypedDict

from memharness.memsys.extraction.parsing import FailureLog, fill, parse_json_object
from memharness.memsys.graphrag.index import GraphIndex
from memharness.memsys.graphrag.records import bump
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.settings import NonEmpty, Range
from memharness.memsys.types import Question, RetrievedItem, content_id, option_letters

GLOBAL_DEFAULTS = {
    "community_level": 2,
    "rollup": "entity",
    "map_batch_tokens": 12000,
    "map_max_words": 1000,
    "map_max_tokens": 1500,
    "reduce_max_words": 2000,
    "reduce_max_tokens": 64,
    "response_type": "a short answer of a few words",
    "shuffle_seed": 86,
    "min_rating": 0.0,
    "min_point_score": 1,
    "no_data_answer": "I cannot answer this question from the available data.",
}


@dataclass
class Batch:
    number: int
    text: str
    communities: list[int]  # community view indices
    tokens: int


@dataclass
class Point:
    batch: int
    description: str
    score: int
    cited: list[int] = field(default_factory=list)  # community view indices cited in the batch


class GlobalSearchSettings(TypedDict, total=False):
    """``memory.global_search`` (documented in conf/memory/graphrag.yaml)."""

    community_level: Annotated[int, Range(0)]
    rollup: Literal["entity", "all_levels"]
    map_batch_tokens: Annotated[int, Range(1)]
    map_max_words: Annotated[int, Range(1)]
    map_max_tokens: Annotated[int, Range(1)]
    reduce_max_words: Annotated[int, Range(1)]
    reduce_max_tokens: Annotated[int, Range(1)]
    response_type: Annotated[str, NonEmpty()]
    shuffle_seed: Annotated[int, Range(0)]
    min_rating: Annotated[float, Range(0, 10)]
    min_point_score: Annotated[int, Range(0, 100)]
    no_data_answer: Annotated[str, NonEmpty()]


def global_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """The defaults with ``settings`` over them (the settings checker has validated the values)."""
    return {**GLOBAL_DEFAULTS, **(settings or {})}


class GlobalSearch:
    """Map over report batches, keep the scored points, reduce them into an answer."""

    def __init__(
        self,
        index: GraphIndex,
        settings: dict[str, Any],
        tokenizer: Any,
        map_prompt: str,
        reduce_prompt: str,
        reduce_mc_prompt: str,
    ) -> None:
        self.index, self.s, self.tokenizer = index, global_settings(settings), tokenizer
        self.map_prompt, self.reduce_prompt, self.reduce_mc_prompt = (
            map_prompt,
            reduce_prompt,
            reduce_mc_prompt,
        )
        self._batches: list[Batch] | None = None
        self._selection: dict[str, int] = {}

    # ------------------------------------------------------------------ batches
    def weights(self, chosen: Sequence[int]) -> dict[int, float]:
        """Occurrence weight: distinct text units of a community's entities over the largest such count."""
        counts = {}
        for c in chosen:
            units = {
                tu
                for e in self.index.communities[c].members
                for tu in self.index.entity_text_units(e)
            }
            counts[c] = len(units)
        top = max(counts.values(), default=0) or 1
        return {c: n / top for c, n in counts.items()}

    def batches(self) -> list[Batch]:
        """Report tables packed to ``map_batch_tokens`` (computed once per build)."""
        if self._batches is not None:
            return self._batches
        views, store = self.index.communities, self.index.store
        rolled = self.index.rollup_reports(int(self.s["community_level"]), self.s["rollup"])
        chosen = [c for c in rolled if views[c].rating >= float(self.s["min_rating"])]
        self._selection = {
            "reports_at_level": len(rolled),
            "reports_below_min_rating": len(rolled) - len(chosen),
            "reports_mapped": len(chosen),
        }
        weight = self.weights(chosen)
        random.Random(int(self.s["shuffle_seed"])).shuffle(chosen)
        header = "-----Reports-----\nid|title|occurrence weight|content|rank\n"
        header_tokens = self.tokenizer.count(header)
        batches: list[Batch] = []
        current: list[tuple[int, str]] = []
        used = header_tokens
        for c in chosen:
            view = views[c]
            row = (
                f"{view.key}|{store.meta[view.node].get('title', '')}|{weight[c]:.4f}|"
                f"{store.texts[view.node]}|{view.rating:g}\n"
            )
            n = self.tokenizer.count(row)
            if used + n > int(self.s["map_batch_tokens"]) and current:
                batches.append(self._batch(len(batches), header, current, weight, used))
                current, used = [], header_tokens
            current.append((c, row))
            used += n
        if current:
            batches.append(self._batch(len(batches), header, current, weight, used))
        self._batches = batches
        self._selection["batches"] = len(batches)
        return batches

    def selection(self) -> dict[str, int]:
        """Reports at the level, left out below ``min_rating``, mapped; and the batches they fill."""
        self.batches()
        return dict(self._selection)

    def _batch(
        self,
        number: int,
        header: str,
        rows: list[tuple[int, str]],
        weight: dict[int, float],
        tokens: int,
    ) -> Batch:
        views = self.index.communities
        rows = sorted(rows, key=lambda cr: (-weight[cr[0]], -views[cr[0]].rating))
        return Batch(
            number=number,
            text=header + "".join(r for _, r in rows),
            communities=[c for c, _ in rows],
            tokens=tokens,
        )

    # ------------------------------------------------------------------ map
    def map_requests(self, question: str) -> list[ChatRequest]:
        return [
            ChatRequest(
                messages=(
                    (
                        "system",
                        fill(
                            self.map_prompt, context_data=b.text, max_length=self.s["map_max_words"]
                        ),
                    ),
                    ("user", question),
                ),
                max_tokens=int(self.s["map_max_tokens"]),
                temperature=0.0,
                json_output=True,
            )
            for b in self.batches()
        ]

    def run_map(
        self, llm: Any, question: str, log: FailureLog
    ) -> tuple[list[Point], dict[str, int]]:
        """All map calls as one concurrent batch; returns every parsed point and this query's counts."""
        requests = self.map_requests(question)
        record = {
            "map_calls": len(requests),
            "map_parsed": 0,
            "map_failed": 0,
            "map_unparsed": 0,
            "points": 0,
            "points_zero": 0,
            "points_below_min_score": 0,
            "points_malformed": 0,
        }
        if not requests:
            return [], record
        completions = llm.complete(requests, desc="graphrag map")
        points: list[Point] = []
        for batch, comp in zip(self.batches(), completions, strict=False):
            if not comp.ok:
                log.add("map_failed", comp.error or "", batch=batch.number)
                record["map_failed"] += 1
                continue
            points.extend(self.parse_points(batch, comp.text, log, record))
        record["points"] = len(points)
        record["points_zero"] = sum(p.score <= 0 for p in points)
        record["points_below_min_score"] = sum(
            p.score < int(self.s["min_point_score"]) for p in points
        )
        return points, record

    def parse_points(
        self, batch: Batch, reply: str, log: FailureLog, record: dict[str, int]
    ) -> list[Point]:
        data = parse_json_object(reply)
        if data is None or not isinstance(data.get("points"), list):
            log.add("map_unparsed", reply, batch=batch.number)
            record["map_unparsed"] += 1
            return []
        record["map_parsed"] += 1
        keys = {self.index.communities[c].key: c for c in batch.communities}
        out = []
        for p in data["points"]:
            try:
                description, score = str(p["description"]).strip(), int(float(p["score"]))
            except (TypeError, KeyError, ValueError):
                log.add("point_malformed", str(p), batch=batch.number)
                record["points_malformed"] += 1
                continue
            cited = [keys[k] for k in _cited_reports(description) if k in keys]
            out.append(Point(batch=batch.number, description=description, score=score, cited=cited))
        return out

    # ------------------------------------------------------------------ reduce
    def reduce_items(self, points: Sequence[Point], budget: int) -> list[RetrievedItem]:
        """Points scored ``min_point_score`` or more, by score, as analyst blocks, until the first that does not fit."""
        floor = int(self.s["min_point_score"])
        kept = sorted((p for p in points if p.score >= floor), key=lambda p: -p.score)
        items, used = [], 0
        batches = self.batches()
        views, store = self.index.communities, self.index.store
        for n, p in enumerate(kept):
            text = f"----Analyst {p.batch + 1}----\nImportance Score: {p.score}\n{p.description}"
            tokens = self.tokenizer.count(text)
            if used + tokens > budget:
                break
            sources = p.cited or batches[p.batch].communities
            units = tuple(
                dict.fromkeys(u for c in sources for u in store.source_units(views[c].node))
            )
            items.append(
                RetrievedItem(
                    text=text,
                    score=float(p.score),
                    node_id=content_id("graphrag-point", p.batch, n, p.description, prefix="p-"),
                    level=max(store.levels[views[c].node] for c in sources),
                    source_unit_ids=units,
                    tokens=tokens,
                )
            )
            used += tokens
        return items

    def reduce_request(
        self,
        question: str,
        items: Sequence[RetrievedItem],
        options: Sequence[str] | None = None,
        question_id: str = "?",
    ) -> ChatRequest:
        """The reduce call; with ``options`` it asks for one option letter (constrained; at most 10 options)."""
        data = "\n\n".join(i.text for i in items)
        if options:
            letters = option_letters(len(options), question_id)
            listed = "\n".join(f"({letters[i]}) {o}" for i, o in enumerate(options))
            system = fill(self.reduce_mc_prompt, report_data=data, options=listed)
            return ChatRequest(
                messages=(("system", system), ("user", question)),
                max_tokens=2,
                temperature=0.0,
                choices=tuple(letters),
            )
        system = fill(
            self.reduce_prompt,
            report_data=data,
            response_type=self.s["response_type"],
            max_length=self.s["reduce_max_words"],
        )
        return ChatRequest(
            messages=(("system", system), ("user", question)),
            max_tokens=int(self.s["reduce_max_tokens"]),
            temperature=0.0,
        )

    def answer(
        self,
        llm: Any,
        question: Question,
        items: Sequence[RetrievedItem],
        multiple_choice: bool,
        outcome: dict[str, int],
        record: dict[str, Any],
        failures: FailureLog,
    ) -> Completion:
        """The reduce step over the kept points (``outcome``: this question's map-call counts).

        Every map batch failed or unreadable: a failed completion. Some did: the answer is reduced
        from the rest and flagged (``sample_fields: {"partial": ...}``). No point kept: the no-data
        answer, without a call.
        """
        broken = outcome.get("map_failed", 0) + outcome.get("map_unparsed", 0)
        if broken and broken == outcome["map_calls"]:
            bump(record, "map_all_failed")
            return Completion(
                text="",
                error=f"global map: {broken}/{broken} batches failed or unparsed",
                extra={"prompt": ""},
            )
        flags = {"sample_fields": {"partial": dict(outcome)}} if broken else {}
        if not items:
            bump(record, "no_data_answers")
            return Completion(
                text=self.s["no_data_answer"], extra={"prompt": "", "no_data": True, **flags}
            )
        options = question.options if multiple_choice else None
        request = self.reduce_request(question.text, items, options, question.id)
        completion = llm.complete([request], desc="graphrag reduce")[0]
        bump(record, "reduce_calls")
        if not completion.ok:
            bump(record, "reduce_failed")
            failures.add("reduce_failed", completion.error or "", question=question.id)
        prompt = "\n\n".join(content for _, content in request.messages)
        return replace(completion, extra={**completion.extra, "prompt": prompt, **flags})


def _cited_reports(description: str) -> list[int]:
    """Report ids cited as ``[Data: Reports (2, 7, +more)]``."""
    ids = []
    for group in re.findall(r"Reports?\s*\(([^)]*)\)", description):
        ids += [int(x) for x in re.findall(r"\d+", group)]
    return ids
