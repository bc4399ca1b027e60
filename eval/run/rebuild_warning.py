"""A warning before a run starts: a memory that rebuilds itself from every unit after new inserts,
on an episode long enough (BEAM 1M / 10M) for those rebuilds to cost more than a user expects."""

from __future__ import annotations

from typing import Any

import numpy as np
from memharness.memsys.services.tokens import get_tokenizer
from omegaconf import DictConfig

INGEST_WARN_TOKENS = (
    1_000_000  # an episode this long makes an offline memory's rebuilds worth a warning
)


def ingest_warning(
    cfg: DictConfig, dataset: Any, threshold: int = INGEST_WARN_TOKENS
) -> str | None:
    """One line, before a run starts, when the memory rebuilds itself from every unit after new
    inserts (``online = False``) and an episode is over ``threshold`` tokens (BEAM 1M / 10M): how
    many rebuilds its question positions force and the tokens they re-read, priced with
    ``llm.prices`` when one price is configured. None when neither holds."""
    from hydra.utils import get_class

    target = (cfg.get("memory") or {}).get("_target_")
    if not target or getattr(get_class(str(target)), "online", True):
        return None
    tok = get_tokenizer(cfg.get("tokenizer", "cl100k_base"))
    worst = None
    for ep in dataset.episodes:
        prefix = np.cumsum([0] + [tok.count(u.text) for u in ep.units])
        if prefix[-1] <= threshold:
            continue
        positions = sorted({q.position for q in ep.questions if q.position > 0})
        reread = int(sum(prefix[p] for p in positions))
        if worst is None or reread > worst[2]:
            worst = (ep.id, int(prefix[-1]), reread, len(positions))
    if worst is None:
        return None
    ep_id, tokens, reread, rebuilds = worst
    prices = list(((cfg.get("llm") or {}).get("prices") or {}).values())
    cost = (
        f"~${reread * float(prices[0].get('prompt', 0)) / 1e6:,.2f} of prompt tokens at llm.prices"
        if len(prices) == 1
        else "no single llm.prices entry to price it"
    )
    return (
        f"memory={cfg.memory.get('name', target)} rebuilds its whole memory after new units: episode "
        f"{ep_id} has {tokens:,} tokens; its questions force {rebuilds} rebuild(s) re-reading "
        f"{reread:,} tokens ({cost}); dry_run=true estimates every call"
    )
