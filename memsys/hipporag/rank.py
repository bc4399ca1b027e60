"""Retrieval τ: passage scores for one query (no LLM calls here; ``memory.py`` makes them).

- v1 (legacy ``rank_docs``): each query entity links to its single nearest phrase node (cosine
  argmax); the reset vector holds the node's specificity there (or 1 without specificity), 0
  elsewhere; personalised PageRank; a passage's score is the sum of its phrases' PageRank, min-max
  scaled. ``passage_score: facts`` sums over the passage's facts (``docs_to_facts · facts_to_phrases ·
  ppr``: a phrase counts once per fact holding it, the code's), ``phrases`` over its distinct phrases
  (the paper's ``P · ppr``). No query entity: uniform scores (the code's).
- v2 (``graph_search_with_fact_entities``): the facts the recognition filter kept seed their subject
  and object with ``fact score / passages holding the phrase``, averaged over occurrences, the top
  ``linking_top_k`` phrases kept; every passage node is seeded with its min-max dense score times
  ``passage_node_weight``; passages are ranked by their own PageRank. No fact kept: dense retrieval.
  A fact the filter kept twice seeds twice (the code's loop over its list).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from memharness.memsys.hipporag.extract import Triple, normalise_phrase
from memharness.memsys.hipporag.graph import PhraseGraph, min_max
from memharness.memsys.hipporag.ppr import PPRSettings


@dataclass
class Ranking:
    """Passage scores (passage order) and how they were obtained."""

    scores: np.ndarray
    mode: str  # ppr | uniform | dense
    seeds: int = 0  # nodes with a non-zero reset weight
    linked: list[tuple[str, str, float]] = field(default_factory=list)  # (entity, phrase, cosine)
    iterations: int = 0  # power-iteration steps (0 for igraph's solvers and without PPR)
    converged: bool = True  # False: the power iteration stopped at ppr.max_iter


def uniform(n: int) -> Ranking:
    return Ranking(np.full(n, 1.0 / n if n else 0.0), "uniform")


def rank_v1(
    g: PhraseGraph,
    phrase_vectors: np.ndarray,
    entities: Sequence[str],
    entity_vectors: np.ndarray,
    damping: float,
    passage_score: str = "facts",
    specificity: bool = True,
    ppr: PPRSettings | None = None,
) -> Ranking:
    """HippoRAG 1's single-step retrieval; see the module docstring."""
    n = len(g.passages)
    if not entities or not g.phrases:
        return uniform(n)
    # one matrix-vector product per entity: a (few x dim) @ (dim x phrases) product goes multi-threaded
    # in OpenBLAS and took 20-25 ms at 10k phrases on the loaded 2-core machine, against ~0.1 ms
    sims = np.stack([phrase_vectors @ vec for vec in entity_vectors])
    weights = g.specificity() if specificity else np.ones(len(g.phrases))
    reset = np.zeros(g.n_nodes)
    linked = []
    for entity, row in zip(entities, sims, strict=True):
        j = int(np.argmax(row))
        reset[j] = weights[j]
        linked.append((entity, g.phrases[j], float(row[j])))
    run = g.ppr_run(reset, damping, ppr)
    scores = g.passage_sums(run.scores[: len(g.phrases)], passage_score)
    seeds = int(np.count_nonzero(reset))
    return Ranking(min_max(scores), "ppr", seeds, linked, run.iterations, run.converged)


def best_first(scores: np.ndarray, variant: str = "v2") -> np.ndarray:
    """Indices by descending score. Ties: v2 later index first (its code's ``np.argsort(x)[::-1]``,
    taken stable), v1 earlier first."""
    if variant == "v1":
        return np.argsort(-scores, kind="stable")
    return np.argsort(scores, kind="stable")[::-1]


def top_facts(fact_scores: np.ndarray, k: int) -> list[int]:
    """v2's ``k`` best facts by score (ties: later fact first, as :func:`best_first`)."""
    return [int(i) for i in best_first(fact_scores)[:k]]


def match_facts(returned: Sequence[Sequence[str]], candidates: Sequence[Triple]) -> list[int]:
    """Candidate positions of the facts the filter returned, in its order: the normalised fact itself,
    else the closest candidate by string similarity (the code's ``difflib`` match). A fact returned
    twice, or two facts matching one candidate, stay twice (the code keeps them; both seed)."""
    out: list[int] = []
    texts = [str(list(c)) for c in candidates]
    for fact in returned:
        norm = tuple(normalise_phrase(x) for x in fact)
        if norm in candidates:
            i = list(candidates).index(norm)  # type: ignore[arg-type]
        else:
            close = difflib.get_close_matches(str(list(norm)), texts, n=1, cutoff=0.0)
            i = texts.index(close[0])
        out.append(i)
    return out


def rank_v2(
    g: PhraseGraph,
    kept: Sequence[int],
    fact_scores: np.ndarray,
    dense: np.ndarray,
    link_top_k: int,
    passage_node_weight: float,
    damping: float,
    ppr: PPRSettings | None = None,
) -> Ranking:
    """HippoRAG 2's graph search from the kept facts; dense retrieval when none is kept."""
    if not kept:
        return Ranking(min_max(dense), "dense")
    ids = g.phrase_ids()
    counts = g.passages_per_phrase()  # cached index: cheap per query
    total = np.zeros(len(g.phrases))
    occurs = np.zeros(len(g.phrases))
    for f in kept:
        s, _, o = g.facts[f]
        for i in (ids[s], ids[o]):
            total[i] += fact_scores[f] / counts[i] if counts[i] > 0 else fact_scores[f]
            occurs[i] += 1
    phrase_w = np.divide(total, occurs, out=np.zeros_like(total), where=occurs != 0)
    if link_top_k:
        keep = [int(i) for i in np.argsort(-phrase_w, kind="stable")[:link_top_k]]
        mask = np.zeros_like(phrase_w)
        mask[keep] = 1.0
        phrase_w = phrase_w * mask
    reset = np.concatenate([phrase_w, min_max(dense) * passage_node_weight])
    if reset.sum() <= 0:
        return Ranking(min_max(dense), "dense")
    run = g.ppr_run(reset, damping, ppr)
    seeds = int(np.count_nonzero(reset))
    return Ranking(
        run.scores[len(g.phrases) :],
        "ppr",
        seeds,
        iterations=run.iterations,
        converged=run.converged,
    )
