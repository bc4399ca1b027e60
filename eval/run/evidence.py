"""Evidence recall: did a memory retrieve the gold evidence, whatever its structure?

Every retrieved item carries its provenance, the ids of the source units beneath it
(``RetrievedItem.source_unit_ids``; a tree summary lists every unit under it). Those ids are
mapped to the episode's units, and a gold evidence item counts as found when one of the units
covered by the top ``k`` items matches it:

- evidence with a position span (``Evidence.end`` set: an MSC-E evidence window, a dialogue round)
  matches the units at stream positions ``[position, end)``;
- evidence without one (a MultiHop-RAG article) matches every unit of its ``source_id``.

``evidence_recall_at_k`` is the share of a question's gold evidence items found in the top ``k``
items; ``evidence_recall`` uses every item the memory returned (the answerer's whole context).
``source_recall_all_at_k`` and ``source_ndcg_any_at_k`` rank source documents instead (sessions in
LongMemEval, articles in MultiHop-RAG): the distinct sources of the covered units in retrieval order,
first appearance counting; the gold is the distinct sources of the evidence. They follow LongMemEval's
official session-level ``recall_all@k`` (every gold source in the top k) and ``ndcg_any@k`` (binary
relevance, its ``dcg``: the first two ranks undiscounted, rank r >= 2 divided by log2(r), 1-based)
computed over whatever a memory retrieved, not over a retriever's ranking of the whole corpus.
Questions without gold evidence (QuALITY, NovelQA, MSC) get no value, never a zero. A summary
high in a tree covers many units, so its recall is generous by construction; ``evidence_units``
(units covered by all retrieved items) shows how much text that recall took.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memharness.eval.record.scores import put
from memharness.memsys.types import Episode, Evidence, Question, RetrievedItem, Unit

DEFAULT_K = (1, 3, 10)


def unit_index(episode: Episode) -> dict[str, Unit]:
    """The episode's units by id (retrieved provenance is expressed in unit ids)."""
    return {u.id: u for u in episode.units}


def matches(evidence: Evidence, unit: Unit) -> bool:
    """Whether ``unit`` is (part of) the gold ``evidence``."""
    if evidence.end is not None and evidence.position is not None:
        return evidence.position <= unit.position < evidence.end
    return unit.source_id == evidence.source_id


def gold_evidence(question: Question) -> list[Evidence]:
    """The question's evidence items without repeats (a dataset may list one source twice)."""
    seen, out = set(), []
    for e in question.evidence:
        key = (e.source_id, e.position, e.end) if e.end is not None else (e.source_id,)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def covered_units(items: Iterable[RetrievedItem], units: Mapping[str, Unit]) -> list[Unit]:
    """Distinct units under the items, in retrieval order; ids outside the episode are ignored."""
    seen, out = set(), []
    for item in items:
        for uid in item.source_unit_ids:
            if uid in units and uid not in seen:
                seen.add(uid)
                out.append(units[uid])
    return out


def recall(gold: Sequence[Evidence], covered: Sequence[Unit]) -> float:
    """Share of the gold evidence items matched by at least one covered unit."""
    return sum(any(matches(e, u) for u in covered) for e in gold) / len(gold)


def ranked_sources(covered: Sequence[Unit]) -> list[str]:
    """Distinct source ids of the covered units, in order of first appearance."""
    return list(dict.fromkeys(u.source_id for u in covered))


def official_dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's ``dcg``: rel[0] + sum over i >= 1 of rel[i] / log2(i + 1) (0-based i)."""
    rel = [float(r) for r in relevances[:k]]
    return rel[0] + sum(r / math.log2(i + 1) for i, r in enumerate(rel) if i) if rel else 0.0


def source_scores(
    gold: Sequence[Evidence], covered: Sequence[Unit], ks: Iterable[int]
) -> dict[str, float]:
    """``source_recall_all_at_k`` and ``source_ndcg_any_at_k`` for each k (module docstring)."""
    wanted = set(dict.fromkeys(e.source_id for e in gold))
    ranking = ranked_sources(covered)
    out = {}
    for k in ks:
        top = ranking[:k]
        out[f"source_recall_all_at_{k}"] = float(wanted <= set(top))
        ideal = official_dcg([1.0] * len(wanted), k)
        out[f"source_ndcg_any_at_{k}"] = official_dcg([float(s in wanted) for s in top], k) / ideal
    return out


def gold_items(
    gold: Sequence[Evidence], items: Sequence[RetrievedItem], units: Mapping[str, Unit]
) -> dict[str, list]:
    """Which retrieved items cover gold evidence (their indices) and the gold units they cover:
    what a results page highlights (the unit ids alone do not say which are gold)."""
    hit_items, hit_units = [], []
    for i, item in enumerate(items):
        under = [uid for uid in item.source_unit_ids if uid in units]
        gold_under = [uid for uid in under if any(matches(e, units[uid]) for e in gold)]
        if gold_under:
            hit_items.append(i)
            hit_units.extend(u for u in gold_under if u not in hit_units)
    return {"gold_items": hit_items, "gold_units": hit_units}


def recall_scores(
    question: Question, items: Sequence[RetrievedItem], units: Mapping[str, Unit], cfg: Any = None
) -> dict[str, float]:
    """``evidence_recall_at_k`` for each configured k, ``evidence_recall`` over every item,
    ``evidence_units`` and the source-level scores for each ``source_k``; empty when the question
    has no gold evidence."""
    gold = gold_evidence(question)
    if not gold:
        return {}
    ks = tuple(int(k) for k in (cfg.get("k", DEFAULT_K) if cfg is not None else DEFAULT_K))
    out = {f"evidence_recall_at_{k}": recall(gold, covered_units(items[:k], units)) for k in ks}
    covered = covered_units(items, units)
    out["evidence_recall"] = recall(gold, covered)
    out["evidence_units"] = float(len(covered))
    source_k = cfg.get("source_k", ()) if cfg is not None else ()
    out.update(source_scores(gold, covered, (int(k) for k in source_k or ())))
    return out


class EvidenceScorer:
    """The evidence scorer: every question whose retrieval ran (the memory was built and searched)
    gets its recall scores (none when it has no gold evidence); ``ctx.units`` is the episode's."""

    name = "evidence"

    def score(
        self, pending: Sequence[tuple[Question, Sequence[RetrievedItem], dict]], ctx: Any
    ) -> None:
        for question, items, record in pending:
            if record["status"] in ("build_failed", "retrieve_failed"):
                continue
            units = ctx.units or {}
            scores = recall_scores(question, items, units, ctx.cfg.eval.get("evidence"))
            found = gold_items(gold_evidence(question), items, units) if scores else {}
            for metric, value in scores.items():
                put(
                    record,
                    metric,
                    value,
                    self.name,
                    **(found if metric == "evidence_recall" else {}),
                )


SCORER = EvidenceScorer()
