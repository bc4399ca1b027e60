"""Ingestion cost per episode: what building one episode's memory cost (calls, tokens, seconds,
dollars) and how big the memory is, from each episode's ``memory_stats.json`` entry, summarised
over the episodes (mean and bootstrap CI) into metrics.json under the registry's ``ingestion``
metrics. Intrinsic like every cost: the build's replies count whether the cache or a snapshot
served them, each with the latency it had when it was made (``memsys/services/meter.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memharness.eval.metrics import registry
from memharness.eval.metrics.lexical import summarize

_ZERO = dict.fromkeys(
    ("calls", "prompt_tokens", "completion_tokens", "embed_texts", "call_s", "embed_s", "cost_usd"),
    0,
)


def episode_values(stats: Mapping[str, Any]) -> dict[str, float]:
    """One episode's ingestion metrics from its memory_stats.json entry (empty for an episode
    written before its build time was recorded)."""
    if "calls" not in stats or "build_compute_s" not in stats:
        return {}
    # a build that made no call at all has no "build" entry in the episode's ledger
    used = {**_ZERO, **((stats["calls"].get("build") or {}).get("intrinsic") or {})}
    seconds = used["call_s"] + used["embed_s"] + float(stats["build_compute_s"])
    units = sum(int(b.get("units", 0)) for b in stats.get("insert_batches") or [])
    size = stats.get("size") or {}
    out = {
        "ingest_calls": float(used["calls"]),
        "ingest_tokens": float(used["prompt_tokens"] + used["completion_tokens"]),
        "ingest_embed_texts": float(used["embed_texts"]),
        "ingest_s": seconds,
        "ingest_usd": float(used["cost_usd"]),
    }
    if units:
        out["ingest_s_per_unit"] = seconds / units
    out.update({f"memory_{k}": float(size[k]) for k in ("items", "tokens") if k in size})
    return out


def summarize_episodes(
    memory_stats: Mapping[str, Mapping[str, Any]], resamples: int, confidence: float, seed: int
) -> dict[str, dict[str, float]]:
    """Mean, CI and n (episodes) of every ingestion metric some episode has."""
    per_episode = [episode_values(stats) for stats in memory_stats.values()]
    out = {}
    for name in registry.names(section="ingestion"):
        values = [v[name] for v in per_episode if name in v]
        if values:
            out[name] = summarize(values, resamples, confidence, seed)
    return out
