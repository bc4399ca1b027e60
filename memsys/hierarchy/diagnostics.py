"""Diagnostics for any hierarchy in the store, written once for every hierarchical memory.

- ``structure_stats``: MemTree Table 5. Node counts exclude a content-less root; the branching
  factor is the mean number of children over the *non-root* nodes that have children (with the
  root's children counted, Table 5's 3,164 nodes over 1,458 branching nodes would give 2.2, not
  the 2.1 it reports); the height-to-width ratio is the maximum depth over the median fan-out of
  those nodes (13 / 2 = 6.5 on Table 5's numbers).
- ``depth_profile``: nodes and token quartiles per depth (MemTree Fig. 4).
- ``level_profile``: nodes, median and total tokens per level, and the compression ratio of each
  level (its total tokens over the level below's).
- ``coherence``: W-coherence of each level's grouping (theory App. C): mean cosine of pairs that
  share a group vs pairs that do not, among the members of that level's groups.
- ``revenue``: Moseley-Wang revenue (MemTree App. B) in ``revenue.py``.
- ``ss_theta``: the computable self-sufficiency SS_θ of representatives (theory App. A, eq. 2) in
  ``ss_theta.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore


def structure_stats(store: HierarchyStore) -> dict[str, Any]:
    """#nodes, #leaves, #branching, depth max / mean, branching factor, height-to-width ratio."""
    nodes = store.content_nodes()
    depth = store.depths()
    fanouts = [len(store.children[v]) for v in nodes if store.children[v]]
    depths = np.array([depth.get(v, 0) for v in nodes], dtype=float)
    widths = np.bincount(depths.astype(int)) if depths.size else np.zeros(1, int)
    median_fanout = float(np.median(fanouts)) if fanouts else 0.0
    out = {
        "nodes": len(nodes),
        "leaf_nodes": sum(1 for v in nodes if not store.children[v]),
        "branching_nodes": len(fanouts),
        "depth_max": int(depths.max()) if depths.size else 0,
        "depth_mean": float(depths.mean()) if depths.size else 0.0,
        "branching_factor": float(np.mean(fanouts)) if fanouts else 0.0,
        "height_to_width_ratio": float(depths.max() / median_fanout) if median_fanout else 0.0,
        "max_level_width": int(widths.max()),
        "levels": store.max_level() + 1 if nodes else 0,
        "multi_parent_nodes": sum(1 for v in nodes if len(store.parents[v]) > 1),
        "same_level_edges": sum(len(e) for e in store.edges) // 2,
    }
    if store.root is not None:
        out["root_children"] = len(store.children[store.root])
    return out


def _quartiles(counts: list[int]) -> dict[str, float]:
    return {
        "tokens_median": float(np.median(counts)),
        "tokens_q25": float(np.percentile(counts, 25)),
        "tokens_q75": float(np.percentile(counts, 75)),
    }


def depth_profile(store: HierarchyStore, tokenizer: Any) -> dict[str, Any]:
    """Nodes and median / quartile tokens of node content per depth (MemTree Fig. 4)."""
    by_depth: dict[int, list[int]] = {}
    for v, d in store.depths().items():
        by_depth.setdefault(d, []).append(store.tokens(v, tokenizer))
    return {str(d): {"nodes": len(t), **_quartiles(t)} for d, t in sorted(by_depth.items())}


def level_profile(store: HierarchyStore, tokenizer: Any) -> dict[str, Any]:
    """Per level: nodes, token quartiles, total tokens and compression (total over the level below's)."""
    out: dict[str, Any] = {}
    previous = None
    for level in range(store.max_level() + 1):
        members = store.nodes_at_level(level)
        if not members:
            continue
        counts = [store.tokens(v, tokenizer) for v in members]
        total = int(sum(counts))
        out[str(level)] = {
            "nodes": len(members),
            **_quartiles(counts),
            "tokens_total": total,
            "compression": (total / previous) if previous else None,
        }
        previous = total
    return out


