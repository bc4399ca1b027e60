"""The registry's entries read from the clock and the ledger: latency per question and stage, and
the ingestion cost of each episode (eval/metrics/registry.py lists them last)."""

from __future__ import annotations

from memharness.eval.metrics.metric import Metric

# Per question, in seconds, p50 / p95 beside mean and CI (eval/run/timing.py, scorers.Latency)
_LATENCY = (
    (
        "search_latency_s",
        "seconds to retrieve a question's context: search_backend_s + search_compute_s",
    ),
    (
        "search_backend_s",
        "latency of the retrieval's backend calls (chat, embedding) when they were made, cached or not",
    ),
    (
        "search_compute_s",
        "the retrieval's own compute: its wall time not spent waiting on a backend (measured each run)",
    ),
    (
        "answer_latency_s",
        "latency of the answer call when it was made, cached or not (a memory that answers "
        "itself: its backend calls plus its compute)",
    ),
    ("total_latency_s", "search_latency_s + answer_latency_s"),
)
# Per episode, mean and CI over the episodes (eval/metrics/ingestion.py)
_INGESTION = (
    ("ingest_calls", False, "LLM replies an episode's build used (cached or not)"),
    ("ingest_tokens", False, "prompt + completion tokens of an episode's build"),
    ("ingest_embed_texts", False, "texts an episode's build embedded"),
    (
        "ingest_s",
        False,
        "seconds to build an episode's memory: its backend calls' latency when made plus its own compute",
    ),
    ("ingest_s_per_unit", False, "ingest_s per inserted unit (dialogue turn, chunk)"),
    ("ingest_usd", False, "estimated dollars of an episode's build at the configured prices"),
    (
        "memory_items",
        None,
        "items the built memory holds (its stored units unless the system counts its own items)",
    ),
    ("memory_tokens", None, "tokens of those items"),
)
MEASURED: tuple[Metric, ...] = tuple(
    Metric(
        name,
        False,
        "latency",
        "latency",
        doc,
        aggregate="percentiles",
        scorer="latency",
        timed=True,
    )
    for name, doc in _LATENCY
) + tuple(
    Metric(
        name,
        better,
        "cost",
        "ingestion",
        doc,
        aggregate="episode",
        scorer="ingestion",
        timed=name.startswith("ingest_s"),
    )
    for name, better, doc in _INGESTION
)
