"""CAM's foundational network (Sec. 4.1.1, eq. 2) and ego-centric disentanglement (Sec. 4.1.2).

Nodes are string ids; every function takes the level's ``order`` (id -> position in the level)
so that results never depend on dict or set iteration order.

Replicas ("personas" in the released code) are integers handed out by one counter per level. A
node's replicas correspond one-to-one to the connected components of its ego-network G[N(v)]
(the neighbours of v and the edges among them, v itself excluded); an isolated node has one
replica. Edge (u, v) of the level maps to the replica edge (u's replica whose component holds v,
v's replica whose component holds u), as the paper defines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

Adjacency = dict[str, dict[str, float]]


def composite_similarity(
    new_vectors: np.ndarray,
    vectors: np.ndarray,
    new_positions: Sequence[int],
    positions: Sequence[int],
    new_documents: Sequence[str],
    documents: Sequence[str],
    alpha: float,
    sigma: float,
    clip_cosine: bool = False,
) -> np.ndarray:
    """Eq. 2 for every new chunk (rows) against every chunk (columns).

    s = α·cos + (1−α)·exp(−(i−j)²/2σ²); the proximity term is 0 between chunks of different
    documents (App. E). ``clip_cosine`` floors the cosine at 0 as the released code does (the
    paper writes the plain cosine). Embeddings are unit-norm, so the cosine is a dot product.
    """
    cos = new_vectors.astype(np.float64) @ vectors.astype(np.float64).T
    if clip_cosine:
        cos = np.maximum(cos, 0.0)
    diff = (
        np.asarray(new_positions, dtype=np.float64)[:, None]
        - np.asarray(positions, dtype=np.float64)[None, :]
    )
    proximity = np.exp(-(diff**2) / (2.0 * sigma**2))
    code = {d: i for i, d in enumerate(dict.fromkeys([*documents, *new_documents]))}
    same_doc = (
        np.array([code[d] for d in new_documents])[:, None]
        == np.array([code[d] for d in documents])[None, :]
    )
    return alpha * cos + (1.0 - alpha) * proximity * same_doc


def expand_network(
    adj: Adjacency,
    new_ids: Sequence[str],
    ids: Sequence[str],
    sims: np.ndarray,
    theta: float,
    k: int,
) -> list[tuple[str, str, float]]:
    """Connect each new chunk to its top-k chunks with s >= θ (Sec. 4.1.1); return the new edges.

    ``sims[r, c]`` is s(new_ids[r], ids[c]); the chunk itself is never a candidate. Ties in s keep
    the level order (a stable sort, as the released code). Edges are undirected, so a chunk's degree
    can exceed k; an edge proposed from both ends is added once.
    """
    column = {v: c for c, v in enumerate(ids)}
    added: list[tuple[str, str, float]] = []
    for r, v in enumerate(new_ids):
        row = sims[r].copy()
        row[column[v]] = -np.inf
        above = np.flatnonzero(row >= theta)
        top = above[np.argsort(-row[above], kind="stable")][:k]
        for c in top:
            u = ids[int(c)]
            if u not in adj[v]:
                adj[v][u] = adj[u][v] = float(row[c])
                added.append((v, u, float(row[c])))
    return added


def ego_changes(
    old: Mapping[str, Mapping[str, float]], new: Mapping[str, Mapping[str, float]]
) -> set[str]:
    """Nodes whose ego-network G[N(v)] differs between two versions of a level's graph.

    That is every node whose own neighbour set changed, and every common neighbour c of the two
    ends of an edge (a, b) that appeared or disappeared: a and b both lie in N(c), so the edges
    among c's neighbours changed although c's own edges did not (``N_new(a) & N_new(b)`` for an
    added edge, ``N_old(a) & N_old(b)`` for a removed one). Nodes present in only one version count.
    """
    out: set[str] = set()
    empty: Mapping[str, float] = {}
    for v in set(old) | set(new):
        before, after = old.get(v, empty), new.get(v, empty)
        if before.keys() == after.keys():
            continue
        out.add(v)
        for u in after.keys() - before.keys():  # added edges (v, u)
            out |= after.keys() & new.get(u, empty).keys()
        for u in before.keys() - after.keys():  # removed edges (v, u)
            out |= before.keys() & old.get(u, empty).keys()
    return out


def ego_components(
    adj: Mapping[str, Mapping[str, float]], v: str, order: Mapping[str, int], split: bool = True
) -> list[tuple[str, ...]]:
    """Connected components of v's ego-network without v, each in level order, ordered by first member.

    ``split=False`` (the "w/o flexibility" variant of Table 3) returns all neighbours as one group,
    so every node keeps a single replica and the clustering is a plain partition.
    """
    neighbours = sorted(adj[v], key=order.__getitem__)
    if not split:
        return [tuple(neighbours)] if neighbours else []
    inside, seen, out = set(neighbours), set(), []
    for start in neighbours:
        if start in seen:
            continue
        seen.add(start)
        comp, stack = [start], [start]
        while stack:
            for w in adj[stack.pop()]:
                if w in inside and w not in seen:
                    seen.add(w)
                    comp.append(w)
                    stack.append(w)
        out.append(tuple(sorted(comp, key=order.__getitem__)))
    return out


@dataclass
class Replicas:
    """The replica network G̃ of one level and its labels (the clustering state)."""

    owner: dict[int, str] = field(default_factory=dict)  # replica -> node
    members: dict[int, frozenset[str]] = field(default_factory=dict)  # replica -> its ego component
    of_node: dict[str, list[int]] = field(default_factory=dict)  # node -> its replicas
    via: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # node -> neighbour -> node's replica
    adj: dict[int, set[int]] = field(default_factory=dict)
    label: dict[int, int] = field(default_factory=dict)
    next_id: int = 0

    def _new(self, node: str, comp: Iterable[str]) -> int:
        r = self.next_id
        self.next_id += 1
        self.owner[r], self.members[r], self.adj[r] = node, frozenset(comp), set()
        self.label[r] = r  # a fresh label: replica ids are never reused, so it is unique
        return r

    def _retire(self, r: int) -> None:
        for q in self.adj.pop(r):
            self.adj[q].discard(r)
        del self.owner[r], self.members[r], self.label[r]

    def _drop_edges(self, node: str) -> None:
        for r in self.of_node.get(node, []):
            for q in self.adj[r]:
                self.adj[q].discard(r)
            self.adj[r] = set()

    def remove_nodes(self, nodes: Iterable[str]) -> set[int]:
        """Retire the replicas of removed nodes; return the replicas whose neighbourhood lost them."""
        touched: set[int] = set()
        for v in nodes:
            for r in self.of_node.pop(v, []):
                touched |= self.adj[r]
                self._retire(r)
            self.via.pop(v, None)
        return {r for r in touched if r in self.owner}

    def resplit(
        self, adj: Adjacency, nodes: Sequence[str], order: Mapping[str, int], split: bool = True
    ) -> tuple[set[int], set[int]]:
        """Rebuild the replicas of ``nodes`` (the affected set A) and the replica edges they touch.

        A new component inherits the replica (and label) of the old component it overlaps most
        (ties: the older replica); a component without one gets a fresh replica and label; old
        replicas left without a component are retired. Returns (new replicas, affected replicas),
        the latter being the new ones plus every surviving replica whose neighbourhood changed.
        """
        nodes = sorted(set(nodes), key=order.__getitem__)
        before = {}
        for v in nodes:
            for r in self.of_node.get(v, []):
                before[r] = set(self.adj[r])
                before.update({q: set(self.adj[q]) for q in self.adj[r] if q not in before})
        for v in nodes:
            self._drop_edges(v)
        fresh: set[int] = set()
        for v in nodes:
            comps = ego_components(adj, v, order, split) or [()]
            old, kept, via = list(self.of_node.get(v, [])), [], {}
            for comp in comps:
                # (overlap, older first); an isolated node's replica (no members) carries over too
                best = max(
                    ((len(self.members[r] & set(comp)), -r) for r in old if r not in kept),
                    default=None,
                )
                if best is not None and (best[0] > 0 or not self.members[-best[1]]):
                    r = -best[1]
                    self.members[r] = frozenset(comp)
                else:
                    r = self._new(v, comp)
                    fresh.add(r)
                kept.append(r)
                via.update({u: r for u in comp})
            for r in old:
                if r not in kept:
                    self._retire(r)
            self.of_node[v], self.via[v] = kept, via
        for v in nodes:
            for u in adj[v]:
                a, b = self.via[v][u], self.via[u][v]
                self.adj[a].add(b)
                self.adj[b].add(a)
        changed = {r for r, old_adj in before.items() if r in self.owner and self.adj[r] != old_adj}
        changed |= {q for r in fresh for q in self.adj[r]}
        return fresh, fresh | changed

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict:
        return {
            "next_id": self.next_id,
            "replicas": [
                [r, self.owner[r], sorted(self.members[r]), self.label[r]]
                for r in sorted(self.owner)
            ],
            "edges": sorted([r, q] for r in self.adj for q in self.adj[r] if r < q),
        }

    @classmethod
    def from_json(cls, doc: dict) -> Replicas:
        out = cls(next_id=int(doc["next_id"]))
        for r, node, members, label in doc["replicas"]:
            out.owner[r], out.members[r], out.label[r], out.adj[r] = (
                node,
                frozenset(members),
                label,
                set(),
            )
            out.of_node.setdefault(node, []).append(r)
            out.via.setdefault(node, {}).update({u: r for u in members})
        for r, q in doc["edges"]:
            out.adj[r].add(q)
            out.adj[q].add(r)
        return out


def link_shared_entities(
    adj: Adjacency,
    new_ids: Sequence[str],
    ids: Sequence[str],
    sims: np.ndarray,
    entities: Mapping[str, Iterable[str]],
    theta: float,
    k: int,
) -> list[tuple[str, str, float]]:
    """CAM w/ FM: link each new chunk to up to k chunks sharing an entity; return the new edges.

    Candidates are ranked by the number of shared entities, then by s (``sims`` as in
    ``expand_network``), then level order; a pair already linked is skipped and does not use one of
    the k places. The edge weight is max(s, θ): an entity link counts at least as the threshold.
    """
    column = {v: c for c, v in enumerate(ids)}
    holders: dict[str, list[str]] = {}
    for v in ids:
        for name in entities.get(v, ()):
            holders.setdefault(name, []).append(v)
    added: list[tuple[str, str, float]] = []
    for r, v in enumerate(new_ids):
        shared: dict[str, int] = {}
        for name in set(entities.get(v, ())):
            for u in holders.get(name, ()):
                if u != v:
                    shared[u] = shared.get(u, 0) + 1
        ranked = sorted(shared, key=lambda u: (-shared[u], -sims[r, column[u]], column[u]))
        for u in [u for u in ranked if u not in adj[v]][:k]:
            weight = max(float(sims[r, column[u]]), float(theta))
            adj[v][u] = adj[u][v] = weight
            added.append((v, u, weight))
    return added
