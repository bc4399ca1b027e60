"""MemTree speed and memory benchmark with stub backends (no model, no network).

    memharness bench memtree        (or `make bench`)

Reports: insertion throughput with parallel vs serial path updates under a stub LLM of fixed
latency (and their ratio); harness overhead per insertion at ~3,000 nodes with backend time
excluded (target < 5 ms); collapsed retrieval latency at 100,000 nodes (target < 20 ms per
query; one float32 matrix-vector product over 100k x 384 is memory-bound, ~12 ms on an idle
2-core box, so the median rises with other load: the best run is printed too); memory per node.
"""

from __future__ import annotations

import copy
import hashlib
import re
import threading
import time
import tracemalloc
from typing import Any

import numpy as np
from memharness.memsys.memtree.memory import MemTree
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.testing.doubles import (
    ScriptedChat,
    TimedBackend,
    TopicEmbedder,
    WordTokenizer,
)
from memharness.memsys.types import Unit, content_id

DIM, CLUSTERS = 384, 40
PROMPT = "{n_children}|{current_content}|{new_content}"


class _Clock:
    """Thread-safe accumulator of time spent inside stub backends."""

    def __init__(self) -> None:
        self.seconds, self._lock = 0.0, threading.Lock()

    def add(self, s: float) -> None:
        with self._lock:
            self.seconds += s

    def span(self, start: float, end: float) -> None:
        self.add(end - start)


def merge_summary(request: Any) -> str:
    """A short summary tagged with the new unit's cluster."""
    _, current, new = request.messages[-1][1].split("|", 2)
    tag = re.search(r"c\d+", new).group(0)
    return f"summary {tag} {hashlib.md5((current + new).encode()).hexdigest()[:8]}"


def StubChat(latency_s: float, clock: _Clock) -> TimedBackend:
    """Merge summaries after ``latency_s``; the time spent is added to ``clock``."""
    chat = ScriptedChat(reply=merge_summary, latency_s=latency_s, model_id="stub-chat", log=False)
    return TimedBackend(chat, clock.span)


def StubEmbed(clock: _Clock) -> TimedBackend:
    """Clustered vectors (the cluster centre named in the text plus seeded noise), timed."""
    return TimedBackend(TopicEmbedder(CLUSTERS, DIM, spread=1.2, model_id="stub-embed"), clock.span)


def _units(n: int, start: int = 0) -> list[Unit]:
    rng = np.random.default_rng(start + 1)
    return [
        Unit(
            id=content_id("bench", i, prefix="u-"),
            text=f"unit {i} about c{int(rng.integers(CLUSTERS))}",
            source_id="bench",
            position=i,
        )
        for i in range(start, start + n)
    ]


def _tree(latency_s: float, clock: _Clock, parallel: bool = True) -> MemTree:
    llm = LLM(StubChat(latency_s, clock), max_in_flight=8, progress=False)
    return MemTree(
        llm=llm,
        embedder=Embedder(StubEmbed(clock)),
        tokenizer=WordTokenizer(),
        aggregate_prompt=PROMPT,
        parallel_updates=parallel,
        top_k=10,
    )


def overhead_at(nodes: int = 3000, probe: int = 200) -> tuple[MemTree, dict[str, float]]:
    """Grow a tree to ``nodes`` with a zero-latency stub, then time ``probe`` insertions minus backend time."""
    clock = _Clock()
    tree = _tree(0.0, clock)
    i = 0
    while tree.n_nodes < nodes:
        tree.insert_unit(_units(1, i)[0])
        i += 1
    probe_units = _units(probe, i)
    clock.seconds = 0.0
    start = time.perf_counter()
    for u in probe_units:
        tree.insert_unit(u)
    wall = time.perf_counter() - start
    calls = np.mean([r["llm_calls"] for r in tree.insertions[-probe:]])
    return tree, {
        "nodes": tree.n_nodes,
        "overhead_ms_per_insertion": 1000 * (wall - clock.seconds) / probe,
        "llm_calls_per_insertion": float(calls),
        "max_depth": tree.tree_max_depth,
    }


