"""One store for every hierarchical memory (theory paper, Sec. 2.1): a DAG of nodes by level.

Level 0 holds the atoms V_0 (what extraction α produced); each coarsening C_ℓ = (π, ρ) adds the
representatives of level ℓ with edges to the groups they summarise. A node may have several
parents (RAPTOR's soft clusters, CAM's overlapping communities), and nodes of one level may be
joined by weighted same-level edges (CAM's foundational network). MemTree's content-less root is
an optional node (``with_root``) that no traversal returns.

Every node answers "which source units am I made of?" (``source_units``): the units attached to
the node itself and to everything beneath it, in node order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memharness.memsys.services import files as fileio
from memharness.memsys.types import RetrievedItem

FORMAT = "memharness.hierarchy/1"


class HierarchyStore:
    """Nodes (text, embedding, level, children, parents, units, metadata) in parallel lists.

    Indices are dense and stable (nodes are never deleted); ``ids`` are content-addressed
    strings chosen by the system. Embeddings live in one float32 matrix grown by doubling,
    so similarity to every node is one matrix-vector product.
    """

    def __init__(self, with_root: bool = False) -> None:
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.levels: list[int] = []
        self.children: list[list[int]] = []
        self.parents: list[list[int]] = []
        self.units: list[
            tuple[str, ...]
        ] = []  # source units held by the node itself (atoms: their unit)
        self.meta: list[dict[str, Any]] = []
        self.edges: list[dict[int, float]] = []  # same-level edges, symmetric
        self._emb: np.ndarray | None = None
        self._tokens: list[int | None] = []
        self._prov: dict[int, tuple[str, ...]] = {}
        self.root: int | None = None
        if with_root:
            self.root = self.add_node("root", "", None, level=0)

    # ------------------------------------------------------------------ building
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        return 0 if self._emb is None else self._emb.shape[1]

    @property
    def embeddings(self) -> np.ndarray:
        """The (n, dim) embedding matrix (a content-less root's row is zero)."""
        return (
            self._emb[: len(self)]
            if self._emb is not None
            else np.zeros((len(self), 0), np.float32)
        )

    def _grow(self, dim: int, needed: int) -> None:
        if self._emb is None:
            self._emb = np.zeros((max(16, needed), dim), dtype=np.float32)
        elif needed > self._emb.shape[0]:
            grown = np.zeros(
                (max(needed, 2 * self._emb.shape[0]), self._emb.shape[1]), dtype=np.float32
            )
            grown[: self._emb.shape[0]] = self._emb
            self._emb = grown

    def add_node(
        self,
        node_id: str,
        text: str,
        vector: np.ndarray | None,
        level: int,
        children: Iterable[int] = (),
        units: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> int:
        """Append a node (and its edges to ``children``); return its index."""
        idx = len(self.ids)
        if vector is not None:
            self._grow(int(vector.shape[0]), idx + 1)
            self._emb[idx] = vector
        elif self._emb is not None:
            self._grow(self._emb.shape[1], idx + 1)
            self._emb[idx] = 0.0
        self.ids.append(node_id)
        self.texts.append(text)
        self.levels.append(int(level))
        self.children.append([])
        self.parents.append([])
        self.units.append(tuple(units))
        self.meta.append(dict(meta or {}))
        self.edges.append({})
        self._tokens.append(None)
        for c in children:
            self.link(idx, c)
        return idx

    def add_nodes(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: np.ndarray,
        level: int,
        units: Sequence[Sequence[str]] | None = None,
    ) -> list[int]:
        """Append a batch of nodes of one level (atoms, usually); return their indices."""
        units = units if units is not None else [()] * len(ids)
        return [
            self.add_node(i, t, v, level, units=u)
            for i, t, v, u in zip(ids, texts, vectors, units, strict=False)
        ]

    def link(self, parent: int, child: int) -> None:
        """Make ``child`` a member of ``parent``'s group (idempotent)."""
        if child in self.children[parent]:
            return
        self.children[parent].append(child)
        self.parents[child].append(parent)
        self._invalidate_up(parent)

    def set_text(self, node: int, text: str, vector: np.ndarray | None = None) -> None:
        """Replace a node's representative text (and embedding)."""
        self.texts[node] = text
        self._tokens[node] = None
        if vector is not None:
            self._grow(int(vector.shape[0]), len(self))
            self._emb[node] = vector

    def add_edge(self, u: int, v: int, weight: float) -> None:
        """A symmetric same-level edge (CAM's foundational network)."""
        if u != v:
            self.edges[u][v] = float(weight)
            self.edges[v][u] = float(weight)

    def _invalidate_up(self, node: int) -> None:
        stack, seen = [node], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            self._prov.pop(v, None)
            stack.extend(self.parents[v])

    # ------------------------------------------------------------------ reading
    def is_empty(self) -> bool:
        """True when the store holds no node with content."""
        return len(self) == (0 if self.root is None else 1)

    def content_nodes(self) -> list[int]:
        """Every node but the content-less root."""
        return [v for v in range(len(self)) if v != self.root]

    def leaves(self) -> list[int]:
        """Nodes without children (the root of an empty tree excluded)."""
        return [v for v in range(len(self)) if not self.children[v] and v != self.root]

    def entry_nodes(self) -> list[int]:
        """Where top-down search starts: the root's children, else the nodes of the top level."""
        if self.root is not None:
            return list(self.children[self.root])
        if not self.ids:
            return []
        top = max(self.levels)
        return [v for v in range(len(self)) if self.levels[v] == top]

    def max_level(self) -> int:
        nodes = self.content_nodes()
        return max((self.levels[v] for v in nodes), default=0)

    def nodes_at_level(self, level: int) -> list[int]:
        return [v for v in self.content_nodes() if self.levels[v] == level]

    def depths(self) -> dict[int, int]:
        """Shortest distance from the top: the root's children (or parentless nodes) are at depth 1."""
        start = (
            self.children[self.root]
            if self.root is not None
            else [v for v in range(len(self)) if not self.parents[v]]
        )
        depth = {v: 1 for v in start}
        frontier = list(start)
        while frontier:
            nxt = []
            for v in frontier:
                for c in self.children[v]:
                    if c not in depth:
                        depth[c] = depth[v] + 1
                        nxt.append(c)
            frontier = nxt
        return depth

    def descendants(self, node: int) -> list[int]:
        """``node`` and everything beneath it, in node order."""
        seen, stack = {node}, [node]
        while stack:
            for c in self.children[stack.pop()]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return sorted(seen)

    def atoms_under(self, node: int) -> list[int]:
        """The leaves beneath ``node`` (itself if it is a leaf), in node order."""
        return [v for v in self.descendants(node) if not self.children[v]]

    def source_units(self, node: int) -> tuple[str, ...]:
        """Ids of the source units the node is made of, first occurrence in node order."""
        if node not in self._prov:
            self._prov[node] = tuple(
                dict.fromkeys(u for v in self.descendants(node) for u in self.units[v])
            )
        return self._prov[node]

    def tokens(self, node: int, tokenizer: Any) -> int:
        if self._tokens[node] is None:
            self._tokens[node] = (
                tokenizer.count(self.texts[node])
                if tokenizer is not None
                else len(self.texts[node].split())
            )
        return self._tokens[node]

    def similarities(self, vector: np.ndarray, nodes: Sequence[int] | None = None) -> np.ndarray:
        """Cosine of ``vector`` with the given nodes (all nodes when None; unit-norm embeddings)."""
        emb = self.embeddings
        if emb.shape[1] == 0:
            return np.zeros(len(self) if nodes is None else len(nodes), np.float32)
        return emb @ vector if nodes is None else emb[list(nodes)] @ vector

    def item(self, node: int, score: float, tokenizer: Any) -> RetrievedItem:
        """A retrieved item with the node's provenance."""
        return RetrievedItem(
            text=self.texts[node],
            score=float(score),
            node_id=self.ids[node],
            level=self.levels[node],
            source_unit_ids=self.source_units(node),
            tokens=self.tokens(node, tokenizer),
        )

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        nodes = [
            {
                "id": self.ids[v],
                "text": self.texts[v],
                "level": self.levels[v],
                "children": self.children[v],
                "units": list(self.units[v]),
                **({"meta": self.meta[v]} if self.meta[v] else {}),
                **(
                    {"edges": {str(k): w for k, w in self.edges[v].items()}}
                    if self.edges[v]
                    else {}
                ),
            }
            for v in range(len(self))
        ]
        return {"format": FORMAT, "root": self.root, "nodes": nodes}

    @classmethod
    def from_json(cls, data: dict[str, Any], embeddings: np.ndarray | None) -> HierarchyStore:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document (format={data.get('format')!r})")
        store = cls(with_root=False)
        for n in data["nodes"]:
            v = store.add_node(
                n["id"], n["text"], None, n["level"], units=n.get("units", ()), meta=n.get("meta")
            )
            store.edges[v] = {int(k): float(w) for k, w in n.get("edges", {}).items()}
        for v, n in enumerate(data["nodes"]):
            for c in n["children"]:
                store.children[v].append(c)
                store.parents[c].append(v)
        store.root = data.get("root")
        if embeddings is not None and len(embeddings):
            store._emb = np.ascontiguousarray(embeddings, dtype=np.float32)
        return store

    def save(self, folder: str | Path, extra: dict[str, Any] | None = None) -> None:
        """Write ``hierarchy.json`` (with ``extra`` system state) and ``embeddings.npy`` atomically."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        doc = {**self.to_json(), **(extra or {})}
        fileio.write_json(out / "hierarchy.json", doc, ensure_ascii=False)
        fileio.atomic_write(
            out / "embeddings.npy", lambda f: np.save(f, self.embeddings), mode="wb"
        )

    @classmethod
    def load(cls, folder: str | Path) -> tuple[HierarchyStore, dict[str, Any]]:
        """Read a saved store; returns it and the whole JSON document (for system state)."""
        folder = Path(folder)
        if not (folder / "hierarchy.json").is_file():
            raise FileNotFoundError(
                f"{folder} holds no hierarchy.json (a MemTree saved before the hierarchy core, as "
                "tree.json, is no longer read): build it again; with the call cache that makes no "
                "new LLM calls"
            )
        doc = json.loads((folder / "hierarchy.json").read_text(encoding="utf-8"))
        npy = folder / "embeddings.npy"
        return cls.from_json(doc, fileio.load_npy(npy) if npy.exists() else None), doc
