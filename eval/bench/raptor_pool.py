"""RAPTOR's clustering in the run's process pool vs in the episodes' threads (no backend needed).

    memharness bench raptor_pool        (or `make bench BENCH=raptor_pool`)

Input: ``episodes`` haystacks of LongMemEval-S size (1,121 chunks each, the issue's measured
count), as seeded, topic-structured chunk vectors (384 dimensions, a haystack's ~50 sessions as
topics: a topic centre plus seeded noise, unit length) and 100 tokens a chunk. The episodes run
in threads at once, as a run schedules them; each clusters its first layer (``cluster_layer``:
global and local UMAP + BIC-selected mixtures, re-clustering over the token limit).

Reports the wall time with ``run.cpu_workers=1`` (every clustering in its episode's thread, holding
the interpreter) and with the pool at the machine's cores, their ratio (target >= 1.6 on 2 cores),
whether the clusters are identical, and the load average before and after (the machine may be
shared). Numba's compilation is paid before timing, in this process and in every worker.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from memharness.eval.bench import print_figures
from memharness.memsys.raptor.clustering import ClusterSettings, cluster_layer
from memharness.memsys.services.cpu import cpu_pool, machine_cores, run_cpu

CHUNKS, DIM, TOPICS, TOKENS = 1121, 384, 50, 100  # LongMemEval-S haystack: 1,121 chunks (issue 46)
TARGETS = {"speedup": ">= 1.6", "identical_clusters": "== 1"}


def haystack_vectors(seed: int, chunks: int = CHUNKS) -> np.ndarray:
    """Seeded unit vectors: ``chunks`` rows spread over ``TOPICS`` topic centres plus noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((TOPICS, DIM))
    rows = centres[rng.integers(0, TOPICS, chunks)] + 0.8 * rng.standard_normal((chunks, DIM))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _cluster(vectors: np.ndarray, seed: int) -> tuple[list[list[int]], Any]:
    return cluster_layer(vectors, [TOKENS] * len(vectors), ClusterSettings(), seed, "L1")


def cluster_episodes(haystacks: list[np.ndarray], pooled: bool) -> tuple[float, list[Any]]:
    """Wall seconds and clusters of every haystack clustered by its own thread, all at once."""

    def one(i: int) -> list[list[int]]:
        args = (haystacks[i], i)
        return (run_cpu(_cluster, *args) if pooled else _cluster(*args))[0]

    start = time.perf_counter()
    with ThreadPoolExecutor(len(haystacks)) as threads:
        clusters = list(threads.map(one, range(len(haystacks))))
    return time.perf_counter() - start, clusters


def main(episodes: int | None = None, chunks: int = CHUNKS) -> dict[str, Any]:
    """Time the clustering of ``episodes`` haystacks (default: 2 per core) both ways; print, return."""
    cores = machine_cores()
    episodes = episodes or 2 * cores
    haystacks = [haystack_vectors(seed, chunks) for seed in range(episodes)]
    warm = [haystack_vectors(1000 + i, 60) for i in range(cores)]
    load_before = os.getloadavg()[0]
    cluster_episodes(warm[:1], pooled=False)  # numba compiles here, outside the timing
    thread_s, in_thread = cluster_episodes(haystacks, pooled=False)
    with cpu_pool(cores):
        cluster_episodes(warm, pooled=True)  # every worker imports and compiles before timing
        pool_s, pooled = cluster_episodes(haystacks, pooled=True)
    figures = {
        "cores": cores,
        "episodes": episodes,
        "chunks_per_episode": chunks,
        "clusters_per_episode": round(float(np.mean([len(c) for c in in_thread])), 1),
        "in_thread_s": thread_s,
        "pool_s": pool_s,
        "speedup": thread_s / pool_s,
        "identical_clusters": int(in_thread == pooled),
        "load_avg_1m_before": load_before,
        "load_avg_1m_after": os.getloadavg()[0],
    }
    print(
        f"RAPTOR clustering of {episodes} LongMemEval-S-sized haystacks ({chunks} chunks each), "
        f"episodes in threads: run.cpu_workers=1 vs a pool of {cores}"
    )
    print_figures(figures, TARGETS)
    return figures


if __name__ == "__main__":
    main()
