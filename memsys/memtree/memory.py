"""MemTree (Rezazadeh et al., 2024): an online tree memory with LLM-aggregated parent nodes.

On the hierarchy core (``memsys.hierarchy``) MemTree contributes only its insertion rule:

Insertion (Sec. 3.1, App. A.1): from the root, compare the new unit's embedding with the
children of the current node; descend into the most similar child if it reaches
``threshold(d)`` (``d`` = depth of the node whose children are compared, root 0), otherwise
attach the unit as a new leaf there. Descending into a leaf expands it: it becomes a parent
with two children, an untouched copy of itself and the new unit. Every non-root node on the
traversal path then merges the new text into its content (ρ: one LLM call each, issued as one
concurrent batch) and is re-embedded.

Retrieval is the core's: ``collapsed`` ranks every node by cosine, drops those below
``retrieve_threshold`` and keeps the top k (Sec. 3.2); ``top_down`` keeps the top k children at
each level from the root (App. A.3.5's "traversal"); ``collapsed_expand`` is offered too.

A node's level in the store is its *height* (0 = leaf = a raw unit), the harness convention;
depths (root 0) drive the insertion threshold and Fig. 4.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.forget import recompute_heights
from memharness.memsys.hierarchy.memory import HierarchicalMemory
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.settings import Placeholders, Range
from memharness.memsys.types import Unit, content_id

ROOT = 0


class MemTree(HierarchicalMemory):
    """The MemTree memory system; hyperparameters are documented in ``conf/memory/memtree.yaml``."""

    online = True
    name = "memtree"
    with_root = True

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        aggregate_prompt: Annotated[
            str, Placeholders("new_content", "current_content", optional=("n_children",))
        ] = "{current_content}\n{new_content}",
        base_threshold: Annotated[float, Range(0, 1, hi_open=True)] = 0.4,
        rate: Annotated[float, Range(0)] = 0.5,
        threshold_form: Literal["scaled", "exponential"] = "scaled",
        max_depth: Annotated[int, Range(1)] | None = None,
        aggregate_count: Literal["units", "children"] = "units",
        aggregate_max_tokens: Annotated[int, Range(1)] = 192,
        parallel_updates: bool = True,
        insert_order_seed: Annotated[int, Range(0)] | None = None,
        traversal: str = "collapsed",
        top_k: int = 3,
        retrieve_threshold: float = 0.0,
        **core: Any,
    ) -> None:
        # traversal / top_k / retrieve_threshold keep the base class's declared ranges and choices.
        super().__init__(
            llm=llm,
            embedder=embedder,
            tokenizer=tokenizer,
            traversal=traversal,
            top_k=top_k,
            retrieve_threshold=retrieve_threshold,
            **core,
        )
        self.aggregate_prompt = aggregate_prompt
        self.base_threshold, self.rate = float(base_threshold), float(rate)
        self.threshold_form, self.max_depth = threshold_form, max_depth
        self.aggregate_count, self.aggregate_max_tokens = aggregate_count, int(aggregate_max_tokens)
        self.parallel_updates, self.insert_order_seed = bool(parallel_updates), insert_order_seed
        # MemTree's own per-node state beside the store (index 0 is the content-less root).
        self.depth: list[int] = [0]
        self.n_units: list[int] = [0]  # units in the subtree
        self.tree_max_depth = 0
        self.insertions: list[dict[str, Any]] = []
        self.aggregation_failures = 0

    # ------------------------------------------------------------------ read-only views of the store
    @property
    def n_nodes(self) -> int:
        """Number of nodes including the root."""
        return len(self.store)

    @property
    def ids(self) -> list[str]:
        return self.store.ids

    @property
    def texts(self) -> list[str]:
        return self.store.texts

    @property
    def children(self) -> list[list[int]]:
        return self.store.children

    @property
    def height(self) -> list[int]:
        return self.store.levels

    @property
    def embeddings(self) -> np.ndarray:
        """The (n_nodes, dim) embedding matrix (row 0, the root, is zero)."""
        return self.store.embeddings

    @property
    def parent(self) -> list[int]:
        return [p[0] if p else -1 for p in self.store.parents]

    @property
    def leaf_unit(self) -> list[str | None]:
        return [u[0] if u else None for u in self.store.units]

    def source_unit_ids(self, node: int) -> tuple[str, ...]:
        return self.store.source_units(node)

    # ------------------------------------------------------------------ insertion
    def _new_node(
        self,
        node_id: str,
        text: str,
        vector: np.ndarray,
        parent: int,
        unit_id: str | None,
        n_units: int,
    ) -> int:
        """Append a leaf under ``parent`` and return its index."""
        idx = self.store.add_node(
            node_id, text, vector, level=0, units=(unit_id,) if unit_id else ()
        )
        self.store.link(parent, idx)
        self.depth.append(self.depth[parent] + 1)
        self.n_units.append(n_units)
        self.tree_max_depth = max(self.tree_max_depth, self.depth[idx])
        return idx

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
        path, node, emb, children = [], ROOT, self.store.embeddings, self.store.children
        while True:
            kids = children[node]
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
        store = self.store
        unit_id = store.units[leaf][0] if store.units[leaf] else None
        store.units[leaf] = ()
        copy = self._new_node(
            store.ids[leaf], store.texts[leaf], store.embeddings[leaf].copy(), leaf, unit_id, 1
        )
        # The node index makes the id unique: the same leaf copy can be expanded again later.
        store.ids[leaf] = content_id("memtree-parent", store.ids[leaf], leaf, prefix="p-")
        return copy

    def aggregation_requests(self, nodes: Sequence[int], new_text: str) -> list[ChatRequest]:
        """One conditional-aggregation prompt per node (App. A.1.2), before the node counts the new unit."""
        reqs = []
        for v in nodes:
            n = (
                self.n_units[v]
                if self.aggregate_count == "units"
                else max(1, len(self.store.children[v]))
            )
            prompt = self.aggregate_prompt.format(
                n_children=n, new_content=new_text, current_content=self.store.texts[v]
            )
            reqs.append(
                ChatRequest.user(prompt, max_tokens=self.aggregate_max_tokens, temperature=0.0)
            )
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
        changed = [
            (v, c.text.strip())
            for v, c in zip(path, completions, strict=False)
            if c.ok and c.text.strip()
        ]
        failures = len(path) - len(changed)
        if changed:
            if self.parallel_updates:
                vectors = self.embedder.embed([t for _, t in changed])
            else:
                vectors = np.stack([self.embedder.embed([t])[0] for _, t in changed])
            for (v, text), vec in zip(changed, vectors, strict=False):
                self.store.set_text(v, text, vec)
        self.aggregation_failures += failures
        self.degrade("aggregation_failed", failures)  # those nodes keep their old summary
        return failures

    def insert_unit(self, unit: Unit, vector: np.ndarray | None = None) -> int:
        """Insert one unit (Algorithm 1) and return the index of its new leaf."""
        start = time.perf_counter()
        nodes_before = self.n_nodes
        if vector is None:
            vector = self.embedder.embed([unit.text])[0]
        path, attach = self.find_path(vector)
        if attach != ROOT and not self.store.children[attach]:
            self.expand_leaf(attach)
        failures = self.update_path(path, unit.text)
        leaf = self._new_node(
            content_id("memtree-leaf", unit.id, prefix="l-"), unit.text, vector, attach, unit.id, 1
        )
        for v in [ROOT, *path]:
            self.n_units[v] += 1
        self._raise_heights(leaf)
        self.insertions.append(
            {
                "unit": unit.id,
                "nodes_before": nodes_before,
                "leaf_depth": self.depth[leaf],
                "llm_calls": len(path),
                "failures": failures,
                "seconds": time.perf_counter() - start,
            }
        )
        return leaf

    def _raise_heights(self, node: int) -> None:
        levels, parents = self.store.levels, self.store.parents
        child = node
        while parents[child] and levels[parents[child][0]] < levels[child] + 1:
            p = parents[child][0]
            levels[p] = levels[child] + 1
            child = p

    def add(self, units: Sequence[Unit]) -> None:
        """Insert a batch in stream order (or in a seeded shuffle when ``insert_order_seed`` is set).

        A unit's embedding depends on its text only, so the whole batch is embedded in one request
        before the per-unit loop (which stays sequential: each insertion's path depends on the last)."""
        units = list(units)
        if self.insert_order_seed is not None:
            key = int(content_id(self.insert_order_seed, [u.id for u in units], length=8), 16)
            units = [units[i] for i in np.random.default_rng(key).permutation(len(units))]
        vectors = self.embedder.embed([u.text for u in units]) if units else []
        for unit, vector in zip(units, vectors, strict=False):
            self.insert_unit(unit, vector)

    # ------------------------------------------------------------------ forgetting
    def drop_units(self, unit_ids: set[str]) -> str:
        """Forget (docs/forgetting.md): the core removes the units' leaves and the nodes left empty;
        every ancestor that held their content is rewritten from its remaining children."""
        pruned = self.prune_store(unit_ids)
        kept = [old for old, new in enumerate(pruned.index) if new >= 0]
        self.depth = [self.depth[old] for old in kept]
        recompute_heights(self.store)
        self.n_units = [len(self.store.source_units(v)) for v in range(len(self.store))]
        self.tree_max_depth = max(self.depth)
        affected = sorted(pruned.affected, key=lambda v: (self.store.levels[v], v))
        self.rewrite_from_children(affected)
        return "prune_and_rewrite"

    def rewrite_from_children(self, nodes: Sequence[int]) -> int:
        """Rewrite each node's content from its children (children first), folding them in order with
        the aggregation prompt: the first child's text, then one call per further child. A failed
        call appends the child's text instead (no old content survives); returns the failures."""
        store, failures, texts = self.store, 0, {}
        for v in nodes:
            kids = store.children[v]
            current, n = store.texts[kids[0]], self.n_units[kids[0]]
            for c in kids[1:]:
                count = n if self.aggregate_count == "units" else kids.index(c)
                prompt = self.aggregate_prompt.format(
                    n_children=count, new_content=store.texts[c], current_content=current
                )
                request = ChatRequest.user(
                    prompt, max_tokens=self.aggregate_max_tokens, temperature=0.0
                )
                done = self.llm.complete([request])[0]
                ok = done.ok and done.text.strip()
                current = done.text.strip() if ok else f"{current}\n{store.texts[c]}"
                failures += 0 if ok else 1
                n += self.n_units[c]
            store.set_text(v, current)
            texts[v] = current
        if texts:
            vectors = self.embedder.embed(list(texts.values()))
            for v, vec in zip(texts, vectors, strict=True):
                store.set_text(v, texts[v], vec)
        self.degrade("forget_rewrite_failed", failures)
        return failures

    # ------------------------------------------------------------------ retrieval (kept for callers of the old API)
    def collapsed_retrieve(self, vector: np.ndarray, k: int) -> traverse.Ranked:
        return traverse.collapsed(self.store, vector, k, self.retrieve_threshold)

    def traversal_retrieve(self, vector: np.ndarray, k: int) -> traverse.Ranked:
        return traverse.top_down(self.store, vector, k, self.retrieve_threshold)

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Core diagnostics plus LLM calls per insertion (Table A.2) and the insertion settings."""
        calls = np.array([r["llm_calls"] for r in self.insertions], dtype=float)
        secs = np.array([r["seconds"] for r in self.insertions], dtype=float)
        insertion: dict[str, Any] = {"insertions": int(calls.size)}
        if calls.size:
            insertion.update(
                llm_calls_per_insertion_mean=float(calls.mean()),
                llm_calls_per_insertion_std=float(calls.std()),
                insertion_seconds_mean=float(secs.mean()),
                insertion_seconds_p95=float(np.percentile(secs, 95)),
                aggregation_failures=int(self.aggregation_failures),
            )
        config = {
            k: getattr(self, k)
            for k in (
                "base_threshold",
                "rate",
                "threshold_form",
                "max_depth",
                "traversal",
                "top_k",
                "insert_order_seed",
            )
        }
        return {
            **super().stats(),
            "insertion": insertion,
            "config": config,
            "insertions": list(self.insertions),
        }

    def state(self) -> dict[str, Any]:
        # the inserted units, so stats (units) and provenance lookups match the memory that was saved
        return {
            "depth": self.depth,
            "n_units": self.n_units,
            "insertions": self.insertions,
            "aggregation_failures": self.aggregation_failures,
            "units": [u.to_json() for u in self.units],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.depth, self.n_units = list(state["depth"]), list(state["n_units"])
        self.tree_max_depth = max(self.depth)
        self.insertions = list(state.get("insertions", []))
        self.aggregation_failures = int(state.get("aggregation_failures", 0))
        self.degradation["aggregation_failed"] = self.aggregation_failures
        self.units = [Unit.from_json(u) for u in state.get("units", [])]
