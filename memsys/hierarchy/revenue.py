"""Moseley-Wang revenue of a hierarchy (MemTree App. B.2), for trees and DAGs.

Rev(T) = Σ_{i<j} w_ij · (n − |leaves(lca(i, j))|) over the n leaves, with w_ij the cosine of
the two leaves clipped at 0. In a DAG a pair of leaves may have several lowest common ancestors;
we take the common ancestor with the fewest leaves (for a tree that is the lca, so both agree).
Leaves with no common ancestor (several tops and no root) meet at a virtual root holding all n
leaves and earn nothing. ``normalised`` divides by the upper bound (n − 2) Σ_{i<j} w_ij.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore


def _leaf_sets(store: HierarchyStore) -> tuple[list[int], dict[int, int]]:
    """Leaves and, for every node, a bitset (Python int) of the leaves beneath it."""
    leaves = store.leaves()
    bit = {v: 1 << i for i, v in enumerate(leaves)}
    sets: dict[int, int] = {}
    order, seen = [], set()
    for start in range(len(store)):  # children before parents (iterative post-order)
        if start in seen:
            continue
        stack = [(start, False)]
        while stack:
            v, done = stack.pop()
            if done:
                order.append(v)
                continue
            if v in seen:
                continue
            seen.add(v)
            stack.append((v, True))
            stack.extend((c, False) for c in store.children[v] if c not in seen)
    for v in order:
        s = bit.get(v, 0)
        for c in store.children[v]:
            s |= sets[c]
        sets[v] = s
    return leaves, sets


def _bits(s: int, n: int) -> np.ndarray:
    """Indices of the set bits of ``s`` (an n-bit set)."""
    raw = np.frombuffer(s.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little")[:n])


def _weights(vectors: np.ndarray) -> np.ndarray:
    return np.clip(vectors @ vectors.T, 0.0, None)


def revenue_exact(store: HierarchyStore) -> dict[str, Any]:
    """Exact revenue: each leaf pair is credited to the smallest node containing both."""
    leaves, sets = _leaf_sets(store)
    n = len(leaves)
    if n < 3:
        return {"method": "exact", "leaves": n, "revenue": 0.0, "normalised": 0.0}
    w = _weights(store.embeddings[leaves].astype(np.float64))
    np.fill_diagonal(w, 0.0)
    gain = np.zeros((n, n))
    done = np.zeros((n, n), dtype=bool)
    np.fill_diagonal(done, True)
    inner = [v for v in range(len(store)) if store.children[v]]
    sizes = {v: bin(sets[v]).count("1") for v in inner}
    for v in sorted(inner, key=lambda x: (sizes[x], x)):
        members = _bits(sets[v], n)
        block = np.ix_(members, members)
        fresh = ~done[block]
        g = gain[block]
        g[fresh] = n - sizes[v]
        gain[block] = g
        done[block] = True
    total = float((w * gain).sum() / 2.0)
    bound = (n - 2) * float(w.sum() / 2.0)
    return {
        "method": "exact",
        "leaves": n,
        "revenue": total,
        "normalised": total / bound if bound > 0 else 0.0,
    }


def revenue_sampled(store: HierarchyStore, samples: int, seed: int = 0) -> dict[str, Any]:
    """Unbiased Monte-Carlo estimate from uniformly sampled leaf pairs, with its standard error."""
    leaves, sets = _leaf_sets(store)
    n = len(leaves)
    if n < 3:
        return {"method": "sampled", "leaves": n, "revenue": 0.0, "stderr": 0.0, "normalised": 0.0}
    size = {v: bin(s).count("1") for v, s in sets.items() if store.children[v]}
    ancestors: dict[int, set[int]] = {}

    def up(leaf: int) -> set[int]:
        if leaf not in ancestors:
            seen, stack = set(), [leaf]
            while stack:
                for p in store.parents[stack.pop()]:
                    if p not in seen:
                        seen.add(p)
                        stack.append(p)
            ancestors[leaf] = seen
        return ancestors[leaf]

    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, samples)
    b = (a + rng.integers(1, n, samples)) % n
    emb = store.embeddings
    w = np.clip(
        np.einsum("ij,ij->i", emb[[leaves[x] for x in a]], emb[[leaves[y] for y in b]]), 0.0, None
    )
    gain = np.array(
        [
            n - min((size[c] for c in up(leaves[x]) & up(leaves[y])), default=n)
            for x, y in zip(a, b, strict=False)
        ],
        dtype=float,
    )
    terms = w * gain
    pairs = n * (n - 1) / 2
    total, stderr = pairs * terms.mean(), pairs * terms.std(ddof=1) / np.sqrt(samples)
    bound = (n - 2) * pairs * w.mean()
    return {
        "method": "sampled",
        "leaves": n,
        "samples": samples,
        "revenue": float(total),
        "stderr": float(stderr),
        "normalised": float(total / bound) if bound > 0 else 0.0,
    }


def revenue(
    store: HierarchyStore, exact_max_leaves: int = 1500, samples: int = 20000, seed: int = 0
) -> dict[str, Any]:
    """Exact revenue up to ``exact_max_leaves`` leaves, a sampled estimate above."""
    if len(store.leaves()) <= exact_max_leaves:
        return revenue_exact(store)
    return revenue_sampled(store, samples, seed)
