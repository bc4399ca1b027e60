"""Single-step retrievers over a flat store (Zeng et al., 2024, Sec. 3.2): dense, BM25, hybrid.

- ``dense``: cosine top-k, the hierarchy core's ``traverse.collapsed`` over a store that holds
  only level 0 (the paper's and the released code's retriever: text-embedding-3-small + FAISS).
- ``bm25``: Okapi BM25 with ``rank-bm25``'s model (``BM25Okapi``: k1, b, its idf with the floor
  ``epsilon``), scored over postings in numpy (``BM25Index``).
  Tokenisation (``bm25_tokens``): lower-case, Unicode word characters (``\\w+``: letters, digits,
  underscore; punctuation splits words, so "U.S." gives "u", "s"), no stemming, and optionally a
  short English stop-word list. Only units sharing at least one query token are scored and
  returned (a unit with no token in common has no BM25 evidence), so fewer than k may come
  back; a query word repeated in the query counts each time (rank-bm25's sum over query tokens).
- ``hybrid``: reciprocal-rank fusion (Cormack et al., 2009) of the dense and BM25 rankings:
  score(u) = sum over the two rankings of 1 / (rrf_k + rank), ranks from 1, each ranking cut
  at max(k, depth) (``memory.fusion.k`` and ``memory.fusion.depth``).

Ties are broken by node index (insertion order) everywhere, so rankings are deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.structmem.settings import BM25, Fusion

Ranked = list[tuple[int, float]]
SCORERS = ("dense", "bm25", "hybrid")

# A short list of English function words, written for this project.
STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her hers him his
how i if in into is it its me my of on or our she so than that the their them then there these they this
those to was we were what when where which who whom whose why will with would you your""".split()
)


def bm25_tokens(text: str, stopwords: bool = True) -> list[str]:
    """Lower-cased ``\\w+`` tokens, stop words dropped when ``stopwords`` is true."""
    tokens = re.findall(r"\w+", text.lower())
    return [t for t in tokens if t not in STOPWORDS] if stopwords else tokens


class BM25Index:
    """Okapi BM25 with rank-bm25's model and vectorised scoring.

    ``rank_bm25.BM25Okapi`` holds the model: its idf table (with the ε floor for words in more than
    half of the units), the unit lengths and average length, k1 and b. Its own ``get_scores`` loops
    in Python over every unit for every query token (seconds per query at 100,000 units), so the
    same sum, idf(t) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · len / avglen)) over the query tokens,
    is evaluated here over per-token postings in numpy; only units sharing a token are touched.
    ``tests/unit/memsys/test_structmem_retrieval.py`` checks the scores equal ``BM25Okapi.get_scores``.
    """

    def __init__(
        self,
        texts: Sequence[str],
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        stopwords: bool = True,
    ) -> None:
        from rank_bm25 import BM25Okapi

        self.stopwords, self.k1 = stopwords, k1
        corpus = [bm25_tokens(t, stopwords) for t in texts]
        self.size = len(corpus)
        docs: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        for i, tokens in enumerate(corpus):
            for tok, tf in Counter(tokens).items():
                docs.setdefault(tok, []).append(i)
                freqs.setdefault(tok, []).append(tf)
        self.postings = {
            t: (np.asarray(d, dtype=np.int64), np.asarray(freqs[t], dtype=np.float64))
            for t, d in docs.items()
        }
        # BM25Okapi divides by the vocabulary size: a corpus without any token has no model.
        self.model = BM25Okapi(corpus, k1=k1, b=b, epsilon=epsilon) if self.postings else None
        if self.model is not None:
            lengths = np.asarray(self.model.doc_len, dtype=np.float64)
            self._norm = k1 * (1 - b + b * lengths / self.model.avgdl)

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(candidate indices, their BM25 scores) for the units sharing a token with ``query``."""
        tokens = [t for t in bm25_tokens(query, self.stopwords) if t in self.postings]
        if self.model is None or not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        total = np.zeros(self.size)
        hit = np.zeros(self.size, dtype=bool)
        for tok in tokens:  # a token repeated in the query counts each time, as in rank-bm25
            idx, tf = self.postings[tok]
            total[idx] += self.model.idf[tok] * tf * (self.k1 + 1) / (tf + self._norm[idx])
            hit[idx] = True
        cand = np.flatnonzero(hit)
        return cand, total[cand]

    def top(self, query: str, k: int) -> Ranked:
        """The k best-scoring units, ties by index."""
        cand, scores = self.scores(query)
        if k <= 0 or not cand.size:
            return []
        if cand.size > k:  # keep every unit tied with the k-th score, then order exactly
            kth = np.partition(scores, cand.size - k)[cand.size - k]
            keep = scores >= kth
            cand, scores = cand[keep], scores[keep]
        order = np.lexsort((cand, -scores))[:k]
        return [(int(cand[i]), float(scores[i])) for i in order]


def reciprocal_rank_fusion(rankings: Sequence[Ranked], rrf_k: float, k: int) -> Ranked:
    """Fuse rankings: each node scores sum(1 / (rrf_k + rank)); the k best, ties by node index."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (node, _) in enumerate(ranking, start=1):
            fused[node] = fused.get(node, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(fused, key=lambda v: (-fused[v], v))[: max(0, k)]
    return [(v, fused[v]) for v in order]


class Retriever:
    """Ranks the units of a flat store for a query text with the configured scorer."""

    def __init__(
        self,
        store: HierarchyStore,
        embedder: Any,
        scorer: str = "dense",
        *,
        bm25: BM25 | None = None,
        fusion: Fusion | None = None,
        threshold: float = -1.0,
    ) -> None:
        if scorer not in SCORERS:
            raise ValueError(f"memory.scorer must be one of {' | '.join(SCORERS)}, got {scorer!r}")
        self.store, self.embedder, self.scorer = store, embedder, scorer
        bm25, fusion = bm25 or BM25(), fusion or Fusion()  # null: the defaults
        self.rrf_k, self.rrf_depth = float(fusion.k), int(fusion.depth)
        self.threshold = float(threshold)
        self.bm25_params = dict(
            k1=float(bm25.k1),
            b=float(bm25.b),
            epsilon=float(bm25.epsilon),
            stopwords=bool(bm25.stopwords),
        )
        self._bm25: BM25Index | None = None
        self.bm25_builds = 0

    def bm25(self) -> BM25Index:
        """The BM25 index, rebuilt when units were added since the last build (rank-bm25 has no update)."""
        if self._bm25 is None or self._bm25.size != len(self.store):
            self._bm25 = BM25Index(self.store.texts, **self.bm25_params)
            self.bm25_builds += 1
        return self._bm25

    def dense(self, query: str, k: int) -> Ranked:
        return traverse.collapsed(self.store, self.embedder.embed([query])[0], k, self.threshold)

    def rank(self, query: str, k: int) -> Ranked:
        """Top-k ``(node, score)`` for ``query``: cosine, BM25 score or fused reciprocal rank."""
        if k <= 0 or self.store.is_empty():
            return []
        if self.scorer == "dense":
            return self.dense(query, k)
        if self.scorer == "bm25":
            return self.bm25().top(query, k)
        depth = max(k, self.rrf_depth)
        return reciprocal_rank_fusion(
            [self.dense(query, depth), self.bm25().top(query, depth)], self.rrf_k, k
        )
