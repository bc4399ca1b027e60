"""The report's "Letting go" section (issue 45, docs/forgetting.md): per run on a forgetting suite
(``dataset.forget``), the forgetting and stale-memory metrics with their CIs, and what forgetting
cost the memory per forgotten unit, read from ``memory_stats.json`` (each episode's ``forgets``).

Runs without the metrics (no ``dataset.forget``) leave the section out."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from memharness.eval.report import table_format as fmt

METRICS = (
    "forget_leak",
    "stale_retrieval",
    "forget_answer_leak",
    "forget_answer_leak_judge",
    "forget_abstain",
    "forget_abstain_judge",
    "stale_answer",
    "stale_answer_judge",
)
COST_COLUMNS = (
    "forgotten_units",
    "forget_rebuilds",
    "forget_calls_per_unit",
    "forget_tokens_per_unit",
    "forget_embed_per_unit",
    "forget_ms_per_unit",
)


def forget_costs(folder: str | Path) -> dict[str, float]:
    """Totals over a run's forget calls, per forgotten unit (empty when nothing was forgotten)."""
    path = Path(folder) / "memory_stats.json"
    if not path.is_file():
        return {}
    stats = json.loads(path.read_text(encoding="utf-8"))
    records = [f for s in stats.values() if isinstance(s, dict) for f in s.get("forgets", [])]
    units = sum(int(f.get("units", 0)) for f in records)
    if not units:
        return {}

    def per_unit(*keys: str) -> float | None:
        if not all(k in f for f in records for k in keys):
            return None  # a memory whose LLM has no meter reports no tokens
        return sum(float(f[k]) for f in records for k in keys) / units

    return {
        "forgotten_units": float(units),
        "forget_rebuilds": float(sum(f.get("method") == "rebuild" for f in records)),
        "forget_calls_per_unit": per_unit("calls"),
        "forget_tokens_per_unit": per_unit("prompt_tokens", "completion_tokens"),
        "forget_embed_per_unit": per_unit("embed_texts"),
        "forget_ms_per_unit": None if (s := per_unit("seconds")) is None else 1000 * s,
    }


def sections(wide: pd.DataFrame, best: set[tuple[int, str]]) -> list[fmt.Section]:
    """The metrics table and the cost table (either left out when no run has its numbers)."""
    costs = {f: forget_costs(f) for f in wide["folder"]}
    wide = wide.copy()
    for column in COST_COLUMNS:
        wide[column] = wide["folder"].map(lambda f, c=column: costs[f].get(c))
    out = [
        fmt.metric_section(
            "Letting go: forgetting and stale memory",
            wide,
            METRICS,
            best,
            "Questions about facts the stream deleted (forget request) or corrected "
            "(dataset.forget). forget_leak: a retrieved item's provenance, derived items "
            "included, holds a deleted unit (target 0); stale_retrieval: the superseded unit "
            "retrieved with the current one absent or below it; forget_answer_leak / "
            "stale_answer: the answer states the old value; forget_abstain: it says it does not "
            "know (lexical; _judge: the judge model's verdict with the eval.forget_judge prompts).",
        ),
        fmt.column_section(
            "Letting go: cost of forgetting",
            wide,
            COST_COLUMNS,
            "Per forgotten unit, intrinsic (cache or not): LLM calls, tokens, texts embedded, "
            "milliseconds; forget_rebuilds: forget calls done by rebuilding the memory (the default, "
            "or dataset.forget.method=rebuild, the reference a system's own forget is set "
            "against).",
        ),
    ]
    return [s for s in out if s is not None]


def without(metrics: list[str]) -> list[str]:
    """The metrics the other sections show (the forgetting ones live here only)."""
    return [m for m in metrics if m not in METRICS]
