"""MemTree diagnostics: Table 5 statistics, Fig. 4 depth profile, LLM calls per insertion
(Table A.2) and the Moseley-Wang revenue of the tree (App. B.2).

Conventions (the paper does not define them): node counts exclude the content-less root;
"branching" nodes are non-root nodes with children; the branching factor is the mean number
of children over every node that has children (root included); the height-to-width ratio is
the maximum depth over the median number of children of those nodes (13 / 2 = 6.5 on the
paper's Table 5 numbers). ``max_level_width`` (most nodes at one depth) is reported too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .memtree import MemTree


def structure_stats(tree: "MemTree") -> dict[str, Any]:
    """#nodes, #leaves, #branching, max / average depth, branching factor, height-to-width ratio."""
    n = tree.n_nodes
    nonroot = range(1, n)
    leaves = [v for v in nonroot if not tree.children[v]]
    fanouts = [len(tree.children[v]) for v in range(n) if tree.children[v]]
    depths = np.array([tree.depth[v] for v in nonroot], dtype=float)
    widths = np.bincount(depths.astype(int)) if depths.size else np.zeros(1, int)
    median_fanout = float(np.median(fanouts)) if fanouts else 0.0
    return {
        "nodes": n - 1,
        "leaf_nodes": len(leaves),
        "branching_nodes": sum(1 for v in nonroot if tree.children[v]),
        "depth_max": int(depths.max()) if depths.size else 0,
        "depth_mean": float(depths.mean()) if depths.size else 0.0,
        "branching_factor": float(np.mean(fanouts)) if fanouts else 0.0,
        "height_to_width_ratio": float(depths.max() / median_fanout) if median_fanout else 0.0,
        "max_level_width": int(widths.max()),
        "root_children": len(tree.children[0]),
    }


def depth_profile(tree: "MemTree") -> dict[str, Any]:
    """Nodes per depth and median / quartile tokens of node content per depth (Fig. 4)."""
    by_depth: dict[int, list[int]] = {}
    for v in range(1, tree.n_nodes):
        count = tree.node_tokens(v) if tree.tokenizer is not None else len(tree.texts[v].split())
        by_depth.setdefault(tree.depth[v], []).append(count)
    return {str(d): {"nodes": len(t), "tokens_median": float(np.median(t)),
                     "tokens_q25": float(np.percentile(t, 25)), "tokens_q75": float(np.percentile(t, 75))}
            for d, t in sorted(by_depth.items())}


def insertion_stats(tree: "MemTree") -> dict[str, Any]:
    """LLM calls per insertion (mean, std) and latency summary; the per-insertion records stay in stats."""
    calls = np.array([r["llm_calls"] for r in tree.insertions], dtype=float)
    secs = np.array([r["seconds"] for r in tree.insertions], dtype=float)
    if not calls.size:
        return {"insertions": 0}
    return {"insertions": int(calls.size), "llm_calls_per_insertion_mean": float(calls.mean()),
            "llm_calls_per_insertion_std": float(calls.std()), "insertion_seconds_mean": float(secs.mean()),
            "insertion_seconds_p95": float(np.percentile(secs, 95)),
            "aggregation_failures": int(tree.aggregation_failures)}


def _leaf_order(tree: "MemTree") -> tuple[list[int], dict[int, tuple[int, int]]]:
    """Leaves in DFS order and, for every node, the [start, end) span of its leaves in that order."""
    order, span, stack = [], {}, [(0, False)]
    start: dict[int, int] = {}
    while stack:
        v, done = stack.pop()
        if done:
            span[v] = (start[v], len(order))
            continue
        start[v] = len(order)
        if not tree.children[v]:
            order.append(v)
            span[v] = (start[v], len(order))
            continue
        stack.append((v, True))
        stack.extend((c, False) for c in reversed(tree.children[v]))
    return order, span


def _weights(vectors: np.ndarray) -> np.ndarray:
    """Pairwise similarity weights: cosine clipped at 0 (the revenue assumes w >= 0)."""
    return np.clip(vectors @ vectors.T, 0.0, None)


