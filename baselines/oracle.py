"""Gold-evidence oracle: the question's annotated evidence is the whole context.

Not a memory system: it reads the question's gold annotations (``Question.evidence``), which no
memory may see, to give the reference that MemTree's Table 4 calls "Human Annotated Evidence".
``oracle = True`` makes the runner hand it the whole question (``retrieve_question``), writes
``"oracle": true`` into metrics.json, and makes every report label its rows as an oracle and leave
them out of best-marking.

Context, one evidence item at a time in the dataset's order (exact repeats dropped):

- a position span (``Evidence.end`` set: MSC-E evidence rounds, a dialogue round): the inserted
  units at stream positions ``[position, end)``, each its own item and its own provenance;
- no span and a supporting text (MultiHop-RAG ``evidence_list[*].fact``) with ``use_facts``: the
  text as one item whose provenance is every inserted unit of its ``source_id`` (the article), so
  evidence recall sees the article found;
- otherwise: every inserted unit of ``source_id``.

A unit is given once even when two evidence items cover it. Only units inserted before the question
is asked are used; evidence that matches none is counted (``evidence_unmatched``; a fact whose
article is not in the episode is still given, with no provenance, and counted as dangling). Items
are kept in order while they fit the token budget; those cut are counted. A question without
evidence gets an empty context (``no_evidence: empty``) or a failed retrieval (``fail``: recorded as
``retrieve_failed`` by the runner); either way it is counted with its id in ``stats()``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.types import Evidence, Question, RetrievedItem, Unit, content_id


class NoEvidence(LookupError):
    """The question carries no gold evidence, so the oracle has no context to give."""


def evidence_units(evidence: Evidence, units: Sequence[Unit]) -> list[Unit]:
    """The inserted units the evidence points at (its span, else every unit of its source)."""
    if evidence.end is not None and evidence.position is not None:
        return [u for u in units if evidence.position <= u.position < evidence.end]
    return [u for u in units if u.source_id == evidence.source_id]


def distinct(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Evidence without exact repeats (a dataset may list one item twice)."""
    seen, out = set(), []
    for e in evidence:
        key = (e.source_id, e.position, e.end, e.text)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


class GoldEvidenceOracle(MemorySystem):
    """The question's gold evidence as the only context; an oracle row, not a memory."""

    name = "oracle"
    oracle = True

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        use_facts: bool = True,
        no_evidence: Literal["empty", "fail"] = "empty",
    ) -> None:
        super().__init__(llm, embedder, tokenizer)
        self.use_facts = use_facts
        self.no_evidence = no_evidence
        self.counts: Counter[str] = Counter()
        self.without_evidence: list[str] = []

    @classmethod
    def dataset_problem(cls, dataset: Any) -> str | None:
        """Data without any gold evidence would give every question an empty context, reported
        as the gold-evidence row."""
        if any(q.evidence for e in dataset.episodes for q in e.questions):
            return None
        return (
            f"memory=oracle: dataset {dataset.name!r} has no gold evidence on any question "
            "(Question.evidence), so the oracle row would be answers from empty contexts; "
            "choose a dataset with evidence annotations"
        )

    def add(self, units: Sequence[Unit]) -> None:
        """Nothing to build: the context comes from the question's annotations."""

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        raise TypeError(
            "memory=oracle reads the question's gold evidence: call retrieve_question(question, "
            "budget), not retrieve(text, budget)"
        )

    def retrieve_question(self, question: Question, budget_tokens: int) -> list[RetrievedItem]:
        """The question's evidence as items with provenance, within ``budget_tokens``."""
        self.counts["questions"] += 1
        if not question.evidence:
            self.counts["questions_without_evidence"] += 1
            self.without_evidence.append(question.id)
            if self.no_evidence == "fail":
                raise NoEvidence(
                    f"question {question.id} has no gold evidence (memory.no_evidence=fail)"
                )
            return []
        items = self.evidence_items(question.evidence)
        kept = fill_budget(items, budget_tokens, self.tokenizer)
        if len(kept) < len(items):
            self.counts["questions_cut"] += 1
            self.counts["items_cut"] += len(items) - len(kept)
        self.counts["items"] += len(kept)
        return kept

    def evidence_items(self, evidence: Sequence[Evidence]) -> list[RetrievedItem]:
        """Every evidence item's context (see the module docstring), before the budget."""
        items: list[RetrievedItem] = []
        given: set[str] = set()
        for e in distinct(evidence):
            self.counts["evidence_items"] += 1
            matched = evidence_units(e, self.units)
            spanned = e.end is not None and e.position is not None
            if self.use_facts and e.text and not spanned:
                self.counts["fact_items"] += 1
                if not matched:
                    self.counts["evidence_dangling"] += 1
                items.append(
                    RetrievedItem(
                        text=e.text,
                        score=1.0,
                        node_id=content_id(e.source_id, e.text, prefix="fact-"),
                        source_unit_ids=tuple(u.id for u in matched),
                    )
                )
                continue
            if not matched:
                self.counts["evidence_unmatched"] += 1
            for unit in matched:
                if unit.id in given:
                    continue
                given.add(unit.id)
                self.counts["unit_items"] += 1
                items.append(
                    RetrievedItem(
                        text=unit.text, score=1.0, node_id=unit.id, source_unit_ids=(unit.id,)
                    )
                )
        return items

    def stats(self) -> dict[str, Any]:
        keys = (
            "questions",
            "questions_without_evidence",
            "evidence_items",
            "fact_items",
            "unit_items",
            "evidence_unmatched",
            "evidence_dangling",
            "items",
            "questions_cut",
            "items_cut",
        )
        return {
            **super().stats(),
            "oracle": True,
            **{k: int(self.counts[k]) for k in keys},
            "questions_without_evidence_ids": list(self.without_evidence),
        }
