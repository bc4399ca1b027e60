"""Computable self-sufficiency SS_θ of representatives (theory paper, App. A, eq. 2).

    SS_θ(ρ, G) = 1 − (−log P_θ(G | ρ(G))) / (−log P_θ(G))

P_θ is the backend LLM scoring the group's text token by token (prompt log-probabilities), once
after the representative and once without it, under the same framing (``TEMPLATE``). The group
text is its members' texts joined by blank lines and cut to ``max_tokens`` tokens. Groups are a
seeded sample of the nodes with children, at most ``groups`` of them, spread over the levels.

Only backends that expose prompt log-probabilities can do this (the embedded llama.cpp model
does); elsewhere the result is ``{"status": "unavailable", ...}``, never an estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.types import LogprobRequest

# {representative} is the group's representative; the scored text follows the prefix.
TEMPLATE = "Summary of the passages below:\n{representative}\n\nPassages:\n"
UNCONDITIONED = "Passages:\n"


def sample_groups(store: HierarchyStore, groups: int, seed: int) -> list[int]:
    """Up to ``groups`` representatives (nodes with children), seeded, round-robin over levels."""
    by_level: dict[int, list[int]] = {}
    for v in store.content_nodes():
        if store.children[v]:
            by_level.setdefault(store.levels[v], []).append(v)
    rng = np.random.default_rng(seed)
    queues = [list(rng.permutation(nodes)) for _, nodes in sorted(by_level.items())]
    chosen: list[int] = []
    while len(chosen) < groups and any(queues):
        for q in queues:
            if q and len(chosen) < groups:
                chosen.append(int(q.pop()))
    return chosen


def ss_theta(
    store: HierarchyStore,
    llm: Any,
    tokenizer: Any,
    groups: int = 8,
    max_tokens: int = 256,
    seed: int = 0,
) -> dict[str, Any]:
    """SS_θ per sampled group, with means per level and overall."""
    if groups <= 0:
        return {"status": "off"}
    if llm is None or not getattr(llm, "supports_logprobs", False):
        name = getattr(llm, "model_id", None)
        return {
            "status": "unavailable",
            "reason": f"backend {name!r} exposes no prompt log-probabilities",
        }
    chosen = sample_groups(store, groups, seed)
    if not chosen:
        return {"status": "ok", "groups": 0, "mean": None, "by_level": {}}
    requests = []
    for v in chosen:
        text = "\n\n".join(store.texts[c] for c in store.children[v])
        text = tokenizer.truncate(text, max_tokens) if tokenizer is not None else text
        requests += [
            LogprobRequest(prefix=TEMPLATE.format(representative=store.texts[v]), text=text),
            LogprobRequest(prefix=UNCONDITIONED, text=text),
        ]
    scores = llm.logprobs(requests)
    rows, failed = [], 0
    for i, v in enumerate(chosen):
        cond, plain = scores[2 * i], scores[2 * i + 1]
        if not (cond.ok and plain.ok) or plain.logprob >= 0:
            failed += 1
            continue
        value = 1.0 - (-cond.logprob) / (-plain.logprob)
        rows.append(
            {
                "node": store.ids[v],
                "level": store.levels[v],
                "ss_theta": value,
                "nll_given_representative": -cond.logprob,
                "nll": -plain.logprob,
                "tokens": plain.tokens,
            }
        )
    by_level: dict[str, dict[str, float]] = {}
    for level in sorted({r["level"] for r in rows}):
        vals = [r["ss_theta"] for r in rows if r["level"] == level]
        by_level[str(level)] = {"n": len(vals), "mean": float(np.mean(vals))}
    return {
        "status": "ok",
        "model": llm.model_id,
        "groups": len(rows),
        "failed": failed,
        "mean": float(np.mean([r["ss_theta"] for r in rows])) if rows else None,
        "by_level": by_level,
        "samples": rows,
    }
