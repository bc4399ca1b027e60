"""Structural-memory benchmark with stub backends (no model, no network).

    python -m bench structmem        (or `make bench`)

Reports, each measured in one run:
- extraction requests per chunk for each structure (expected: chunks 0, triples / atomic facts /
  summaries 1, mixed 3), and whether each insert went out as one concurrent batch;
- single-step top-K latency over 100,000 units for the dense scorer (the core's collapsed
  traversal: one float32 matrix-vector product; MemTree's target of < 20 ms per query applies),
  BM25 (rank-bm25 Okapi scoring only the units that share a query token) and the hybrid fusion,
  plus the BM25 index build time (rebuilt after inserts);
- LLM requests per question for reranking (expected ceil(K / 10)) and iterative retrieval
  (expected N - 1 with ``iterative.final: best_score``, N with ``final_query``).
Wall-clock figures measured on a shared machine are provisional.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.structmem import StructuralMemory
from memharness.memsys.structmem.scoring import BM25Index, Retriever
from memharness.memsys.testing.doubles import ScriptedChat, SeededEmbedder, WordTokenizer
from memharness.memsys.types import Unit, content_id

DIM, VOCAB, UNITS, K = 384, 30_000, 100_000, 100
PROMPTS = {
    "triples": "T {text}",
    "atomic_facts": "A {text}",
    "summaries": "S {text}",
    "rerank": "R {question} {output_format} {documents}",
    "thought": "H {context} {question}",
}
REPLIES = {
    "T": "1. a; b; c\n2. d; e; f",
    "A": "1. a fact. | a | fact",
    "S": "a summary",
    "R": '{"ratings": [{"document": 1, "relevance_score": 5}]}',
    "H": "a thought. So the answer is: x.",
}
TARGET_DENSE_MS = 20.0


def _memory(**params: Any) -> tuple[StructuralMemory, ScriptedChat]:
    """A memory on a stub LLM answering each prompt by its first letter (REPLIES), counting calls."""
    chat = ScriptedChat(
        reply=lambda r: REPLIES[r.messages[-1][1][0]], model_id="stub-chat", log=False
    )
    memory = StructuralMemory(
        llm=LLM(chat, max_in_flight=8, progress=False),
        embedder=Embedder(SeededEmbedder(DIM, model_id="stub-embed")),
        tokenizer=WordTokenizer(),
        prompts=PROMPTS,
        rerank={"formats": {"json": "json"}},
        **params,
    )
    return memory, chat


def _units(n: int) -> list[Unit]:
    return [
        Unit(
            id=content_id("b", i, prefix="u-"),
            text=f"chunk {i} text",
            source_id=f"d{i % 7}",
            position=i,
        )
        for i in range(n)
    ]


def extraction_calls(chunks: int = 40) -> dict[str, Any]:
    """Extraction requests per chunk for each structure, and concurrent batches per insert."""
    out = {}
    for structure, expected in (
        ("chunks", 0),
        ("triples", 1),
        ("atomic_facts", 1),
        ("summaries", 1),
        ("mixed", 3),
    ):
        memory, chat = _memory(structure=structure)
        memory.insert(_units(chunks))
        out[structure] = {
            "requests_per_chunk": chat.calls / chunks,
            "expected": expected,
            "ok": chat.calls == expected * chunks,
        }
        memory.llm.close()
    return out


def _synthetic_corpus(n: int, seed: int = 0) -> list[str]:
    """Texts of 8-30 words drawn from a Zipf-like vocabulary (so common words hit many units)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    p /= p.sum()
    lengths = rng.integers(8, 31, size=n)
    words = rng.choice(VOCAB, size=int(lengths.sum()), p=p)
    out, at = [], 0
    for length in lengths:
        out.append(" ".join(f"w{w}" for w in words[at : at + length]))
        at += length
    return out


def topk_latency(n: int = UNITS, queries: int = 30, k: int = K) -> dict[str, Any]:
    """Median / p95 latency of dense, BM25 and hybrid top-k over ``n`` units, and the BM25 build time."""
    texts = _synthetic_corpus(n)
    vectors = np.random.default_rng(2).standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = HierarchyStore()
    store.add_nodes(
        [f"n{i}" for i in range(n)], texts, vectors, level=0, units=[(f"u{i}",) for i in range(n)]
    )
    queries_text = [" ".join(q.split()[:8]) for q in _synthetic_corpus(queries, seed=3)]
    start = time.perf_counter()
    index = BM25Index(texts)
    out: dict[str, Any] = {
        "units": n,
        "k": k,
        "bm25_build_s": time.perf_counter() - start,
        "bm25_candidates_mean": float(np.mean([index.scores(q)[0].size for q in queries_text])),
    }
    for scorer in ("dense", "bm25", "hybrid"):
        retriever = Retriever(store, SeededEmbedder(DIM, model_id="query-embed"), scorer)
        retriever._bm25 = index  # built once above (the memory rebuilds it only after inserts)
        ms = []
        for query in queries_text:
            t = time.perf_counter()
            ranked = retriever.rank(query, k)
            ms.append(1000 * (time.perf_counter() - t))
        out[f"{scorer}_ms_p50"], out[f"{scorer}_ms_p95"] = (
            float(np.median(ms)),
            float(np.percentile(ms, 95)),
        )
        out[f"{scorer}_returned"] = len(ranked)
    return out


def llm_calls_per_question(questions: int = 5) -> dict[str, Any]:
    """Retrieval-stage LLM requests per question for rerank (K = 100, R = 10) and iterative (N = 4)."""
    out = {}
    for name, params, expected in (
        ("rerank", {"retrieval": "rerank", "top_k": K, "top_r": 10}, math.ceil(K / 10)),
        ("iterative_best_score", {"retrieval": "iterative", "turns": 4, "top_t": 50}, 3),
        (
            "iterative_final_query",
            {
                "retrieval": "iterative",
                "turns": 4,
                "top_t": 50,
                "iterative": {"final": "final_query"},
            },
            4,
        ),
    ):
        memory, chat = _memory(structure="chunks", **params)
        memory.insert(_units(300))
        before = chat.calls
        for i in range(questions):
            memory.retrieve(f"question {i}", 10**6)
        per_q = (chat.calls - before) / questions
        out[name] = {
            "llm_requests_per_question": per_q,
            "expected": expected,
            "ok": per_q == expected,
        }
        memory.llm.close()
    return out


def main() -> dict[str, Any]:
    """Run the structural-memory benchmarks, print a summary and return the figures."""
    extraction = extraction_calls()
    latency = topk_latency()
    calls = llm_calls_per_question()
    print(
        "structmem extraction requests per chunk: "
        + ", ".join(
            f"{s} {r['requests_per_chunk']:g}{'' if r['ok'] else ' (MISS: expected ' + str(r['expected']) + ')'}"
            for s, r in extraction.items()
        )
    )
    miss = "" if latency["dense_ms_p50"] < TARGET_DENSE_MS else "  MISS"
    print(
        f"structmem top-{latency['k']} over {latency['units']:,} units: dense p50 {latency['dense_ms_p50']:.1f} ms / "
        f"p95 {latency['dense_ms_p95']:.1f} ms (target < {TARGET_DENSE_MS:.0f} ms){miss}; "
        f"BM25 p50 {latency['bm25_ms_p50']:.1f} ms / p95 {latency['bm25_ms_p95']:.1f} ms "
        f"({latency['bm25_candidates_mean']:,.0f} candidate units per query, "
        f"index build {latency['bm25_build_s']:.1f} s); "
        f"hybrid p50 {latency['hybrid_ms_p50']:.1f} ms"
    )
    print(
        "structmem LLM requests per question: "
        + ", ".join(
            f"{n} {r['llm_requests_per_question']:g}{'' if r['ok'] else ' (MISS: expected ' + str(r['expected']) + ')'}"
            for n, r in calls.items()
        )
    )
    return {
        "structmem_extraction": extraction,
        "structmem_topk": latency,
        "structmem_llm_calls": calls,
    }


if __name__ == "__main__":
    main()
