"""Structural memory retrieval: BM25 against a hand computation, reciprocal-rank fusion, dense =
the core's collapsed traversal, rerank batches of 10 keeping the best R, iterative best scores and N."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from memharness.memsys.hierarchy import traverse
from memharness.memsys.structmem.retrieval import (
    iterative,
    parse_rerank_json,
    parse_rerank_lines,
    rerank,
)
from memharness.memsys.structmem.scoring import BM25Index, bm25_tokens, reciprocal_rank_fusion
from structmem_fakes import FORMATS, PROMPTS, FakeLLM, by_kind, make_memory, unit

CORPUS = [
    "Apple banana apple.",
    "banana, CHERRY",
    "cherry date elderberry fig",
    "grape",
    "honeydew kiwi",
    "lemon lime mango",
]


def test_bm25_tokenisation_is_lowercase_word_runs_without_stop_words():
    assert bm25_tokens("What is the U.S. GDP, in 2023?") == ["u", "s", "gdp", "2023"]
    assert bm25_tokens("What is the GDP?", stopwords=False) == ["what", "is", "the", "gdp"]


def test_bm25_ranks_a_hand_made_corpus_as_computed_by_hand():
    # N = 6 units, lengths 3 2 4 1 2 3 -> avgdl = 15 / 6 = 2.5; k1 = 1.5, b = 0.75.
    # idf(apple) = ln((6 - 1 + 0.5) / (1 + 0.5)) (one unit); idf(cherry) = ln((6 - 2 + 0.5) / (2 + 0.5)) (two units)
    idf_apple, idf_cherry = math.log(5.5 / 1.5), math.log(4.5 / 2.5)

    def term(idf, tf, dl):
        return idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / 2.5))

    expected = [
        (0, term(idf_apple, 2, 3)),  # "apple" twice in a 3-token unit
        (1, term(idf_cherry, 1, 2)),  # "cherry" once in 2 tokens
        (2, term(idf_cherry, 1, 4)),
    ]  # "cherry" once in 4 tokens
    ranked = BM25Index(CORPUS).top("What about the apple and the cherry?", k=10)
    assert [v for v, _ in ranked] == [0, 1, 2]  # units sharing no token are not returned
    assert np.allclose([s for _, s in ranked], [s for _, s in expected], atol=1e-9)
    assert BM25Index(CORPUS).top("apple cherry", k=2) == ranked[:2]
    assert BM25Index(CORPUS).top("zucchini", k=3) == []


def test_bm25_scores_equal_rank_bm25s_own_get_scores():
    from rank_bm25 import BM25Okapi

    rng = np.random.default_rng(0)
    texts = [
        " ".join(f"w{w}" for w in rng.zipf(1.6, size=rng.integers(3, 15)) % 40) for _ in range(300)
    ]
    index = BM25Index(texts)
    reference = BM25Okapi([bm25_tokens(t) for t in texts])
    assert any(
        idx.size > 150 for idx, _ in index.postings.values()
    )  # words in > half the units: floored idf
    for query in (
        "w1 w2 w2 w7",
        "w0 w39",
        "w13",
    ):  # frequent words (idf floor) and a repeated token
        cand, scores = index.scores(query)
        full = reference.get_scores(bm25_tokens(query))
        assert np.allclose(scores, full[cand], atol=1e-12)
        assert set(np.flatnonzero(full != 0)) <= set(cand.tolist())
        top = index.top(query, 10)
        assert [v for v, _ in top] == sorted(cand.tolist(), key=lambda i: (-full[i], i))[:10]


def test_bm25_over_no_token_at_all_returns_nothing():
    assert BM25Index(["...", "!!"]).top("anything", 5) == []


def test_reciprocal_rank_fusion_by_hand():
    fused = reciprocal_rank_fusion(
        [[(7, 0.9), (3, 0.8), (5, 0.1)], [(3, 12.0), (9, 4.0)]], rrf_k=60, k=3
    )
    assert fused == [
        (3, 1 / 62 + 1 / 61),
        (7, 1 / 61),
        (9, 1 / 62),
    ]  # node 5 (1 / 63) is cut by k = 3
    assert reciprocal_rank_fusion([[(2, 1.0)], [(1, 1.0)]], rrf_k=60, k=5) == [
        (1, 1 / 61),
        (2, 1 / 61),
    ]  # ties by index


def _memory_over(texts, **params):
    memory = make_memory(FakeLLM(by_kind()), structure="chunks", **params)
    memory.insert([unit(t, i, f"doc-{i}") for i, t in enumerate(texts)])
    return memory


def test_dense_single_step_is_the_cores_collapsed_traversal():
    memory = _memory_over(CORPUS, scorer="dense", top_k=4)
    question = "cherry and apple"
    expected = traverse.collapsed(memory.store, memory.embedder.embed([question])[0], 4)
    assert memory.rank_units(question)[0] == expected


def test_hybrid_fuses_the_dense_and_bm25_rankings():
    memory = _memory_over(CORPUS, scorer="hybrid", top_k=3, fusion={"depth": 6})
    dense = traverse.collapsed(memory.store, memory.embedder.embed(["apple cherry"])[0], 6)
    bm25 = BM25Index(memory.store.texts).top("apple cherry", 6)
    assert memory.rank_units("apple cherry")[0] == reciprocal_rank_fusion([dense, bm25], 60, 3)


def _candidates(n):
    return [(100 + i, 1.0 - i / 100) for i in range(n)]


def test_rerank_sends_batches_of_ten_and_keeps_the_best_r():
    texts = {100 + i: f"passage number {i}" for i in range(23)}
    replies = {  # per batch, keyed by its first passage; invalid entries are unparsed
        "passage number 0": {
            "ratings": [
                {"document": 3, "relevance_score": 9},
                {"document": 1, "relevance_score": 4},
                {"document": 11, "relevance_score": 10},
                {"document": 2, "relevance_score": 11},
            ]
            + [{"document": d, "relevance_score": 2} for d in range(4, 11)]
        },
        "passage number 10": {
            "ratings": [
                {"document": d, "relevance_score": 9 if d == 5 else 1} for d in range(1, 11)
            ]
        },
        "passage number 20": {
            "ratings": [
                {"document": 2, "relevance_score": 10},
                {"document": 1, "relevance_score": 4},
            ]
        },
    }
    llm = FakeLLM(
        lambda p: json.dumps(next(v for k, v in replies.items() if f"Document 1:\n{k}\n" in p))
    )
    res = rerank(
        llm,
        "which passage?",
        _candidates(23),
        texts,
        top_r=5,
        prompt=PROMPTS["rerank"],
        output_format=FORMATS["json"],
        fmt="json",
    )
    assert len(llm.batches) == 1 and res.requests == 3  # one concurrent batch of three requests
    sizes = [
        sum(f"Document {d}:\n" in r.messages[-1][1] for d in range(1, 12)) for r in llm.batches[0]
    ]
    assert sizes == [10, 10, 3] and all(r.json_output for r in llm.batches[0])
    # batch 1: doc 2 (score 11) unscored; batch 3: doc 3 unscored -> 2 unparsed
    assert res.unparsed == 2 and res.failed == 0
    # 10 @ batch 3 doc 2 (node 121); 9 @ node 102 (batch 1 doc 3) and node 114 (batch 2 doc 5): retrieval order
    assert res.ranked == [(121, 10.0), (102, 9.0), (114, 9.0), (100, 4.0), (120, 4.0)]
    assert res.scores[1] is None and res.scores[22] is None


def test_rerank_lines_format_and_unscored_documents_rank_last():
    texts = {100 + i: f"passage {i}" for i in range(4)}
    llm = FakeLLM(
        lambda p: (
            "Doc: 2, Relevance Score: 7\nDoc: 4, Relevance Score: 0\nnoise\nDoc: 1, Relevance Score: 3"
        )
    )
    res = rerank(
        llm,
        "q",
        _candidates(4),
        texts,
        top_r=4,
        prompt=PROMPTS["rerank"],
        output_format=FORMATS["lines"],
        fmt="lines",
    )
    assert not llm.batches[0][0].json_output
    assert res.ranked == [(101, 7.0), (100, 3.0), (102, 0.0), (103, 0.0)] and res.unparsed == 2


def test_rerank_counts_a_failed_call():
    texts = {100 + i: f"passage {i}" for i in range(12)}
    llm = FakeLLM(
        lambda p: (
            None if "passage 10" in p else '{"ratings": [{"document": 1, "relevance_score": 5}]}'
        )
    )
    res = rerank(
        llm,
        "q",
        _candidates(12),
        texts,
        top_r=3,
        prompt=PROMPTS["rerank"],
        output_format=FORMATS["json"],
    )
    assert res.failed == 1 and res.unparsed == 9 and res.ranked[0] == (100, 5.0)


def test_rerank_parsers_reject_out_of_range_values():
    assert parse_rerank_json(
        '```json\n{"ratings": [{"document": 1, "relevance_score": 10}, '
        '{"document": 0, "relevance_score": 5}, {"document": true, "relevance_score": 5}]}```',
        3,
    ) == {1: 10.0}
    assert parse_rerank_json("not json", 3) == {} and parse_rerank_json('{"scores": []}', 3) == {}
    assert parse_rerank_lines(
        "Doc: 3, Relevance Score: 10\nDoc: 3, Relevance Score: 2\nDoc: 9, Relevance Score: 5", 3
    ) == {3: 10.0}


class ScriptedRank:
    """rank(query, k) from a script keyed by the query; records the queries and k's."""

    def __init__(self, script):
        self.script, self.calls = script, []

    def __call__(self, query, k):
        self.calls.append((query, k))
        return self.script[query][:k]


