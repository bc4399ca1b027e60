"""CAM's Prune-and-Grow retrieval (Sec. 4.2) on the hierarchy core's LLM-guided traversal.

1. Fast localisation: cosine top-s over every node of every level (paper s = 5; code 10).
2. Associative exploration (``traverse.llm_guided``): the LLM picks the helpful candidates from a
   numbered list ("Passage i: ...", reply a list such as [1, 3, 5]); the picked nodes, their
   same-level neighbours and their children are the next candidates (``grow_scope``: ``activated``,
   the paper's "of all activated nodes", grows from every node picked so far; ``picks``, the
   released code, from the last turn's picks only); the loop ends when nothing
   is picked, after ``max_turns`` turns, or by ``stop_when``: ``no_growth`` (paper, Sec. 4.2: when
   the activation set P no longer grows, i.e. a turn picks no node not picked before) or
   ``candidates_unchanged`` (released code: before a turn whose candidates equal the last turn's).
   A reply that cannot be parsed is asked again while the question's ``tolerance`` lasts (shared
   by all turns, as in the code); each failure is counted; when it runs out the loop ends.
3. Evidence (released code): every picked node, or the initial top-s if none was picked, in the
   code's node order (level 0 by chunk position, then each higher level in its order), so when the
   evidence overflows the token budget the summaries are dropped first; ``evidence_order:
   levels_down`` lists the highest level first instead (chunks dropped first). Consecutive level-0
   chunks are merged into one passage.

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
from memharness.memsys.types import RetrievedItem

SELECTION_PARSES = ("strict", "lenient")
GROW_SCOPES = ("activated", "picks")
EVIDENCE_ORDERS = ("levels_up", "levels_down")
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
            f"memory.selection.parse must be one of {' | '.join(SELECTION_PARSES)}, got {mode!r}"
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


def node_order(store: HierarchyStore, nodes: Sequence[int], down: bool = False) -> list[int]:
    """The released code's node-id order: by level, then by position within the level (= store index).
    ``down``: the highest level first (each level still in its order), so summaries precede chunks."""
    sign = -1 if down else 1
    return sorted(set(nodes), key=lambda v: (sign * store.levels[v], v))


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
    grow_scope: str = "activated",
    evidence_order: str = "levels_up",
) -> Exploration:
    """Run Prune-and-Grow for one question; the evidence nodes come back in node order
    (``evidence.order``: ``levels_up`` = the code's, chunks first; ``levels_down`` = summaries first)."""
    if grow_scope not in GROW_SCOPES:
        raise ValueError(
            f"memory.selection.grow_scope must be one of {' | '.join(GROW_SCOPES)}, got {grow_scope!r}"
        )
    if evidence_order not in EVIDENCE_ORDERS:
        raise ValueError(
            f"memory.evidence.order must be one of {' | '.join(EVIDENCE_ORDERS)}, "
            f"got {evidence_order!r}"
        )
    initial = [v for v, _ in traverse.collapsed(store, vector, top_k)]
    record = Exploration(evidence=[], initial=initial)
    budget = {"left": tolerance}
    activated: list[int] = []  # every node picked so far (the paper's activation set P)

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
                chosen = [candidates[i] for i in picked]
                activated.extend(v for v in chosen if v not in activated)
                return chosen
            if reply.ok:
                record.parse_failures += 1
            else:
                record.call_failures += 1
            if budget["left"] <= 0:
                record.exhausted = True
                return None
            budget["left"] -= 1
            attempt += 1

    grow = grow_step(store)
    step = grow if grow_scope == "picks" else (lambda _picks: grow(activated))
    result = traverse.llm_guided(initial, select, step, max_turns, stop_when)
    record.turns = result.turns
    record.evidence = node_order(store, result.selected or initial, evidence_order == "levels_down")
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


def evidence_items(
    store: HierarchyStore, runs: Sequence[list[int]], score: dict[int, float], tokenizer: Any
) -> dict[str, tuple[RetrievedItem, list[int]]]:
    """One retrieved item per run of evidence nodes (merged chunks joined by a space), keyed by id."""
    items = {}
    for run in runs:
        text = " ".join(store.texts[v] for v in run)
        units = tuple(dict.fromkeys(u for v in run for u in store.source_units(v)))
        item = RetrievedItem(
            text=text,
            score=max(score[v] for v in run),
            node_id="+".join(store.ids[v] for v in run),
            level=store.levels[run[0]],
            source_unit_ids=units,
            tokens=tokenizer.count(text),
        )
        items[item.node_id] = (item, run)
    return items


def exploration_summary(explorations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Prune-and-Grow over the questions asked: means of the per-question sizes and calls, sums of
    the per-question failure counters (``memory_stats.json``'s ``prune_and_grow``)."""
    summary: dict[str, Any] = {"questions": len(explorations)}
    if not explorations:
        return summary
    for key in ("turns", "selected", "evidence", "selection_calls"):
        summary[key] = float(np.mean([e[key] for e in explorations]))
    for key in ("parse_failures", "call_failures", "tolerance_exhausted", "fallback_to_initial"):
        summary[key] = int(sum(e[key] for e in explorations))
    return summary
