"""RAPTOR's clustering in the run's process pool vs in the episodes' threads (no backend needed).

    memharness bench raptor_pool        (or `make bench BENCH=raptor_pool`)

Input: ``episodes`` haystacks of LongMemEval-S size (1,121 chunks each, the issue's measured
count), as seeded, topic-structured chunk vectors (384 dimensions, a haystack's ~50 sessions as
topics: a topic centre plus seeded noise, unit length) and 100 tokens a chunk. The episodes run
in threads at once, as a run schedules them; each clusters its first layer (``cluster_layer``:
global and local UMAP + BIC-selected mixtures, re-clustering over the token limit). With the pool,
each episode's thread spreads its layer's steps over it as RAPTOR does (``steps=run_cpu_many``: the
global reduction, the BIC sweep's fits, the local clusterings side by side).

Reports the wall time with ``run.cpu_workers=1`` (every clustering in its episode's thread, holding
the interpreter) and with the pool at the machine's cores, their ratio (target >= 1.6 on 2 cores),
the same for one haystack alone (one episode: only the split inside the layer can help), whether
the clusters are identical, and the load average before and after (the machine may be shared).
Numba's compilation is paid before timing, in this process and in every worker.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from memharness.eval.bench import print_figures
from memharness.memsys.raptor.clustering import ClusterSettings, cluster_layer
from memharness.memsys.services.cpu import cpu_pool, in_thread, machine_cores, run_cpu_many

CHUNKS, DIM, TOPICS, TOKENS = 1121, 384, 50, 100  # LongMemEval-S haystack: 1,121 chunks (issue 46)
TARGETS = {"speedup": ">= 1.6", "one_haystack_speedup": ">= 1.6", "identical_clusters": "== 1"}


def haystack_vectors(seed: int, chunks: int = CHUNKS) -> np.ndarray:
    """Seeded unit vectors: ``chunks`` rows spread over ``TOPICS`` topic centres plus noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((TOPICS, DIM))
    rows = centres[rng.integers(0, TOPICS, chunks)] + 0.8 * rng.standard_normal((chunks, DIM))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def cluster_haystack(vectors: np.ndarray, seed: int, pooled: bool) -> tuple[list[list[int]], Any]:
    """``cluster_layer`` of one haystack at the bench's settings (steps in the pool if ``pooled``)."""
    steps = run_cpu_many if pooled else in_thread
    tokens = [TOKENS] * len(vectors)
    return cluster_layer(vectors, tokens, ClusterSettings(), seed, "L1", steps=steps)


def warm_up(workers: int) -> None:
    """Pay the imports and numba's compilation before timing: here, and (with a pool open) in every
    worker, each given whole small layers to cluster on its own."""
    cluster_haystack(haystack_vectors(1000, 60), 0, pooled=False)
    calls = [(haystack_vectors(1001 + i, 60), i, False) for i in range(2 * workers)]
    run_cpu_many(cluster_haystack, calls)


def cluster_episodes(haystacks: list[np.ndarray], pooled: bool) -> tuple[float, list[Any]]:
    """Wall seconds and clusters of every haystack clustered by its own thread, all at once."""

    def one(i: int) -> list[list[int]]:
        return cluster_haystack(haystacks[i], i, pooled)[0]

    start = time.perf_counter()
    with ThreadPoolExecutor(len(haystacks)) as threads:
        clusters = list(threads.map(one, range(len(haystacks))))
    return time.perf_counter() - start, clusters


def main(episodes: int | None = None, chunks: int = CHUNKS) -> dict[str, Any]:
    """Time the clustering of ``episodes`` haystacks (default: 2 per core) both ways; print, return."""
    cores = machine_cores()
    episodes = episodes or 2 * cores
    haystacks = [haystack_vectors(seed, chunks) for seed in range(episodes)]
    load_before = os.getloadavg()[0]
    warm_up(1)
    thread_s, here = cluster_episodes(haystacks, pooled=False)
    one_thread_s, one_here = cluster_episodes(haystacks[:1], pooled=False)
    with cpu_pool(cores):
        warm_up(cores)
        pool_s, pooled = cluster_episodes(haystacks, pooled=True)
        one_pool_s, one_pooled = cluster_episodes(haystacks[:1], pooled=True)
    figures = {
        "cores": cores,
        "episodes": episodes,
        "chunks_per_episode": chunks,
        "clusters_per_episode": round(float(np.mean([len(c) for c in here])), 1),
        "in_thread_s": thread_s,
        "pool_s": pool_s,
        "speedup": thread_s / pool_s,
        "one_haystack_in_thread_s": one_thread_s,
        "one_haystack_pool_s": one_pool_s,
        "one_haystack_speedup": one_thread_s / one_pool_s,
        "identical_clusters": int(here == pooled and one_here == one_pooled),
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