def test_iterative_keeps_each_units_best_score_and_stops_after_n():
    rank = ScriptedRank(
        {
            "Q": [(1, 0.5), (2, 0.8), (3, 0.1)],
            "Q T1": [(1, 0.9), (2, 0.3), (4, 0.2)],
            "Q T2": [(5, 0.95), (3, 0.05)],
        }
    )
    thoughts = iter(["T1", "T2", "T3"])
    llm = FakeLLM(lambda p: next(thoughts))
    texts = {v: f"unit {v}" for v in range(1, 6)}
    res = iterative(rank, llm, "Q", texts, turns=3, top_t=3, top_k=4, prompt=PROMPTS["thought"])
    assert rank.calls == [("Q", 3), ("Q T1", 3), ("Q T2", 3)] and res.queries == [
        "Q",
        "Q T1",
        "Q T2",
    ]
    assert res.requests == 2 and res.thoughts == [
        "T1",
        "T2",
    ]  # the N-th thought could not change the result
    assert res.ranked == [(5, 0.95), (1, 0.9), (2, 0.8), (4, 0.2)]  # best score across turns, top-K
    # the second thought sees everything gathered so far, best first, numbered
    second = llm.requests[1].messages[-1][1]
    assert "1. unit 1\n2. unit 2\n3. unit 4\n4. unit 3" in second and "Question: Q" in second