def revenue_exact(tree: "MemTree") -> dict[str, Any]:
    """Rev(T) = sum_{i<j} w_ij (n - |leaves(lca(i, j))|) over the tree's leaves, exactly.

    Pairs whose lca is v are the pairs inside v's leaf span minus those inside one child's
    span; with leaves in DFS order every span is a contiguous block, so block sums of a 2-D
    prefix-sum table give each term in O(1).
    """
    order, span = _leaf_order(tree)
    n = len(order)
    if n < 3:
        return {"method": "exact", "leaves": n, "revenue": 0.0, "normalised": 0.0}
    w = _weights(tree.embeddings[order].astype(np.float64))
    np.fill_diagonal(w, 0.0)
    pre = np.zeros((n + 1, n + 1))
    pre[1:, 1:] = w.cumsum(0).cumsum(1)

    def inside(a: int, b: int) -> float:
        return (pre[b, b] - pre[a, b] - pre[b, a] + pre[a, a]) / 2.0

    revenue = 0.0
    for v in range(tree.n_nodes):
        if not tree.children[v]:
            continue
        a, b = span[v]
        cross = inside(a, b) - sum(inside(*span[c]) for c in tree.children[v])
        revenue += (n - (b - a)) * cross
    bound = (n - 2) * inside(0, n)
    return {"method": "exact", "leaves": n, "revenue": float(revenue),
            "normalised": float(revenue / bound) if bound > 0 else 0.0}


def _lca_leaves(tree: "MemTree", i: int, j: int, span: dict[int, tuple[int, int]]) -> int:
    depth, parent = tree.depth, tree.parent
    while depth[i] > depth[j]:
        i = parent[i]
    while depth[j] > depth[i]:
        j = parent[j]
    while i != j:
        i, j = parent[i], parent[j]
    a, b = span[i]
    return b - a


def revenue_sampled(tree: "MemTree", samples: int, seed: int = 0) -> dict[str, Any]:
    """Unbiased Monte-Carlo estimate of Rev(T) from uniformly sampled leaf pairs, with its standard error."""
    order, span = _leaf_order(tree)
    n = len(order)
    if n < 3:
        return {"method": "sampled", "leaves": n, "revenue": 0.0, "stderr": 0.0, "normalised": 0.0}
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, samples)
    b = (a + rng.integers(1, n, samples)) % n  # uniform over ordered pairs with a != b
    emb = tree.embeddings
    w = np.clip(np.einsum("ij,ij->i", emb[[order[x] for x in a]], emb[[order[y] for y in b]]), 0.0, None)
    gain = np.array([n - _lca_leaves(tree, order[x], order[y], span) for x, y in zip(a, b)], dtype=float)
    terms = w * gain
    pairs = n * (n - 1) / 2
    revenue, stderr = pairs * terms.mean(), pairs * terms.std(ddof=1) / np.sqrt(samples)
    bound = (n - 2) * pairs * w.mean()
    return {"method": "sampled", "leaves": n, "samples": samples, "revenue": float(revenue),
            "stderr": float(stderr), "normalised": float(revenue / bound) if bound > 0 else 0.0}


def revenue(tree: "MemTree") -> dict[str, Any]:
    """Exact revenue up to ``revenue_exact_max_leaves`` leaves, a sampled estimate above."""
    leaves = sum(1 for v in range(1, tree.n_nodes) if not tree.children[v])
    if leaves <= tree.revenue_exact_max_leaves:
        return revenue_exact(tree)
    return revenue_sampled(tree, tree.revenue_samples, tree.seed)


def tree_stats(tree: "MemTree") -> dict[str, Any]:
    """Everything ``MemTree.stats()`` reports, JSON-ready."""
    return {"structure": structure_stats(tree), "depth_profile": depth_profile(tree),
            "insertion": insertion_stats(tree), "revenue": revenue(tree),
            "config": {"base_threshold": tree.base_threshold, "rate": tree.rate,
                       "threshold_form": tree.threshold_form, "max_depth": tree.max_depth,
                       "retrieval": tree.retrieval, "top_k": tree.top_k,
                       "insert_order_seed": tree.insert_order_seed},
            "insertions": list(tree.insertions)}
