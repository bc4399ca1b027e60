"""Structural memory (Zeng et al., 2024, "On the Structural Memory of LLM Agents") as one flat memory.

A flat memory on the hierarchy core: the store holds only level 0 (the extracted units, no
coarsening), each unit with the dataset unit it came from as provenance (``units=``) and its
kind, chunk id and document id in ``meta``. Composition in config:

- ``structure`` (α): chunks | triples | atomic_facts | summaries | mixed (``extraction.py``);
- ``retrieval`` (τ): single | rerank | iterative (``retrieval.py``) over a single-step
  ``scorer``: dense | bm25 | hybrid (``scoring.py``);
- ``answer_with``: memory (Memory-Only: the retrieved units) | documents (Memory-Doc: the
  units' source documents, de-duplicated in first-retrieved order; the released code
  de-duplicates with ``set()`` and so loses that order). A document is the passage the unit was
  extracted from, the whole dataset unit, or everything of the unit's source (``documents``; the
  default ``auto`` takes the passage when the memory holds one source document and the source
  otherwise: ``documents.py``). Documents fill the budget in order; the first that does not fit is
  cut to the tokens left (the paper's 4k input window) and counted (``documents_truncated``).

Extraction is online (each inserted batch is extracted at once, one concurrent batch of
requests), so the same memory serves offline and online datasets; the BM25 index is rebuilt
lazily after inserts. Extraction requests depend only on the chunk, the kind, the prompt and the
model, so the call cache alone shares them across retrieval settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

from memharness.memsys.base import fill_budget
from memharness.memsys.hierarchy.memory import HierarchicalMemory, retrieval_record
from memharness.memsys.settings import NonEmpty, Range, group
from memharness.memsys.structmem import extraction as extraction_steps
from memharness.memsys.structmem import fit
from memharness.memsys.structmem import retrieval as retrieval_steps
from memharness.memsys.structmem.documents import DocumentMap, resolve
from memharness.memsys.structmem.scoring import Retriever
from memharness.memsys.structmem.settings import BM25, Extraction, Fusion, Iterative, Rerank
from memharness.memsys.types import RetrievedItem, Unit, content_id

_PREFIX = {"chunks": "c-", "triples": "t-", "atomic_facts": "a-", "summaries": "s-"}


class StructuralMemory(HierarchicalMemory):
    """Chunks / triples / atomic facts / summaries / mixed memory with single, rerank or iterative
    retrieval; hyperparameters are documented in ``conf/memory/structmem.yaml``."""

    online = True
    name = "structmem"
    traversals = ("collapsed",)

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        structure: Literal["chunks", "triples", "atomic_facts", "summaries", "mixed"] = "chunks",
        retrieval: Literal["single", "rerank", "iterative"] = "single",
        scorer: Literal["dense", "bm25", "hybrid"] = "dense",
        answer_with: Literal["memory", "documents"] = "memory",
        documents: Literal["auto", "passage", "chunk", "source"] = "auto",
        top_k: int = 100,
        top_r: Annotated[int, Range(1)] = 10,
        top_t: Annotated[int, Range(1)] = 50,
        turns: Annotated[int, Range(1)] = 4,
        temperature: Annotated[float, Range(0, 2)] = 0.2,
        prompts: dict[str, Annotated[str, NonEmpty()]] | None = None,
        extraction: Extraction | None = None,
        rerank: Rerank | None = None,
        iterative: Iterative | None = None,
        bm25: BM25 | None = None,
        fusion: Fusion | None = None,
        **core: Any,
    ) -> None:
        # The groups are sections of conf/memory/structmem.yaml (structmem/settings.py); K, R, T, N
        # stay top-level keys, as the experiments sweep them.
        super().__init__(llm=llm, embedder=embedder, tokenizer=tokenizer, top_k=top_k, **core)
        self.kinds = extraction_steps.kinds_of(structure)
        self.structure, self.retrieval, self.scorer = structure, retrieval, scorer
        self.answer_with, self.documents = answer_with, documents
        self.top_r, self.top_t, self.turns = int(top_r), int(top_t), int(turns)
        self.temperature = float(temperature)
        self.prompts = dict(prompts or {})
        given = group(Extraction, extraction)  # null caps: the constructor's per-kind defaults
        self.extraction = replace(
            given, max_tokens=dict(given.max_tokens or extraction_steps.DEFAULT_CAPS)
        )
        given_rerank = group(Rerank, rerank)
        self.rerank = replace(given_rerank, formats=dict(given_rerank.formats or {}))
        self.iterative, self.bm25 = group(Iterative, iterative), group(BM25, bm25)
        self.fusion = group(Fusion, fusion)
        self._seen: set[str] | None = (
            None  # stored unit texts (deduplicate), rebuilt from the store
        )
        for key, message in self.check_settings(self.hyperparameters()):
            raise ValueError(f"memory.{key}: {message}")
        self.retriever = Retriever(
            self.store,
            embedder,
            scorer,
            bm25=self.bm25,
            fusion=self.fusion,
            threshold=self.retrieve_threshold,
        )
        self.extracted = extraction_steps.ExtractionCounts()
        self.docs = DocumentMap()  # dataset units and source chunks, for Memory-Doc
        self.counts = {
            "questions": 0,
            "llm_requests": 0,
            "rerank_requests": 0,
            "rerank_failed": 0,
            "rerank_unparsed": 0,
            "thought_requests": 0,
            "thought_failed": 0,
            "thought_empty": 0,
            "units_ranked": 0,
            "items_returned": 0,
            "documents_truncated": 0,
        }
        self.traces: list[dict[str, Any]] = []

    @classmethod
    def check_settings(cls, settings: dict[str, Any]):
        """Cross-field rules: the prompts and output caps the chosen structure and retrieval need."""
        return fit.settings_problems(settings)

    @classmethod
    def prompt_needs(cls, settings: dict[str, Any], dataset: dict[str, Any], count: Any):
        """The longest prompt of each LLM call kind (``fit.py``), checked against a fixed context."""
        return fit.prompt_needs(settings, dataset, count)

    @property
    def sampling(self) -> dict[str, Any]:
        """Temperature and seed of every LLM call here: a sampled call carries the run's seed, so it is
        reproducible and cached (``ChatRequest.cacheable``); at temperature 0 no seed is sent."""
        return {
            "temperature": self.temperature,
            "seed": self.seed if self.temperature > 0 else None,
        }

    # ------------------------------------------------------------------ extraction (α)
    def add(self, units: Sequence[Unit]) -> None:
        """Extract every kind of the structure from the new units (one concurrent batch) and store them."""
        for u in units:
            self.docs.doc_texts[u.id] = (u.source_id, u.text)
        chunks = extraction_steps.source_chunks(units, self.tokenizer, self.extraction.chunk_tokens)
        for c in chunks:
            self.docs.passages[c.id] = (c.unit_id, c.text)
        failed, malformed = (
            sum(self.extracted.failed.values()),
            sum(self.extracted.malformed_lines.values()),
        )
        memory_units = extraction_steps.extract(
            self.llm,
            chunks,
            self.kinds,
            self.prompts,
            self.extraction.max_tokens,
            self.extracted,
            self.sampling,
        )
        # failed extraction calls and unreadable lines leave the memory short of what the method extracts
        self.degrade("extraction_failed", sum(self.extracted.failed.values()) - failed)
        self.degrade(
            "extraction_unparsed", sum(self.extracted.malformed_lines.values()) - malformed
        )
        if (
            self.extraction.deduplicate
        ):  # the paper's set union: a text already stored is not stored again
            seen = self._seen if self._seen is not None else set(self.store.texts)
            kept = [m for m in memory_units if not (m.text in seen or seen.add(m.text))]
            self.extracted.duplicates_dropped += len(memory_units) - len(kept)
            memory_units, self._seen = kept, seen
        if not memory_units:
            return
        vectors = self.embedder.embed([m.text for m in memory_units])
        for m, vector in zip(memory_units, vectors, strict=False):
            node_id = content_id(
                "structmem", m.kind, m.chunk.id, m.index, m.text, prefix=_PREFIX[m.kind]
            )
            meta = {
                "kind": m.kind,
                "chunk": m.chunk.id,
                "doc": m.chunk.doc_id,
                **({"keys": list(m.keys)} if m.keys else {}),
            }
            self.store.add_node(
                node_id, m.text, vector, level=0, units=(m.chunk.unit_id,), meta=meta
            )

    # ------------------------------------------------------------------ retrieval (τ)
    def rank_units(self, question: str) -> tuple[list[tuple[int, float]], dict[str, Any]]:
        """The retrieved units (node, score) in answer order, and a trace of the LLM steps."""
        texts = self.store.texts
        if self.retrieval == "single":
            return self.retriever.rank(question, self.top_k), {"requests": 0}
        if self.retrieval == "rerank":
            candidates = self.retriever.rank(question, self.top_k)
            res = retrieval_steps.rerank(
                self.llm,
                question,
                candidates,
                texts,
                top_r=self.top_r,
                prompt=self.prompts["rerank"],
                output_format=self.rerank.formats[self.rerank.format],
                fmt=self.rerank.format,
                batch_size=self.rerank.batch,
                max_tokens=self.rerank.max_tokens,
                sampling=self.sampling,
            )
            self.counts.update(
                rerank_requests=self.counts["rerank_requests"] + res.requests,
                rerank_failed=self.counts["rerank_failed"] + res.failed,
                rerank_unparsed=self.counts["rerank_unparsed"] + res.unparsed,
            )
            return res.ranked, {
                "requests": res.requests,
                "candidates": len(candidates),
                "failed": res.failed,
                "unparsed": res.unparsed,
                "scores": res.scores,
            }
        res = retrieval_steps.iterative(
            self.retriever.rank,
            self.llm,
            question,
            texts,
            turns=self.turns,
            top_t=self.top_t,
            top_k=self.top_k,
            prompt=self.prompts["thought"],
            max_tokens=self.iterative.thought_max_tokens,
            final=self.iterative.final,
            budget_tokens=self.iterative.thought_budget_tokens,
            tokenizer=self.tokenizer,
            sampling=self.sampling,
        )
        self.counts.update(
            thought_requests=self.counts["thought_requests"] + res.requests,
            thought_failed=self.counts["thought_failed"] + res.failed,
            thought_empty=self.counts["thought_empty"] + res.empty,
        )
        return res.ranked, {
            "requests": res.requests,
            "queries": res.queries,
            "thoughts": res.thoughts,
            "stopped": res.stopped,
        }

    def document_items(
        self, ranked: Sequence[tuple[int, float]], mode: str | None = None
    ) -> list[RetrievedItem]:
        """Memory-Doc: each unit's document (``documents.py``), de-duplicated in first-retrieved
        order, with the score of the first unit that led to it and its dataset units as provenance."""
        mode = mode or resolve(self.documents, self.docs.doc_texts)
        rows = [(v, s, self.store.units[v][0], self.store.meta[v].get("chunk")) for v, s in ranked]
        return self.docs.items(mode, rows, self.tokenizer)

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Rank units, map them to documents for Memory-Doc, fill the budget, record the trace."""
        if self.store.is_empty():
            return []
        ranked, trace = self.rank_units(question)
        cut, mode = 0, resolve(self.documents, self.docs.doc_texts)
        if self.answer_with == "memory":
            items = [self.store.item(v, s, self.tokenizer) for v, s in ranked]
            kept = fill_budget(items, budget_tokens, self.tokenizer, self.stop_at_first_overflow)
        else:
            items = self.document_items(ranked, mode)
            kept, cut = self.docs.fill(items, budget_tokens, self.tokenizer)
        kept_ids = {i.node_id for i in kept}
        shown = [
            (v, s)
            for v, s in ranked
            if (self.store.ids[v] if self.answer_with == "memory" else self._doc_node_id(v, mode))
            in kept_ids
        ]
        self.retrievals.append(
            retrieval_record(
                question,
                [self.store.ids[v] for v, _ in shown],
                [v for v, _ in shown],
                [s for _, s in shown],
            )
        )
        self.counts.update(
            questions=self.counts["questions"] + 1,
            llm_requests=self.counts["llm_requests"] + trace["requests"],
            units_ranked=self.counts["units_ranked"] + len(ranked),
            items_returned=self.counts["items_returned"] + len(kept),
            documents_truncated=self.counts["documents_truncated"] + cut,
        )
        self.traces.append(
            {
                "question": question,
                "units": len(ranked),
                "items": len(kept),
                **(
                    {"documents": mode, "documents_truncated": cut}
                    if self.answer_with == "documents"
                    else {}
                ),
                **trace,
            }
        )
        return kept

    def drop_units(self, unit_ids: set[str]) -> str:
        """Forget: every extracted unit (chunk, triple, fact, summary) of a forgotten dataset unit
        goes with it, and so do its document texts and passages (Memory-Doc); no LLM call."""
        self.prune_store(unit_ids)
        self.retriever.store, self.retriever._bm25, self._seen = self.store, None, None
        docs = self.docs
        docs.doc_texts = {u: d for u, d in docs.doc_texts.items() if u not in unit_ids}
        docs.passages = {c: p for c, p in docs.passages.items() if p[0] not in unit_ids}
        return "drop"

    def _doc_node_id(self, v: int, mode: str) -> str:
        chunk = self.store.meta[v].get("chunk")
        return f"doc:{self.docs.key(mode, self.store.units[v][0], chunk)}"

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Core diagnostics plus extraction counts (per kind) and retrieval LLM requests per question."""
        q = self.counts["questions"]
        kinds = {k: sum(1 for m in self.store.meta if m.get("kind") == k) for k in self.kinds}
        per_question = {
            "llm_requests_per_question": self.counts["llm_requests"] / q if q else 0.0,
            "units_ranked_per_question": self.counts["units_ranked"] / q if q else 0.0,
        }
        config = {
            k: getattr(self, k)
            for k in (
                "structure",
                "retrieval",
                "scorer",
                "answer_with",
                "documents",
                "top_k",
                "top_r",
                "top_t",
                "turns",
                "temperature",
            )
        }
        config.update(  # grouped settings under their YAML key paths
            {
                "iterative.final": self.iterative.final,
                "extraction.chunk_tokens": self.extraction.chunk_tokens,
                "extraction.deduplicate": self.extraction.deduplicate,
            }
        )
        return {
            **super().stats(),
            "config": config,
            "extraction": self.extracted.to_json(),
            "units_by_kind": kinds,
            "retrieval_counts": dict(self.counts),
            **per_question,
            "bm25_builds": self.retriever.bm25_builds,
        }

    def state(self) -> dict[str, Any]:
        return {
            "extraction": self.extracted.to_json(),
            "counts": dict(self.counts),
            "traces": self.traces,
            **self.docs.to_json(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.extracted = extraction_steps.ExtractionCounts.from_json(state.get("extraction", {}))
        self.counts.update(state.get("counts", {}))
        self.traces = list(state.get("traces", []))
        self.docs.load(state)
        self.retriever.store, self._seen = self.store, None