def test_iterative_final_query_retrieves_top_k_with_the_last_thought():
    rank = ScriptedRank(
        {"Q": [(1, 0.5)], "Q T1": [(2, 0.6)], "Q T2": [(3, 0.7), (2, 0.1), (1, 0.0)]}
    )
    thoughts = iter(["T1", "T2"])
    res = iterative(
        rank,
        FakeLLM(lambda p: next(thoughts)),
        "Q",
        {1: "a", 2: "b", 3: "c"},
        turns=2,
        top_t=1,
        top_k=2,
        prompt=PROMPTS["thought"],
        final="final_query",
    )
    assert (
        res.requests == 2 and rank.calls[-1] == ("Q T2", 2) and res.ranked == [(3, 0.7), (2, 0.1)]
    )


def test_iterative_stops_on_a_failed_thought():
    rank = ScriptedRank({"Q": [(1, 0.5)]})
    res = iterative(
        rank,
        FakeLLM(lambda p: None),
        "Q",
        {1: "a"},
        turns=4,
        top_t=2,
        top_k=2,
        prompt=PROMPTS["thought"],
    )
    assert (
        res.stopped == "thought_failed"
        and res.failed == 1
        and len(rank.calls) == 1
        and res.ranked == [(1, 0.5)]
    )
    with pytest.raises(ValueError, match="memory.turns"):
        iterative(
            rank,
            FakeLLM(lambda p: "t"),
            "Q",
            {1: "a"},
            turns=0,
            top_t=2,
            top_k=2,
            prompt=PROMPTS["thought"],
        )


def test_iterative_through_the_memory_counts_requests_per_question():
    memory = _memory_over(CORPUS, retrieval="iterative", turns=3, top_t=2, top_k=3)
    memory.llm.reply = lambda p: "The cherry is a fruit. So the answer is: fruit."
    items = memory.retrieve("cherry", 10_000)
    stats = memory.stats()
    assert (
        stats["retrieval_counts"]["thought_requests"] == 2
        and stats["llm_requests_per_question"] == 2.0
    )
    assert 1 <= len(items) <= 3 and all(i.source_unit_ids for i in items)
    assert memory.traces[-1]["queries"][1].startswith("cherry The cherry is a fruit.")
