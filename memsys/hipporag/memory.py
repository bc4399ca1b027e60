"""HippoRAG (Gutiérrez et al., NeurIPS 2024) and HippoRAG 2 (2025) as an offline memory.

Build (every LLM step one concurrent batch, metered under "build"): passages (GraphRAG-lite's text
units, ``extraction/chunks.py``) → NER then NER-conditioned OpenIE triples (``extract.py``) → the
phrase graph with triple and synonym edges, and for v2 passage nodes (``graph.py``). Rebuilt from
every inserted unit on the first question after new inserts, like GraphRAG-lite.

Retrieval (``rank.py``): v1 = query NER → nearest phrase nodes weighted by specificity → PPR →
passages by summed phrase PageRank; v2 = query-to-fact cosine → the LLM recognition-memory filter →
PPR seeded by the kept facts' phrases and every passage's dense score → passages by PageRank. The
best ``top_k`` passages fill the token budget, each with its source units as provenance.
Settings and prompts: ``conf/memory/hipporag.yaml``; what is ours and what is HippoRAG's:
docs/hipporag.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.extraction.chunks import Chunks, TextUnit, chunk_problems, make_text_units
from memharness.memsys.extraction.parsing import FailureLog, fill, parse_json_object
from memharness.memsys.hipporag import rank as rk
from memharness.memsys.hipporag.extract import (
    FAILED,
    UNPARSED,
    PassageTriples,
    extraction_summary,
    normalise_phrase,
    parse_entities,
    request,
    run_openie,
)
from memharness.memsys.hipporag.graph import (
    PhraseGraph,
    add_passage_edges,
    add_synonym_edges,
    collect,
    min_max,
)
from memharness.memsys.hipporag.ppr import PPRSettings, ppr_settings
from memharness.memsys.hipporag.settings import Indexing, Prompts, Retrieval
from memharness.memsys.settings import Range, group
from memharness.memsys.types import RetrievedItem, Unit

log = logging.getLogger(__name__)
VECTORS = ("phrase_vectors", "passage_vectors", "fact_vectors")
DEFAULT_TOP_K = {"v1": 10, "v2": 5}  # v1's main experiments retrieve 10; v2's QA reads qa_top_k = 5


class HippoRAG(MemorySystem):
    """HippoRAG v1 / v2; hyperparameters are documented in ``conf/memory/hipporag.yaml``."""

    online = False
    name = "hipporag"
    # retrieval only (dotted: a key inside a group); changing them reuses a built snapshot
    retrieval_settings = (
        "retrieval",
        "ppr",
        "top_k",
        "prompts.query_ner_prompt",
        "prompts.filter_prompt",
    )

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """Rules between settings: the passage windows' overlap is smaller than their size."""
        yield from chunk_problems(settings)

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        variant: Literal["v1", "v2"] = "v1",
        chunks: Chunks | None = None,
        indexing: Indexing | None = None,
        retrieval: Retrieval | None = None,
        ppr: PPRSettings | None = None,
        top_k: Annotated[int, Range(1)] | None = None,
        max_failures_kept: Annotated[int, Range(0)] = 20,
        prompts: Prompts | None = None,
    ) -> None:
        # Settings are declared by the annotations of the groups (hipporag/settings.py), checked
        # before a run starts; each group is a section of conf/memory/hipporag.yaml.
        super().__init__(llm, embedder, tokenizer)
        self.variant = variant
        self.chunks, self.indexing = group(Chunks, chunks), group(Indexing, indexing)
        self.retrieval, self.prompts = group(Retrieval, retrieval), group(Prompts, prompts)
        self.ppr = ppr_settings(ppr)
        self.top_k = int(top_k) if top_k is not None else DEFAULT_TOP_K[variant]
        self.max_failures_kept = int(max_failures_kept)
        self.text_units: list[TextUnit] = []
        self.records: list[PassageTriples] = []
        self.graph: PhraseGraph | None = None
        self.vectors: dict[str, np.ndarray] = {}
        self.build_record: dict[str, Any] = {}
        self.search_failures = FailureLog(self.max_failures_kept)
        self.search_record: dict[str, Any] = {"queries": 0}

    # ------------------------------------------------------------------ build
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def build(self, units: Sequence[Unit]) -> None:
        """Rebuild from ``units``: passages, NER + OpenIE, the phrase graph (and v2's embeddings)."""
        start, failures = time.perf_counter(), FailureLog(self.max_failures_kept)
        self.degradation.clear()  # a rebuild starts over
        self.text_units = make_text_units(
            units, self.tokenizer, self.chunks.size, self.chunks.overlap
        )
        self.records, calls = run_openie(
            self.llm,
            self.text_units,
            self.prompts.ner_prompt,
            self.prompts.triple_prompt,
            self.indexing.extract_max_tokens,
            failures,
        )
        extract_s = time.perf_counter() - start
        g = collect(self.records, passage_nodes=self.variant == "v2")
        self.vectors = {"phrase_vectors": self._embed(g.phrases)}
        add_synonym_edges(
            g,
            self.vectors["phrase_vectors"],
            self.indexing.synonym_threshold,
            self.indexing.synonym_max_neighbours,
            directed_keys=self.variant == "v2",
        )
        if self.variant == "v2":
            add_passage_edges(g)
            self.vectors["passage_vectors"] = self._embed([tu.text for tu in self.text_units])
            self.vectors["fact_vectors"] = self._embed([str(f) for f in g.facts])
        self.graph = g
        summary = extraction_summary(self.records)
        self.degrade("extraction_unparsed", summary["openie_status"][UNPARSED])
        self.degrade("extraction_failed", summary["openie_status"][FAILED])
        self.degrade("ner_unparsed", summary["ner_status"][UNPARSED])
        self.degrade("ner_failed", summary["ner_status"][FAILED])
        counts = g.passages_per_phrase()
        self.build_record = {
            "variant": self.variant,
            "units": len(units),
            "passages": len(self.text_units),
            "chunking": "dataset units"
            if self.chunks.size is None
            else f"{self.chunks.size}/{self.chunks.overlap} tokens",
            "llm_calls": {**calls, "total": sum(calls.values())},
            "extraction": summary,
            "graph": {
                "phrase_nodes": len(g.phrases),
                "passage_nodes": len(g.passages) if g.passage_nodes else 0,
                "facts": len(g.facts),
                "edges": g.edge_counts(),
                "mean_passages_per_phrase": float(counts.mean()) if counts.size else None,
            },
            "failures": failures.to_json(),
            "seconds": {"extract_s": extract_s, "total_s": time.perf_counter() - start},
        }
        log.info(
            "hipporag %s: %d passages, %d triples, %d phrases, extraction failure rate %s",
            self.variant,
            len(self.text_units),
            summary["triples"],
            len(g.phrases),
            "n/a"
            if summary["extraction_failure_rate"] is None
            else f"{100 * summary['extraction_failure_rate']:.1f}%",
        )

    # ------------------------------------------------------------------ retrieval
    def _bump(self, key: str, n: float = 1) -> None:
        self.search_record[key] = self.search_record.get(key, 0) + n

    def _ask(self, prompt: str, max_tokens: int, kind: str, question: str) -> str | None:
        """One JSON call; a failed call is counted and gives None."""
        self._bump(f"{kind}_calls")
        completion = self.llm.complete([request(prompt, max_tokens)], desc=f"hipporag {kind}")[0]
        if not completion.ok:
            self._bump(f"{kind}_failed")
            self.search_failures.add(f"{kind}_failed", completion.error or "", question=question)
            return None
        return completion.text

    def query_entities(self, question: str) -> list[str]:
        """The question's named entities, normalised (an unreadable reply: none, counted)."""
        reply = self._ask(
            fill(self.prompts.query_ner_prompt, question=question),
            self.retrieval.query_ner_max_tokens,
            "query_ner",
            question,
        )
        if reply is None:
            return []
        entities = parse_entities(reply)
        if entities is None:
            self._bump("query_ner_unparsed")
            self.search_failures.add("query_ner_unparsed", reply, question=question)
            return []
        return [e for e in dict.fromkeys(normalise_phrase(x) for x in entities) if e]

    def recognise(self, question: str, candidates: list[int]) -> list[int]:
        """v2's recognition-memory filter: the candidate facts the LLM keeps (fact ids, its order)."""
        g = self.graph
        assert g is not None
        facts = [g.facts[i] for i in candidates]
        payload = json.dumps({"fact": [list(f) for f in facts]}, ensure_ascii=False)
        reply = self._ask(
            fill(self.prompts.filter_prompt, question=question, fact_before_filter=payload),
            self.retrieval.filter_max_tokens,
            "filter",
            question,
        )
        if reply is None:
            return []
        data = parse_json_object(reply)
        returned = data.get("fact") if data else None
        # the code's pydantic check (list[list[str]]): an item that is not a list of strings discards
        # the reply; a list of another length than 3 is still matched to its closest candidate
        if not isinstance(returned, list) or not all(
            isinstance(f, list) and all(isinstance(x, str) for x in f) for f in returned
        ):
            self._bump("filter_unparsed")
            self.search_failures.add("filter_unparsed", reply, question=question)
            return []
        odd = sum(len(f) != 3 for f in returned)
        if odd:
            self._bump("filter_facts_not_triples", odd)
            self.search_failures.add("filter_facts_not_triples", reply, question=question)
        return [candidates[i] for i in rk.match_facts(returned, facts)][
            : self.retrieval.linking_top_k
        ]

    def rank(self, question: str) -> rk.Ranking:
        """Passage scores for ``question`` under the configured variant."""
        g, r = self.graph, self.retrieval
        assert g is not None
        if self.variant == "v1":
            entities = self.query_entities(question)
            return rk.rank_v1(
                g,
                self.vectors["phrase_vectors"],
                entities,
                self._embed(entities),
                r.damping,
                r.passage_score,
                r.specificity,
                self.ppr,
            )
        query = self._embed([question])[0]
        dense = self.vectors["passage_vectors"] @ query
        if not g.facts:
            return rk.Ranking(min_max(dense), "dense")
        fact_scores = min_max(self.vectors["fact_vectors"] @ query)
        kept = self.recognise(question, rk.top_facts(fact_scores, r.linking_top_k))
        self._bump("facts_kept", len(kept))
        return rk.rank_v2(
            g,
            kept,
            fact_scores,
            dense,
            r.linking_top_k,
            r.passage_node_weight,
            r.damping,
            self.ppr,
        )

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """The ``top_k`` best passages that fit ``budget_tokens``, best first."""
        self._bump("queries")
        if self.graph is None or not self.text_units:
            self._bump("empty_memory")
            return []
        start = time.perf_counter()
        ranking = self.rank(question)
        self._bump("ranking_seconds", time.perf_counter() - start)
        self._bump(f"mode_{ranking.mode}")
        self._bump("seeds", ranking.seeds)
        self._bump("ppr_iterations", ranking.iterations)
        if not ranking.converged:
            self._bump("ppr_not_converged")
        order = rk.best_first(ranking.scores, self.variant)[: self.top_k]
        items = [
            RetrievedItem(
                text=self.text_units[p].text,
                score=float(ranking.scores[p]),
                node_id=self.text_units[p].id,
                level=0,
                source_unit_ids=self.text_units[p].units,
            )
            for p in order
        ]
        kept = fill_budget(items, budget_tokens, self.tokenizer)
        self._bump("passages_returned", len(kept))
        self._bump("passages_over_budget", len(items) - len(kept))
        if ranking.linked:
            self.search_record["last_linked"] = [list(x) for x in ranking.linked]
        return kept

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Build record (calls, extraction failure rate, graph size) and search counters."""
        queries = self.search_record.get("queries", 0)
        search = {
            **self.search_record,
            "mean_seeds": self.search_record.get("seeds", 0) / queries if queries else None,
            "failures": self.search_failures.to_json(),
        }
        return {**super().stats(), "hipporag": {"build": self.build_record, "search": search}}

    def state(self) -> dict[str, Any]:
        return {
            "text_units": [tu.to_json() for tu in self.text_units],
            "records": [r.to_json() for r in self.records],
            "graph": self.graph.to_json() if self.graph is not None else None,
            "build": self.build_record,
            **self.vectors,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.text_units = [TextUnit.from_json(d) for d in state["text_units"]]
        self.records = [PassageTriples.from_json(d) for d in state["records"]]
        self.graph = PhraseGraph.from_json(state["graph"]) if state["graph"] else None
        self.build_record = dict(state["build"])
        self.vectors = {k: np.asarray(state[k]) for k in VECTORS if k in state}
