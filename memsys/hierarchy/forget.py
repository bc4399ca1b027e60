"""Forgetting on the hierarchy core: a rule every hierarchy shares, and the compaction it needs.

The rule (docs/forgetting.md): forgetting source units strips them from every node that holds
them; a node left with no units of its own and no children is removed, and so, in turn, is a
parent left without children and units. Every surviving node above a removed or stripped node is
*affected*: its representative was derived from the forgotten content and must be rewritten by
the system (its own ρ) before anything is retrieved again. The store is compacted (indices are
dense: removed nodes leave no gap) and the old -> new index map is returned so a system can carry
its per-node state across.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from memharness.memsys.hierarchy.store import HierarchyStore


@dataclass
class Pruned:
    """The store without the forgotten units and what the system still has to do."""

    store: HierarchyStore
    index: list[int]  # old node -> new node, -1 when removed
    removed: int
    affected: list[int]  # new indices whose representative must be rewritten, children first


def nodes_to_remove(store: HierarchyStore, forgotten: Collection[str]) -> tuple[set[int], set[int]]:
    """(removed nodes, stripped nodes): the rule above on the old indices."""
    stripped = {v for v in range(len(store)) if set(store.units[v]) & set(forgotten)}
    removed: set[int] = set()
    stack = list(stripped)
    while stack:
        v = stack.pop()
        if v in removed or v == store.root:
            continue
        own = [u for u in store.units[v] if u not in forgotten]
        if not own and all(c in removed for c in store.children[v]):
            removed.add(v)
            stack.extend(store.parents[v])
    return removed, stripped


def ancestors(store: HierarchyStore, nodes: Collection[int]) -> set[int]:
    """Every node above ``nodes`` (the nodes themselves excluded unless one is above another)."""
    out: set[int] = set()
    stack = [p for v in nodes for p in store.parents[v]]
    while stack:
        v = stack.pop()
        if v not in out:
            out.add(v)
            stack.extend(store.parents[v])
    return out


def prune_units(store: HierarchyStore, forgotten: Collection[str]) -> Pruned:
    """Apply the forgetting rule to ``store``; return the compacted store and the affected nodes."""
    forgotten = set(forgotten)
    removed, stripped = nodes_to_remove(store, forgotten)
    affected_old = (ancestors(store, removed | stripped) | stripped) - removed
    affected_old.discard(store.root)  # the content-less root has no representative to rewrite
    keep = [v for v in range(len(store)) if v not in removed]
    index = [-1] * len(store)
    for new, old in enumerate(keep):
        index[old] = new
    out = HierarchyStore(with_root=False)
    emb = store.embeddings if store.dim else None
    for old in keep:
        out.add_node(
            store.ids[old],
            store.texts[old],
            None if emb is None else emb[old],
            store.levels[old],
            units=tuple(u for u in store.units[old] if u not in forgotten),
            meta=store.meta[old],
        )
    for old in keep:
        new = index[old]
        out.edges[new] = {index[u]: w for u, w in store.edges[old].items() if index[u] >= 0}
        for c in store.children[old]:
            if index[c] >= 0:
                out.children[new].append(index[c])
                out.parents[index[c]].append(new)
    out.root = None if store.root is None else index[store.root]
    affected = sorted((index[v] for v in affected_old), key=lambda v: (out.levels[v], v))
    return Pruned(out, index, len(removed), affected)


def recompute_heights(store: HierarchyStore) -> None:
    """Set every node's level to its height (0 for a leaf), for hierarchies whose level is height
    (MemTree): removing a subtree can lower the nodes above it."""
    height: dict[int, int] = {}

    def of(v: int) -> int:
        if v not in height:
            height[v] = 1 + max((of(c) for c in store.children[v]), default=-1)
        return height[v]

    for v in range(len(store)):
        store.levels[v] = of(v)
