"""The CPU-bound steps other than RAPTOR's in the run's process pool (memsys/services/cpu.py):
each gives the same result in a worker process as in the episode's thread, on seeded inputs."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from graphrag_fakes import TEXTS, StepLLM, responder, unit
from memharness.memsys.graphrag import GraphRAG
from memharness.memsys.graphrag.communities import hierarchical_leiden
from memharness.memsys.hipporag.graph import PhraseGraph, add_synonym_edges
from memharness.memsys.services.cpu import cpu_pool, run_cpu
from memharness.memsys.testing.doubles import HashingEmbedder, WordTokenizer


def seeded_graph(groups: int = 8, size: int = 25, seed: int = 4) -> list[tuple[int, int, float]]:
    """Weighted edges of ``groups`` dense groups of ``size`` entities, sparsely linked."""
    rng = random.Random(seed)
    n = groups * size
    return [
        (u, v, 1.0 + rng.random())
        for u in range(n)
        for v in range(u + 1, n)
        if rng.random() < (0.3 if u // size == v // size else 0.004)
    ]


def _leiden_result(communities, info) -> tuple[list, dict]:
    return [dataclasses.astuple(c) for c in communities], {
        k: v for k, v in info.items() if k != "seconds"
    }


@pytest.mark.parametrize("backend", ["igraph", "leidenalg"])
def test_hierarchical_leiden_in_a_worker_equals_the_in_thread_hierarchy(backend):
    args = (210, seeded_graph(), 10, 0xDEADBEEF, True, 1.0, 1, backend, 0.001)
    here = _leiden_result(*hierarchical_leiden(*args))
    with cpu_pool(2) as pool:
        there = _leiden_result(*run_cpu(hierarchical_leiden, *args))
    assert pool.steps == 1 and there == here
    assert here[1]["levels"] >= 2 and here[1]["communities"] > 8  # a real hierarchy was built


def _graphrag_communities() -> list[tuple[int, list[str]]]:
    memory = GraphRAG(
        llm=StepLLM(responder(None)),
        embedder=HashingEmbedder(dim=128),
        tokenizer=WordTokenizer(),
        communities={"max_cluster_size": 3, "use_lcc": False},
    )
    memory.insert([unit(t, i, source=f"d{i // 3}") for i, t in enumerate(TEXTS)])
    memory.ensure_built()
    store = memory.store
    return [
        (store.levels[v], sorted(store.ids[c] for c in store.children[v]))
        for v in range(len(store))
        if store.levels[v] > 0
    ]


def test_graphrag_sends_its_leiden_step_to_the_open_pool_with_the_same_communities():
    here = _graphrag_communities()
    with cpu_pool(2) as pool:
        there = _graphrag_communities()
    assert pool.steps == 1 and there == here and len({level for level, _ in here}) >= 2


def phrase_vectors(n: int = 2600, topics: int = 300, seed: int = 9) -> np.ndarray:
    """Seeded unit vectors in tight topics (cosines within a topic mostly above 0.8)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((topics, 64))[rng.integers(0, topics, n)]
    rows = rows + 0.25 * rng.standard_normal((n, 64))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("directed_keys", [False, True])
def test_hipporag_synonym_edges_split_over_a_pool_equal_the_one_pass_edges(directed_keys):
    vectors = phrase_vectors()
    phrases = [f"phrase {i}" if i % 50 else "ab" for i in range(len(vectors))]  # some ineligible

    def edges() -> list:
        g = PhraseGraph(phrases, [], [], [])
        g.edges[(0, 1)], g.kinds[(0, 1)] = 2.0, "triple"  # a triple edge a synonym may replace
        add_synonym_edges(g, vectors, 0.8, 5, directed_keys=directed_keys)
        return [(k, v, g.kinds[k]) for k, v in g.edges.items()]  # in insertion order

    here = edges()
    with cpu_pool(2) as pool:
        there = edges()
    assert pool.steps == 2  # 2,600 rows = 3 blocks: two parts, one per worker
    assert there == here and len(here) > 2 * len(vectors)  # most phrases have synonyms
