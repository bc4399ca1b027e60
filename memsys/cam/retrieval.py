"""CAM's Prune-and-Grow retrieval (Sec. 4.2) on the hierarchy core's LLM-guided traversal.

1. Fast localisation: cosine top-s over every node of every level (paper s = 5; code 10).
2. Associative exploration (``traverse.llm_guided``): the LLM picks the helpful candidates from a
   numbered list ("Passage i: ...", reply a list such as [1, 3, 5]); the picked nodes, their
   same-level neighbours and their children are the next candidates; the loop ends when nothing
   is picked, after ``max_turns`` turns, or by ``stop_when``: ``no_growth`` (paper, Sec. 4.2: when
   the activation set P no longer grows, i.e. a turn picks no node not picked before) or
   ``candidates_unchanged`` (released code: before a turn whose candidates equal the last turn's).
   A reply that cannot be parsed is asked again while the question's ``tolerance`` lasts (shared
   by all turns, as in the code); each failure is counted; when it runs out the loop ends.
3. Evidence (released code): every picked node, or the initial top-s if none was picked, in the
   code's node order (level 0 by chunk position, then each higher level in its order);
   consecutive level-0 chunks are merged into one passage.

Candidates after the first turn are listed in that same node order (the code lists them in
Python set order).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.types import ChatRequest

SELECTION_PARSES = ("strict", "lenient")
_LIST = re.compile(r"\[[^\[\]]*\]")


def parse_selection(reply: str, n: int, mode: str = "lenient") -> list[int] | None:
    """0-based indices of the picked passages (1..n in the reply), or None when unparsable.

    ``strict`` (released code): the whole reply must be a list literal. ``lenient``: the first
    bracketed list in the reply, any text around it ignored. Numbers outside 1..n are dropped;
    an element that ``int()`` cannot read makes the reply unparsable (as in the code).
    """
    text = reply.strip()
    if mode == "lenient":
        match = _LIST.search(text)
        if match is None:
            return None
        text = match.group(0)
    elif mode != "strict":
        raise ValueError(
            f"memory.selection_parse must be one of {' | '.join(SELECTION_PARSES)}, got {mode!r}"
        )
    try:
        value = ast.literal_eval(text)
        picked = {int(i) - 1 for i in value} if isinstance(value, (list, tuple, set)) else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if picked is None:
        return None
    return sorted(i for i in picked if 0 <= i < n)


def numbered_passages(texts: Sequence[str]) -> str:
    return "\n".join(f"Passage {i + 1}: {t}" for i, t in enumerate(texts))


@dataclass
class Exploration:
    """One question's Prune-and-Grow record."""

    evidence: list[int]
    initial: list[int]
    turns: list[dict[str, Any]] = field(default_factory=list)
    parse_failures: int = 0
    call_failures: int = 0
    selection_calls: int = 0
    exhausted: bool = False

    @property
    def fallback(self) -> bool:
        return not any(t["selected"] for t in self.turns)


def node_order(store: HierarchyStore, nodes: Sequence[int]) -> list[int]:
    """The released code's node-id order: by level, then by position within the level (= store index)."""
    return sorted(set(nodes), key=lambda v: (store.levels[v], v))


def grow_step(store: HierarchyStore) -> Callable[[list[int]], list[int]]:
    """Next candidates: the picked nodes, their same-level neighbours and their children."""

    def grow(selected: list[int]) -> list[int]:
        out = set(selected)
        for v in selected:
            out.update(store.edges[v])
            out.update(store.children[v])
        return node_order(store, out)

    return grow


def explore(
    store: HierarchyStore,
    vector: np.ndarray,
    question: str,
    llm: Any,
    *,
    top_k: int,
    max_turns: int,
    tolerance: int,
    prompt: str,
    max_tokens: int,
    parse: str,
    retry_temperature: float,
    stop_when: str = "no_growth",
) -> Exploration:
    """Run Prune-and-Grow for one question; the evidence nodes come back in the code's order."""
    initial = [v for v, _ in traverse.collapsed(store, vector, top_k)]
    record = Exploration(evidence=[], initial=initial)
    budget = {"left": tolerance}

    def select(candidates: list[int]) -> list[int] | None:
        passages = numbered_passages([store.texts[v] for v in candidates])
        attempt = 0
        while True:
            request = ChatRequest.user(
                prompt.format(question=question, passages=passages),
                max_tokens=max_tokens,
                temperature=retry_temperature if attempt else 0.0,
                seed=attempt if attempt else None,
            )
            reply = llm.complete([request])[0]
            record.selection_calls += 1
            picked = parse_selection(reply.text, len(candidates), parse) if reply.ok else None
            if picked is not None:
                return [candidates[i] for i in picked]
            if reply.ok:
                record.parse_failures += 1
            else:
                record.call_failures += 1
            if budget["left"] <= 0:
                record.exhausted = True
                return None
            budget["left"] -= 1
            attempt += 1

    result = traverse.llm_guided(initial, select, grow_step(store), max_turns, stop_when)
    record.turns = result.turns
    record.evidence = node_order(store, result.selected or initial)
    return record


def consecutive_runs(
    store: HierarchyStore, nodes: Sequence[int], positions: dict[int, int]
) -> list[list[int]]:
    """Group evidence (in node order) so that level-0 chunks at consecutive positions form one run."""
    runs: list[list[int]] = []
    for v in nodes:
        prev = runs[-1][-1] if runs else None
        if (
            prev is not None
            and store.levels[v] == 0
            and store.levels[prev] == 0
            and positions.get(v) is not None
            and positions.get(v) == (positions.get(prev, -2) + 1)
        ):
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs
