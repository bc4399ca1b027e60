"""Traversals τ over any hierarchy (theory paper, App. D), as named, reusable functions.

Each returns ranked ``(node, score)`` pairs; the memory turns them into items with
provenance and fills the token budget (``memsys.base.fill_budget``, optionally stopping at the
first item that overflows, as RAPTOR's code does).

- ``collapsed``: every node of every level in one pool, top-k by cosine (Alg. 2, RAPTOR's
  collapsed tree, MemTree's collapsed retrieval).
- ``collapsed_expand``: the same top-k, each retrieved non-leaf replaced by the atoms beneath it
  (Alg. 2 as the theory paper writes it: "expand any non-leaf in S to its atoms"); the threshold
  applies to the atoms' own cosine too, so no node below it is ever returned.
- ``top_down``: beam refinement from the top (Alg. 1): top-k of the entry nodes, then top-k of the
  children of the picked nodes, level by level. ``returns="all"`` gives every picked node
  (RAPTOR's and MemTree's traversal); ``returns="atoms"`` only the picked leaves (Alg. 1's S_0).
- ``llm_guided``: the loop of reasoning-based navigation (Alg. 3) with the selection and growth
  steps supplied by the system; CAM's Prune-and-Grow plugs in here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore

Ranked = list[tuple[int, float]]
TRAVERSALS = ("collapsed", "collapsed_expand", "top_down")


def top_k_positions(sims: np.ndarray, k: int, keys: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``k`` highest ``sims``, best first; ties by ``keys`` (default: position).

    Every candidate tied with the k-th value is kept before the exact sort and the cut, so which
    of the tied ones make the top k never depends on the partition's arbitrary order.
    """
    n = len(sims)
    if k <= 0 or not n:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        kth = np.partition(sims, n - k)[n - k]  # the k-th highest value
        cand = np.flatnonzero(sims >= kth)
    else:
        cand = np.arange(n)
    tie_keys = cand if keys is None else keys[cand]
    return cand[np.lexsort((tie_keys, -sims[cand]))][:k]


def _rank(nodes: Sequence[int], sims: np.ndarray, k: int, threshold: float) -> Ranked:
    """Top-k of ``nodes`` by similarity (ties by node index), dropping those below ``threshold``."""
    if k <= 0 or not len(nodes):
        return []
    nodes_arr = np.asarray(nodes)
    order = top_k_positions(sims, k, nodes_arr)
    order = order[sims[order] >= threshold]
    return [(int(nodes_arr[i]), float(sims[i])) for i in order]


def collapsed(store: HierarchyStore, vector: np.ndarray, k: int, threshold: float = -1.0) -> Ranked:
    """Top-k nodes by cosine over all levels (the content-less root excluded)."""
    if not len(store) or store.dim == 0:
        return []
    sims = store.similarities(vector)
    if store.root is not None:  # the content-less root can never rank nor pass a threshold
        sims[store.root] = -np.inf
        k = min(k, len(store) - 1)
    return _rank(np.arange(len(store)), sims, k, threshold)


def collapsed_expand(
    store: HierarchyStore, vector: np.ndarray, k: int, threshold: float = -1.0
) -> Ranked:
    """Collapsed top-k, each non-leaf replaced by its atoms (ordered by their own cosine); duplicates dropped.

    ``threshold`` filters the seeds and then the atoms they expand to, each by its own cosine.
    """
    out: Ranked = []
    seen: set[int] = set()
    for node, score in collapsed(store, vector, k, threshold):
        if not store.children[node]:
            atoms = [(node, score)]
        else:
            under = store.atoms_under(node)
            sims = store.similarities(vector, under)
            atoms = sorted(
                ((a, s) for a, s in zip(under, map(float, sims), strict=False) if s >= threshold),
                key=lambda a: (-a[1], a[0]),
            )
        for atom, s in atoms:
            if atom not in seen:
                seen.add(atom)
                out.append((atom, s))
    return out


def top_down(
    store: HierarchyStore, vector: np.ndarray, k: int, threshold: float = -1.0, returns: str = "all"
) -> Ranked:
    """Beam refinement: top-k entry nodes, then top-k among the children of the picked nodes, down to the leaves."""
    if returns not in ("all", "atoms"):
        raise ValueError(f"top_down returns must be 'all' or 'atoms', got {returns!r}")
    picked: Ranked = []
    frontier = store.entry_nodes()
    seen: set[int] = set()
    while frontier and k > 0:
        level = _rank(frontier, store.similarities(vector, frontier), k, threshold)
        picked.extend(level)
        seen.update(v for v, _ in level)
        frontier = list(
            dict.fromkeys(c for v, _ in level for c in store.children[v] if c not in seen)
        )
    if returns == "atoms":
        return [(v, s) for v, s in picked if not store.children[v]]
    return picked


@dataclass
class GuidedResult:
    """What an LLM-guided exploration selected, and a record of each turn."""

    selected: list[int]
    turns: list[dict] = field(default_factory=list)


STOP_RULES = ("candidates_unchanged", "no_growth")


def llm_guided(
    initial: Sequence[int],
    select: Callable[[list[int]], list[int] | None],
    grow: Callable[[list[int]], list[int]],
    max_turns: int,
    stop_when: str = "candidates_unchanged",
) -> GuidedResult:
    """Reasoning-based navigation (Alg. 3) as a loop with pluggable steps.

    ``select(candidates)`` asks the LLM which candidates help (None = the reply could not be used
    after the system's own retries; the turn is recorded and the loop ends); ``grow(selected)``
    gives the next candidates (children for Alg. 3; CAM adds same-level neighbours). The loop stops
    when nothing is selected, after ``max_turns`` turns, and by ``stop_when``:
    ``candidates_unchanged`` before a turn whose candidate set equals the previous turn's (CAM's
    released code); ``no_growth`` after a turn that selected no node not selected before (CAM's
    paper, Sec. 4.2: "until P no longer grows").
    """
    if stop_when not in STOP_RULES:
        raise ValueError(f"stop_when must be one of {' | '.join(STOP_RULES)}, got {stop_when!r}")
    candidates, selected, turns = list(initial), [], []
    previous: set[int] | None = None
    for turn in range(max_turns):
        if (
            stop_when == "candidates_unchanged"
            and previous is not None
            and set(candidates) == previous
        ):
            break
        chosen = select(candidates)
        turns.append({"turn": turn, "candidates": list(candidates), "selected": chosen})
        if not chosen:
            break
        grown = [v for v in dict.fromkeys(chosen) if v not in selected]
        selected.extend(grown)
        if stop_when == "no_growth" and not grown:
            break
        previous, candidates = set(candidates), grow(chosen)
    return GuidedResult(selected=selected, turns=turns)


def children_of(store: HierarchyStore) -> Callable[[list[int]], list[int]]:
    """Alg. 3's growth step: the selected nodes' children (leaves stay as they are)."""

    def grow(selected: list[int]) -> list[int]:
        return list(dict.fromkeys(c for v in selected for c in (store.children[v] or [v])))

    return grow
