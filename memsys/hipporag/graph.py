"""The phrase graph and personalised PageRank (HippoRAG ``create_graph.py`` / v2 ``HippoRAG.py``).

Nodes are the unique subject and object phrases of every triple; with ``passage_nodes`` (v2) every
passage is a node too, after the phrases. Edges are undirected, one per node pair:

- **triple edges**: each triple adds 1 to the edge between its subject and object, once per passage
  it was extracted from (``inter_triple_weight = 1``); a triple whose subject is its object adds none.
  v2 adds 2 per passage and counts a triple repeated inside one passage once: its code stores the
  pair under both keys (s, o) and (o, s), two parallel igraph edges, after ``filter_invalid_triples``
  dropped a passage's repeats;
- **synonym edges**: for every phrase with more than 2 alphanumeric characters, its nearest phrases
  by embedding cosine, most similar first, while the cosine is at least ``threshold`` and at most
  ``max_neighbours`` of them; v1: the edge weight is the cosine, replacing a triple edge on the same
  pair (as the legacy ``graph_plus[edge] = score`` does). v2: the cosine replaces one direction
  (i, j) of the pair, so the edge weighs the sum of its two directions, each the cosine when that
  end chose the other, else its triple count;
- **passage edges** (v2): each passage to every phrase of its triples, weight 1 (one key in the code).

Node specificity (v1's reset weights): 1 / the number of passages whose triples hold the phrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import igraph as ig
import numpy as np
from memharness.memsys.hipporag.extract import PassageTriples, Triple
from memharness.memsys.hipporag.ppr import DEFAULTS, PPRSettings, Result, Transition
from memharness.memsys.services.cpu import cpu_workers, run_cpu_many

TRIPLE, SYNONYM, PASSAGE = "triple", "synonym", "passage"
_BLOCK = 1024  # rows of the phrase-similarity matrix held at once


@dataclass
class PhraseGraph:
    """Phrases, facts and passages as index lists; ``edges`` maps a node pair (low, high) to its weight."""

    phrases: list[str]
    passages: list[str]  # text unit ids, passage order
    facts: list[Triple]  # unique triples
    passage_facts: list[list[int]]  # fact ids per passage
    passage_nodes: bool = False
    edges: dict[tuple[int, int], float] = field(default_factory=dict)
    kinds: dict[tuple[int, int], str] = field(default_factory=dict)
    _graph: ig.Graph | None = field(default=None, repr=False)
    _transition: Transition | None = field(default=None, repr=False)
    _cache: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        return len(self.phrases) + (len(self.passages) if self.passage_nodes else 0)

    def passage_node(self, p: int) -> int:
        return len(self.phrases) + p

    def phrase_ids(self) -> dict[str, int]:
        return self._index()["ids"]

    def _index(self) -> dict[str, Any]:
        """Index arrays built once per graph: fact endpoints, (passage, fact) and distinct
        (passage, phrase) pairs, so scoring a query is a few vector operations."""
        if self._cache is None:
            ids = {ph: i for i, ph in enumerate(self.phrases)}
            ends = np.array([(ids[f[0]], ids[f[2]]) for f in self.facts], dtype=np.int64)
            pairs = [(p, f) for p, fs in enumerate(self.passage_facts) for f in fs]
            held = sorted(
                {(p, int(i)) for p, f in pairs for i in ends[f]}
            )  # a phrase counted once per passage
            self._cache = {
                "ids": ids,
                "ends": ends.reshape(-1, 2),
                "pf": np.array(pairs, dtype=np.int64).reshape(-1, 2),
                "pp": np.array(held, dtype=np.int64).reshape(-1, 2),
            }
        return self._cache

    def phrases_of_passage(self, p: int) -> list[int]:
        """The distinct phrase ids of passage ``p``'s facts, ascending."""
        pp = self._index()["pp"]
        return [int(i) for i in pp[pp[:, 0] == p, 1]]

    def passages_per_phrase(self) -> np.ndarray:
        """How many passages hold each phrase (HippoRAG's ``phrase_to_num_doc``)."""
        x = self._index()
        if "held_by" not in x:  # per graph, not per query
            x["held_by"] = np.bincount(x["pp"][:, 1], minlength=len(self.phrases)).astype(float)
        return x["held_by"]

    def specificity(self) -> np.ndarray:
        """1 / passages holding the phrase; 1 for a phrase held by none."""
        counts = self.passages_per_phrase()
        return np.where(counts > 0, 1.0 / np.maximum(counts, 1), 1.0)

    def passage_sums(self, phrase_scores: np.ndarray, over: str = "facts") -> np.ndarray:
        """Per passage: the sum over its facts of their endpoints' scores (a fact whose subject is its
        object counts it once), or (``over="phrases"``) over its distinct phrases."""
        x, n = self._index(), len(self.passages)
        if over == "phrases":
            pp = x["pp"]
            return np.bincount(pp[:, 0], weights=phrase_scores[pp[:, 1]], minlength=n)
        ends, pf = x["ends"], x["pf"]
        if not len(ends):
            return np.zeros(n)
        per_fact = phrase_scores[ends[:, 0]] + np.where(
            ends[:, 0] != ends[:, 1], phrase_scores[ends[:, 1]], 0.0
        )
        return np.bincount(pf[:, 0], weights=per_fact[pf[:, 1]], minlength=n)

    def edge_counts(self) -> dict[str, int]:
        out = {TRIPLE: 0, SYNONYM: 0, PASSAGE: 0}
        for kind in self.kinds.values():
            out[kind] += 1
        return out

    def igraph(self) -> ig.Graph:
        if self._graph is None:
            pairs = sorted(self.edges)
            g = ig.Graph(n=self.n_nodes, edges=pairs, directed=False)
            g.es["weight"] = [self.edges[e] for e in pairs]
            self._graph = g
        return self._graph

    def transition(self) -> Transition:
        """The sparse weight matrix for the power iteration, built once per graph."""
        if self._transition is None:
            self._transition = Transition(self.n_nodes, self.edges)
        return self._transition

    def ppr_run(
        self, reset: np.ndarray, damping: float, settings: PPRSettings | None = None
    ) -> Result:
        """Personalised PageRank over the undirected weighted graph; ``damping`` is the probability
        of following an edge (igraph's convention, HippoRAG's 0.5); ``settings`` pick the engine
        (``ppr.py``)."""
        cfg = {**DEFAULTS, **(settings or {})}
        if self.n_nodes == 0:
            return Result(np.zeros(0))
        if cfg["engine"] == "power":
            return self.transition().power(reset, damping, cfg["tol"], cfg["max_iter"])
        scores = self.igraph().personalized_pagerank(
            damping=damping,
            directed=False,
            weights="weight" if self.edges else None,
            reset=np.asarray(reset, dtype=float).tolist(),
            implementation=cfg["engine"],
        )
        return Result(np.asarray(scores, dtype=float))

    def ppr(
        self, reset: np.ndarray, damping: float, settings: PPRSettings | None = None
    ) -> np.ndarray:
        """The scores of :meth:`ppr_run`."""
        return self.ppr_run(reset, damping, settings).scores

    def to_json(self) -> dict[str, Any]:
        pairs = sorted(self.edges)
        return {
            "phrases": self.phrases,
            "passages": self.passages,
            "facts": [list(f) for f in self.facts],
            "passage_facts": self.passage_facts,
            "passage_nodes": self.passage_nodes,
            "edges": [[a, b, self.edges[(a, b)], self.kinds[(a, b)]] for a, b in pairs],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PhraseGraph:
        g = cls(
            phrases=list(d["phrases"]),
            passages=list(d["passages"]),
            facts=[tuple(f) for f in d["facts"]],  # type: ignore[misc]
            passage_facts=[list(x) for x in d["passage_facts"]],
            passage_nodes=bool(d["passage_nodes"]),
        )
        for a, b, w, kind in d["edges"]:
            g.edges[(int(a), int(b))], g.kinds[(int(a), int(b))] = float(w), kind
        return g


def collect(records: Sequence[PassageTriples], passage_nodes: bool) -> PhraseGraph:
    """Phrases (first-seen order), unique facts, and each passage's facts; triple edges added."""
    phrases: dict[str, int] = {}
    facts: dict[Triple, int] = {}
    per_passage: list[list[int]] = []
    for rec in records:
        mine: list[int] = []
        for t in rec.triples:
            phrases.setdefault(t[0], len(phrases))
            phrases.setdefault(t[2], len(phrases))
            mine.append(facts.setdefault(t, len(facts)))
        per_passage.append(list(dict.fromkeys(mine)))
    g = PhraseGraph(
        phrases=list(phrases),
        passages=[r.chunk for r in records],
        facts=list(facts),
        passage_facts=per_passage,
        passage_nodes=passage_nodes,
    )
    per_key = 2.0 if passage_nodes else 1.0  # v2: the two keys (s, o) and (o, s)
    for rec in records:
        # v2 counts a passage's repeated triple once; v1 (legacy) once per occurrence
        triples = dict.fromkeys(rec.triples) if passage_nodes else rec.triples
        for s, _, o in triples:
            a, b = phrases[s], phrases[o]
            if a != b:
                key = (min(a, b), max(a, b))
                g.edges[key] = g.edges.get(key, 0.0) + per_key
                g.kinds[key] = TRIPLE
    return g


def synonym_neighbours(
    vectors: np.ndarray,
    eligible: Sequence[bool],
    rows: range,
    threshold: float,
    max_neighbours: int,
) -> list[tuple[int, int, float]]:
    """(phrase, neighbour, cosine) for the phrases of ``rows``, row by row, nearest first: a unit
    of work for the run's CPU pool (a row reads only its own similarities)."""
    out: list[tuple[int, int, float]] = []
    for start in range(rows.start, rows.stop, _BLOCK):
        sims = vectors[start : min(start + _BLOCK, rows.stop)] @ vectors.T
        for r, row in enumerate(sims):
            i = start + r
            if not eligible[i]:
                continue
            taken = 0
            for j in np.argsort(-row, kind="stable"):
                if taken >= max_neighbours or row[j] < threshold:
                    break
                if j != i:
                    out.append((i, int(j), float(row[j])))
                    taken += 1
    return out


def add_synonym_edges(
    g: PhraseGraph,
    vectors: np.ndarray,
    threshold: float,
    max_neighbours: int,
    min_alnum: int = 3,
    directed_keys: bool = False,
) -> None:
    """Synonym edges from the phrases' (unit-norm) embeddings; see the module docstring
    (``directed_keys``: v2's two keys per pair). The similarity rows (n² work) are split into one
    run of whole blocks per worker of the run's CPU pool and applied in row order, as one pass
    would."""
    n = len(g.phrases)
    if n < 2:
        return
    eligible = [len(re.sub(r"[^A-Za-z0-9]", "", p)) >= min_alnum for p in g.phrases]
    # whole blocks per part: every block's product is the same matrix wherever it is computed
    blocks = -(-n // _BLOCK)
    parts = min(cpu_workers(), blocks)
    cuts = [min(n, _BLOCK * (blocks * k // parts)) for k in range(parts + 1)]
    calls = [
        (vectors, eligible, range(a, b), threshold, max_neighbours)
        for a, b in zip(cuts[:-1], cuts[1:], strict=False)
    ]
    chosen: dict[tuple[int, int], float] = {}  # v2: (phrase, its neighbour) -> cosine
    for part in run_cpu_many(synonym_neighbours, calls):
        for i, j, sim in part:
            if directed_keys:
                chosen[(i, j)] = sim
            else:
                key = (min(i, j), max(i, j))
                g.edges[key], g.kinds[key] = sim, SYNONYM
    for a, b in sorted({(min(k), max(k)) for k in chosen}):
        # a direction keeps its triple count (half of the pair's v2 triple weight) unless chosen
        half = g.edges.get((a, b), 0.0) / 2 if g.kinds.get((a, b)) == TRIPLE else 0.0
        g.edges[(a, b)] = chosen.get((a, b), half) + chosen.get((b, a), half)
        g.kinds[(a, b)] = SYNONYM


def add_passage_edges(g: PhraseGraph) -> None:
    """v2: every passage node linked to the phrases of its triples with weight 1."""
    for p, i in g._index()["pp"].tolist():
        key = (i, g.passage_node(p))
        g.edges[key], g.kinds[key] = 1.0, PASSAGE


def min_max(x: np.ndarray) -> np.ndarray:
    """Scaled to [0, 1]; a constant vector becomes all ones (HippoRAG's ``min_max_normalize``
    would divide by zero)."""
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    return np.ones_like(x, dtype=float) if hi - lo <= 0 else (x - lo) / (hi - lo)