def parallel_vs_serial(base: MemTree, latency_s: float = 0.02, n: int = 40) -> dict[str, float]:
    """Insertions per second on copies of ``base`` with batched vs one-by-one path updates."""
    out: dict[str, float] = {"stub_latency_s": latency_s}
    units = _units(n, 10**6)
    for mode in ("parallel", "serial"):
        clock = _Clock()
        services = base.llm, base.embedder
        base.llm = base.embedder = None  # thread pools and locks do not deep-copy
        tree = copy.deepcopy(base)
        base.llm, base.embedder = services
        tree.llm = LLM(StubChat(latency_s, clock), max_in_flight=8, progress=False)
        tree.embedder = Embedder(StubEmbed(clock))
        tree.parallel_updates = mode == "parallel"
        start = time.perf_counter()
        for u in units:
            tree.insert_unit(u)
        out[f"{mode}_insertions_per_s"] = n / (time.perf_counter() - start)
        tree.llm.close()
    out["parallel_over_serial"] = out["parallel_insertions_per_s"] / out["serial_insertions_per_s"]
    return out


def synthetic_tree(n_nodes: int, seed: int = 0) -> MemTree:
    """A random recursive tree of ``n_nodes`` with clustered embeddings, built without any backend."""
    clock = _Clock()
    tree = _tree(0.0, clock)
    rng = np.random.default_rng(seed)
    centres = TopicEmbedder(CLUSTERS, DIM).centres
    vecs = centres[rng.integers(CLUSTERS, size=n_nodes)] * 1.2 + rng.standard_normal(
        (n_nodes, DIM)
    ).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for i in range(1, n_nodes):
        parent = int(rng.integers(i)) if i > 1 else 0
        if parent:
            tree.store.units[parent] = ()  # a leaf that gets a child becomes a parent
        tree._new_node(f"n{i}", f"node {i} text", vecs[i], parent, f"u{i}", 1)
    return tree


def retrieval_at(n_nodes: int = 100_000, queries: int = 50) -> dict[str, float]:
    """Median latency of collapsed ranking alone and of a full ``search`` (query embed, provenance, budget)."""
    tracemalloc.start()
    tree = synthetic_tree(n_nodes)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rng = np.random.default_rng(1)
    qs = rng.standard_normal((queries, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    rank_ms, search_ms = [], []
    for q in qs:
        t = time.perf_counter()
        tree.collapsed_retrieve(q, 10)
        rank_ms.append(1000 * (time.perf_counter() - t))
    for i in range(queries):
        t = time.perf_counter()
        tree.search(f"question {i} c{i % CLUSTERS}", 10**6)
        search_ms.append(1000 * (time.perf_counter() - t))
    return {
        "nodes": n_nodes,
        "collapsed_rank_ms_p50": float(np.median(rank_ms)),
        "collapsed_rank_ms_min": float(np.min(rank_ms)),
        "collapsed_search_ms_p50": float(np.median(search_ms)),
        "collapsed_search_ms_p95": float(np.percentile(search_ms, 95)),
        "bytes_per_node": current / n_nodes,
        "embedding_bytes_per_node": DIM * 4,
    }


def main() -> dict[str, Any]:
    """Run every MemTree benchmark, print a summary and return the figures."""
    tree, overhead = overhead_at()
    speed = parallel_vs_serial(tree)
    tree.llm.close()
    retrieval = retrieval_at()
    results = {
        "memtree_parallel_updates": speed,
        "memtree_overhead": overhead,
        "memtree_retrieval": retrieval,
    }
    print(
        f"MemTree parallel vs serial path updates (stub LLM {speed['stub_latency_s'] * 1000:.0f} ms): "
        f"{speed['parallel_insertions_per_s']:.1f} vs {speed['serial_insertions_per_s']:.1f} insertions/s "
        f"-> x{speed['parallel_over_serial']:.2f}"
    )
    print(
        f"MemTree harness overhead at {overhead['nodes']} nodes: {overhead['overhead_ms_per_insertion']:.2f} ms "
        f"per insertion excl. backends (target < 5 ms; {overhead['llm_calls_per_insertion']:.1f} LLM calls, "
        f"max depth {overhead['max_depth']})"
    )
    print(
        f"MemTree collapsed retrieval at {retrieval['nodes']} nodes: "
        f"ranking p50 {retrieval['collapsed_rank_ms_p50']:.1f} ms "
        f"(best {retrieval['collapsed_rank_ms_min']:.1f} ms, the unloaded-machine figure), "
        f"full search p50 {retrieval['collapsed_search_ms_p50']:.1f} ms "
        f"/ p95 {retrieval['collapsed_search_ms_p95']:.1f} ms "
        f"(target < 20 ms); memory {retrieval['bytes_per_node']:.0f} B/node "
        f"({retrieval['embedding_bytes_per_node']} B of it the embedding)"
    )
    return results


if __name__ == "__main__":
    main()
