"""CAM's clustering on the replica network (Sec. 4.1.3): label propagation, size caps, super-graph.

Label propagation is the *semi-synchronous* variant of Cordasco & Gargano (2010) that the released
code runs through ``networkx.community.label_propagation_communities``: the graph is coloured
greedily (largest degree first, ties in node order) so that neighbours never share a colour; each
round updates the colour classes one after another, every node taking the label most frequent
among its neighbours (unweighted; on a tie it keeps its own label if that is among the most
frequent, else takes the largest, "Prec-Max"); the loop ends when every node holds one of its
most frequent labels. Fed every replica at once this is exactly that function.

The online form (Sec. 4.1.3) runs the same rounds over the *active* replicas only (the affected
set Ã): they are coloured as the subgraph they induce, their labels are read from their whole
neighbourhood, and when a label changes the node's neighbours join the active set for the next
round. The paper gives no iteration limit; ``max_rounds`` is the config's (reaching it is recorded).
Which replicas re-label is ``label_scope`` (``develop.py``; the paper is vague about it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memharness.memsys.cam.network import Adjacency, Replicas


def greedy_colouring(nodes: Sequence[int], adj: Mapping[int, set[int]]) -> list[list[int]]:
    """Colour classes of the subgraph induced by ``nodes`` (networkx's ``largest_first`` greedy order)."""
    inside = set(nodes)
    degree = {v: len(adj[v] & inside) for v in nodes}
    colour: dict[int, int] = {}
    for v in sorted(nodes, key=lambda v: -degree[v]):  # stable: ties keep the given order
        used = {colour[u] for u in adj[v] if u in colour and u in inside}
        c = 0
        while c in used:
            c += 1
        colour[v] = c
    classes: list[list[int]] = [[] for _ in range(max(colour.values(), default=-1) + 1)]
    for v in nodes:
        classes[colour[v]].append(v)
    return classes


def _most_frequent(v: int, label: Mapping[int, int], adj: Mapping[int, set[int]]) -> set[int]:
    counts = Counter(label[u] for u in adj[v])
    top = max(counts.values())
    return {lab for lab, n in counts.items() if n == top}


def _settled(v: int, label: Mapping[int, int], adj: Mapping[int, set[int]]) -> bool:
    return not adj[v] or label[v] in _most_frequent(v, label, adj)


@dataclass
class Propagation:
    """What one propagation did: rounds run, whether the limit stopped it, labels changed, final active set."""

    rounds: int
    hit_limit: bool
    changed: set[int]
    active: set[int]


def propagate_labels(
    replicas: Replicas, active: Iterable[int], max_rounds: int | None, ripple: bool = True
) -> Propagation:
    """Semi-synchronous majority-label propagation over the active replicas (see the module doc);
    ``ripple=False`` keeps the active set fixed (a changed label does not activate its neighbours)."""
    adj, label = replicas.adj, replicas.label
    active = {r for r in active if r in replicas.owner}
    changed: set[int] = set()
    rounds, classes, coloured_for = 0, [], None
    while not all(_settled(v, label, adj) for v in active):
        if max_rounds is not None and rounds >= max_rounds:
            return Propagation(rounds, True, changed, active)
        if coloured_for != active:
            classes, coloured_for = greedy_colouring(sorted(active), adj), set(active)
        grown: set[int] = set()
        for nodes in classes:
            for v in nodes:
                if not adj[v]:
                    continue
                top = _most_frequent(v, label, adj)
                new = (
                    next(iter(top))
                    if len(top) == 1
                    else (label[v] if label[v] in top else max(top))
                )
                if new != label[v]:
                    label[v] = new
                    changed.add(v)
                    if ripple:
                        grown |= adj[v]
        active |= grown
        rounds += 1
    return Propagation(rounds, False, changed, active)


def communities(
    replicas: Replicas, max_size: int | None, order: Mapping[str, int]
) -> list[tuple[tuple[int, int], tuple[str, ...]]]:
    """Label groups cut to ``max_size`` replicas, mapped back to nodes: [((label, slice), nodes)].

    Groups come in the order of their first replica (as networkx lists them); an oversized group
    is cut into consecutive slices of ``max_size`` replicas as the released code does, in replica
    order (the code slices in Python set order). A node whose replicas land in several groups
    belongs to several communities; its replicas inside one slice count once.
    """
    groups: dict[int, list[int]] = {}
    for r in sorted(replicas.owner):
        groups.setdefault(replicas.label[r], []).append(r)
    out = []
    for lab, reps in groups.items():
        size = max_size if max_size else len(reps)
        for s, start in enumerate(range(0, len(reps), size)):
            nodes = {replicas.owner[r] for r in reps[start : start + size]}
            out.append(((lab, s), tuple(sorted(nodes, key=order.__getitem__))))
    return out


def super_edges(groups: Mapping[str, Sequence[str]], adj: Adjacency) -> Adjacency:
    """Edges of the next level (released code): two communities are joined when they share a member
    or when a level edge runs between a member of one and a member of the other."""
    member_of: dict[str, list[str]] = {}
    for sid, members in groups.items():
        for v in members:
            member_of.setdefault(v, []).append(sid)
    out: Adjacency = {sid: {} for sid in groups}
    for sids in member_of.values():
        for i, a in enumerate(sids):
            for b in sids[i + 1 :]:
                out[a][b] = out[b][a] = 1.0
    for u, nbrs in adj.items():
        for v in nbrs:
            for a in member_of.get(u, ()):
                for b in member_of.get(v, ()):
                    if a != b:
                        out[a][b] = out[b][a] = 1.0
    return out


@dataclass
class ClusterPlan:
    """How the new communities of a level map onto the supernodes of the level above."""

    assignment: list[
        tuple[str | None, tuple[int, int], tuple[str, ...]]
    ]  # (supernode or None = new, key, members)
    resummarise: set[str]  # kept supernodes whose members or member texts changed
    removed: list[str]  # supernodes whose community is gone


def plan_clusters(
    old: Mapping[str, tuple[tuple[int, int], tuple[str, ...]]],
    new: Sequence[tuple[tuple[int, int], tuple[str, ...]]],
    dirty: set[str],
) -> ClusterPlan:
    """Match new communities to existing supernodes: first by identical members, then by label key.

    A community matched by members is re-summarised only if one of its members changed text
    (``dirty``); one matched by key changed members and is re-summarised; the rest are new.
    """
    by_members = {members: sid for sid, (_, members) in old.items()}
    by_key = {key: sid for sid, (key, _) in old.items()}
    used: set[str] = set()
    slots: list[str | None] = [None] * len(new)
    for i, (_, members) in enumerate(new):
        sid = by_members.get(members)
        if sid is not None and sid not in used:
            slots[i] = sid
            used.add(sid)
    resummarise = {sid for sid in used if dirty.intersection(old[sid][1])}
    for i, (key, _) in enumerate(new):
        sid = by_key.get(key)
        if slots[i] is None and sid is not None and sid not in used:
            slots[i] = sid
            used.add(sid)
            resummarise.add(sid)
    assignment = [(slots[i], key, members) for i, (key, members) in enumerate(new)]
    return ClusterPlan(assignment, resummarise, [sid for sid in old if sid not in used])
