"""MemTree (Rezazadeh et al., 2024): an online tree memory with LLM-aggregated parent nodes.

Insertion (Sec. 3.1, App. A.1): from the root, compare the new unit's embedding with the
children of the current node; descend into the most similar child if it reaches
``threshold(d)`` (``d`` = depth of the node whose children are compared, root 0), otherwise
attach the unit as a new leaf there. Descending into a leaf expands it: it becomes a parent
with two children, an untouched copy of itself and the new unit. Every non-root node on the
traversal path then merges the new text into its content (one LLM call each, issued as one
concurrent batch) and is re-embedded.

Retrieval (Sec. 3.2, App. A.3.5): ``collapsed`` ranks every node by cosine, drops those below
``retrieve_threshold`` and keeps the top k; ``traversal`` keeps the top k children at each
level, starting from the root.

``RetrievedItem.level`` is the node's *height* (0 = leaf = a raw unit, higher = more
abstract), matching the harness convention; depths are reported in ``stats()``.
"""
from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np

from .backends.types import ChatRequest
from .base import MemorySystem, fill_budget
from .types import RetrievedItem, Unit, content_id

ROOT = 0


class MemTree(MemorySystem):
    """The MemTree memory system; hyperparameters are documented in ``conf/memory/memtree.yaml``."""

    online = True
    name = "memtree"

    def __init__(self, llm: Any = None, embedder: Any = None, tokenizer: Any = None, *,
                 aggregate_prompt: str = "{current_content}\n{new_content}",
                 base_threshold: float = 0.4, rate: float = 0.5,
                 threshold_form: str = "scaled", max_depth: int | None = None,
                 aggregate_count: str = "units", aggregate_max_tokens: int = 192,
                 parallel_updates: bool = True, retrieval: str = "collapsed", top_k: int = 3,
                 retrieve_threshold: float = 0.0, insert_order_seed: int | None = None,
                 revenue_exact_max_leaves: int = 1500, revenue_samples: int = 20000,
                 seed: int = 0, html_max_nodes: int = 5000) -> None:
        super().__init__(llm=llm, embedder=embedder, tokenizer=tokenizer)
        if threshold_form not in ("scaled", "exponential"):
            raise ValueError(f"memory.threshold_form must be 'scaled' or 'exponential', got {threshold_form!r}")
        if retrieval not in ("collapsed", "traversal"):
            raise ValueError(f"memory.retrieval must be 'collapsed' or 'traversal', got {retrieval!r}")
        if aggregate_count not in ("units", "children"):
            raise ValueError(f"memory.aggregate_count must be 'units' or 'children', got {aggregate_count!r}")
        self.aggregate_prompt = aggregate_prompt
        self.base_threshold, self.rate = float(base_threshold), float(rate)
        self.threshold_form, self.max_depth = threshold_form, max_depth
        self.aggregate_count, self.aggregate_max_tokens = aggregate_count, int(aggregate_max_tokens)
        self.parallel_updates, self.retrieval, self.top_k = bool(parallel_updates), retrieval, int(top_k)
        self.retrieve_threshold, self.insert_order_seed = float(retrieve_threshold), insert_order_seed
        self.revenue_exact_max_leaves, self.revenue_samples = revenue_exact_max_leaves, revenue_samples
        self.seed, self.html_max_nodes = seed, html_max_nodes
        # Per-node state in parallel lists (light objects; index 0 is the content-less root).
        self.ids: list[str] = ["root"]
        self.texts: list[str] = [""]
        self.parent: list[int] = [-1]
        self.depth: list[int] = [0]
        self.height: list[int] = [0]
        self.children: list[list[int]] = [[]]
        self.leaf_unit: list[str | None] = [None]  # the unit a leaf holds; None for parents
        self.n_units: list[int] = [0]  # units in the subtree
        self._tokens: list[int | None] = [0]
        self._provenance: dict[int, tuple[str, ...]] = {}
        self._emb: np.ndarray | None = None  # (capacity, dim) float32, grown by doubling
        self.tree_max_depth = 0
        self.insertions: list[dict[str, Any]] = []
        self.aggregation_failures = 0

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        """Number of nodes including the root."""
        return len(self.ids)

    @property
    def embeddings(self) -> np.ndarray:
        """The (n_nodes, dim) embedding matrix (row 0, the root, is zero)."""
        return self._emb[: self.n_nodes] if self._emb is not None else np.zeros((1, 0), np.float32)

    def _ensure_capacity(self, dim: int, needed: int) -> None:
        if self._emb is None:
            self._emb = np.zeros((max(16, needed), dim), dtype=np.float32)
        elif needed > self._emb.shape[0]:
            grown = np.zeros((max(needed, 2 * self._emb.shape[0]), dim), dtype=np.float32)
            grown[: self._emb.shape[0]] = self._emb
            self._emb = grown

    def _new_node(self, node_id: str, text: str, vector: np.ndarray, parent: int, unit_id: str | None,
                  n_units: int) -> int:
        """Append a node under ``parent`` and return its index."""
        idx = self.n_nodes
        self._ensure_capacity(vector.shape[0], idx + 1)
        self._emb[idx] = vector
        self.ids.append(node_id)
        self.texts.append(text)
        self.parent.append(parent)
        self.depth.append(self.depth[parent] + 1 if parent >= 0 else 0)
        self.height.append(0)
        self.children.append([])
        self.leaf_unit.append(unit_id)
        self.n_units.append(n_units)
        self._tokens.append(None)
        if parent >= 0:
            self.children[parent].append(idx)
            self.tree_max_depth = max(self.tree_max_depth, self.depth[idx])
        return idx

    # ------------------------------------------------------------------ insertion
    def depth_threshold(self, d: int) -> float:
        """Similarity a child of a depth-``d`` node must reach for the new unit to descend into it.

        ``scaled`` (App. A.1.3, default): θ0·exp(λ·d / max_depth), with max_depth the tree's
        current maximum depth (at least 1) unless fixed in config. ``exponential`` (Sec. 3.1):
        θ0·exp(λ·d). Both are offered because the paper states both; with θ0 = 0.4, λ = 0.5
        the Sec. 3.1 form exceeds 1 (the cosine maximum) from d = 2, so it cannot produce the
        depth-13 trees of Table 5, while the scaled form can.
        """
        if self.threshold_form == "exponential":
            return self.base_threshold * math.exp(self.rate * d)
        max_depth = self.max_depth if self.max_depth is not None else max(1, self.tree_max_depth)
        return self.base_threshold * math.exp(self.rate * d / max_depth)

    def find_path(self, vector: np.ndarray) -> tuple[list[int], int]:
        """Descend from the root; return (non-root nodes descended into, node that gets the new leaf).

        The last path node may be a leaf: it is then expanded (see ``expand_leaf``).
        """
        path, node, emb = [], ROOT, self.embeddings
        while True:
            if node != ROOT and not self.children[node]:
                return path, node
            kids = self.children[node]
            if not kids:
                return path, node
            sims = emb[kids] @ vector
            best = int(np.argmax(sims))
            if float(sims[best]) < self.depth_threshold(self.depth[node]):
                return path, node
            node = kids[best]
            path.append(node)

    def expand_leaf(self, leaf: int) -> int:
        """Turn ``leaf`` into a parent whose first child is an exact copy of it; return the copy."""
        unit_id = self.leaf_unit[leaf]
        copy = self._new_node(self.ids[leaf], self.texts[leaf], self._emb[leaf].copy(), leaf, unit_id, 1)
        self._tokens[copy] = self._tokens[leaf]
        # The node index makes the id unique: the same leaf copy can be expanded again later.
        self.ids[leaf] = content_id("memtree-parent", self.ids[leaf], leaf, prefix="p-")
        self.leaf_unit[leaf] = None
        return copy

    def aggregation_requests(self, nodes: Sequence[int], new_text: str) -> list[ChatRequest]:
        """One conditional-aggregation prompt per node (App. A.1.2), before the node counts the new unit."""
        reqs = []
        for v in nodes:
            n = self.n_units[v] if self.aggregate_count == "units" else max(1, len(self.children[v]))
            prompt = self.aggregate_prompt.format(n_children=n, new_content=new_text,
                                                  current_content=self.texts[v])
            reqs.append(ChatRequest.user(prompt, max_tokens=self.aggregate_max_tokens, temperature=0.0))
        return reqs

    def update_path(self, path: Sequence[int], new_text: str) -> int:
        """Aggregate ``new_text`` into every node of ``path`` and re-embed them; return failures.

        The aggregations only read the node's old content and the new text, so they are
        independent: with ``parallel_updates`` they go out as one concurrent batch.
        """
        if not path:
            return 0
        reqs = self.aggregation_requests(path, new_text)
        if self.parallel_updates:
            completions = self.llm.complete(reqs)
        else:
            completions = [self.llm.complete([r])[0] for r in reqs]
        changed = [(v, c.text.strip()) for v, c in zip(path, completions) if c.ok and c.text.strip()]
        failures = len(path) - len(changed)
        if changed:
            if self.parallel_updates:
                vectors = self.embedder.embed([t for _, t in changed])
            else:
                vectors = np.stack([self.embedder.embed([t])[0] for _, t in changed])
            for (v, text), vec in zip(changed, vectors):
                self.texts[v], self._emb[v], self._tokens[v] = text, vec, None
        self.aggregation_failures += failures
        return failures

    def insert_unit(self, unit: Unit, vector: np.ndarray | None = None) -> int:
        """Insert one unit (Algorithm 1) and return the index of its new leaf."""
        start = time.perf_counter()
        nodes_before = self.n_nodes
        if vector is None:
            vector = self.embedder.embed([unit.text])[0]
        path, attach = self.find_path(vector)
        if attach != ROOT and not self.children[attach]:
            self.expand_leaf(attach)
        failures = self.update_path(path, unit.text)
        leaf = self._new_node(content_id("memtree-leaf", unit.id, prefix="l-"), unit.text, vector, attach,
                              unit.id, 1)
        for v in [ROOT, *path]:
            self.n_units[v] += 1
            self._provenance.pop(v, None)
        self._raise_heights(leaf)
        self.insertions.append({"unit": unit.id, "nodes_before": nodes_before, "leaf_depth": self.depth[leaf],
                                "llm_calls": len(path), "failures": failures,
                                "seconds": time.perf_counter() - start})
        return leaf

    def _raise_heights(self, node: int) -> None:
        child, p = node, self.parent[node]
        while p >= 0 and self.height[p] < self.height[child] + 1:
            self.height[p] = self.height[child] + 1
            child, p = p, self.parent[p]

    def add(self, units: Sequence[Unit]) -> None:
        """Insert a batch in stream order (or in a seeded shuffle when ``insert_order_seed`` is set)."""
        units = list(units)
        if self.insert_order_seed is not None:
            key = int(content_id(self.insert_order_seed, [u.id for u in units], length=8), 16)
            units = [units[i] for i in np.random.default_rng(key).permutation(len(units))]
        for unit in units:
            self.insert_unit(unit)

    # ------------------------------------------------------------------ retrieval
    def _query_vector(self, question: str) -> np.ndarray:
        return self.embedder.embed([question])[0]

    def collapsed_retrieve(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k nodes by cosine over all non-root nodes, after dropping those below ``retrieve_threshold``."""
        n = self.n_nodes - 1
        if n <= 0 or k <= 0:
            return []
        sims = self._emb[1: self.n_nodes] @ vector
        if k < n:
            cand = np.argpartition(-sims, k - 1)[:k]
        else:
            cand = np.arange(n)
        cand = cand[sims[cand] >= self.retrieve_threshold]
        order = cand[np.lexsort((cand, -sims[cand]))]  # ties broken by insertion order
        return [(int(i) + 1, float(sims[i])) for i in order]

    def traversal_retrieve(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k among the root's children, then top-k among their children, level by level.

        The ``retrieve_threshold`` filter applies here too so both modes see the same cutoff.
        """
        chosen: list[tuple[int, float]] = []
        frontier = [ROOT]
        while frontier and k > 0:
            kids = [c for v in frontier for c in self.children[v]]
            if not kids:
                break
            sims = self._emb[kids] @ vector
            order = sorted(range(len(kids)), key=lambda i: (-float(sims[i]), kids[i]))[:k]
            level = [(kids[i], float(sims[i])) for i in order if sims[i] >= self.retrieve_threshold]
            chosen.extend(level)
            frontier = [v for v, _ in level]
        return chosen

    def source_unit_ids(self, node: int) -> tuple[str, ...]:
        """Ids of the units in ``node``'s subtree, in insertion order of their leaves."""
        if node in self._provenance:
            return self._provenance[node]
        leaves, stack = [], [node]
        while stack:
            v = stack.pop()
            if self.leaf_unit[v] is not None:
                leaves.append(v)
            stack.extend(self.children[v])
        ids = tuple(dict.fromkeys(self.leaf_unit[v] for v in sorted(leaves)))
        self._provenance[node] = ids
        return ids

    def node_tokens(self, node: int) -> int:
        if self._tokens[node] is None:
            self._tokens[node] = self.tokenizer.count(self.texts[node])
        return self._tokens[node]

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Rank nodes with the configured retrieval mode and fill the token budget in rank order."""
        vector = self._query_vector(question)
        ranked = (self.collapsed_retrieve(vector, self.top_k) if self.retrieval == "collapsed"
                  else self.traversal_retrieve(vector, self.top_k))
        items = [RetrievedItem(text=self.texts[v], score=s, node_id=self.ids[v], level=self.height[v],
                               source_unit_ids=self.source_unit_ids(v), tokens=self.node_tokens(v))
                 for v, s in ranked]
        return fill_budget(items, budget_tokens, self.tokenizer)

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Table 5 statistics, depth histogram, tokens per depth, LLM calls per insertion, revenue."""
        from .memtree_stats import tree_stats

        return {**super().stats(), **tree_stats(self)}

    def save(self, out_dir: Any) -> None:
        """Write tree.json, embeddings.npy and the HTML view into ``out_dir``."""
        from .memtree_view import save_tree

        save_tree(self, out_dir)

    @classmethod
    def load(cls, in_dir: Any, llm: Any = None, embedder: Any = None, tokenizer: Any = None,
             **overrides: Any) -> "MemTree":
        """Rebuild a saved tree (no LLM calls) to answer more questions."""
        from .memtree_view import load_tree

        return load_tree(cls, in_dir, llm=llm, embedder=embedder, tokenizer=tokenizer, **overrides)