def level_groups(store: HierarchyStore, level: int) -> tuple[list[int], list[list[int]]]:
    """The grouping π of one coarsening step: the members (children of level-``level`` nodes) and each group."""
    groups = [list(store.children[v]) for v in store.nodes_at_level(level) if store.children[v]]
    members = sorted({c for g in groups for c in g})
    return members, groups


def coherence(
    store: HierarchyStore, exact_max_members: int = 2000, samples: int = 20000, seed: int = 0
) -> dict[str, Any]:
    """Mean within-group vs between-group cosine for every level's grouping (theory App. C).

    A pair is "within" when the two nodes share at least one group (groups may overlap). Exact up
    to ``exact_max_members`` members, estimated from ``samples`` seeded random pairs above.
    ``gap`` is the coherence gap γ_ℓ; a W-coherent grouping has gap > 0.
    """
    out: dict[str, Any] = {}
    emb = store.embeddings
    for level in range(1, store.max_level() + 1):
        members, groups = level_groups(store, level)
        if len(members) < 2 or emb.shape[1] == 0:
            continue
        pos = {v: i for i, v in enumerate(members)}
        vectors = emb[members].astype(np.float64)
        if len(members) <= exact_max_members:
            membership = np.zeros((len(members), len(groups)), dtype=np.float32)
            for g, group in enumerate(groups):
                membership[[pos[c] for c in group], g] = 1.0
            iu = np.triu_indices(len(members), 1)
            sims = (vectors @ vectors.T)[iu]
            shared = ((membership @ membership.T) > 0)[iu]
            method = "exact"
        else:
            # each member's groups as a set: a dense members x groups matrix, gathered for every
            # sampled pair, grows as the square of the memory (0.57 GB at 4,176 CAM chunks)
            groups_of: list[set[int]] = [set() for _ in members]
            for g, group in enumerate(groups):
                for c in group:
                    groups_of[pos[c]].add(g)
            rng = np.random.default_rng(seed + level)
            a = rng.integers(0, len(members), samples)
            b = (a + rng.integers(1, len(members), samples)) % len(members)
            sims = np.einsum("ij,ij->i", vectors[a], vectors[b])
            shared = np.fromiter(
                (not groups_of[i].isdisjoint(groups_of[j]) for i, j in zip(a, b, strict=True)),
                dtype=bool,
                count=len(a),
            )
            method = "sampled"
        within = float(sims[shared].mean()) if shared.any() else None
        between = float(sims[~shared].mean()) if (~shared).any() else None
        out[str(level)] = {
            "groups": len(groups),
            "members": len(members),
            "method": method,
            "within": within,
            "between": between,
            "gap": within - between if within is not None and between is not None else None,
            "pairs_within": int(shared.sum()),
            "pairs_between": int((~shared).sum()),
        }
    return out


def hierarchy_stats(
    store: HierarchyStore,
    tokenizer: Any,
    llm: Any = None,
    *,
    seed: int = 0,
    revenue_exact_max_leaves: int = 1500,
    revenue_samples: int = 20000,
    coherence_exact_max_members: int = 2000,
    coherence_samples: int = 20000,
    ss_theta_groups: int = 0,
    ss_theta_max_tokens: int = 256,
) -> dict[str, Any]:
    """Everything a hierarchical memory reports in ``memory_stats.json``, JSON-ready."""
    from memharness.memsys.hierarchy.revenue import revenue
    from memharness.memsys.hierarchy.ss_theta import ss_theta

    return {
        "structure": structure_stats(store),
        "depth_profile": depth_profile(store, tokenizer),
        "levels": level_profile(store, tokenizer),
        "coherence": coherence(store, coherence_exact_max_members, coherence_samples, seed),
        "revenue": revenue(store, revenue_exact_max_leaves, revenue_samples, seed),
        "ss_theta": ss_theta(
            store, llm, tokenizer, groups=ss_theta_groups, max_tokens=ss_theta_max_tokens, seed=seed
        ),
    }
