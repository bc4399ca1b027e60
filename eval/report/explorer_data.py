"""The results explorer's payload: every run's summary, the questions they share and one compact
cell per (run, question), plus the head-to-head counts and paired tests of every pair of runs.

Texts that several cells show (a retrieved unit, a long prompt) are stored once in ``texts`` and
referred to by index, so a 500-question x 12-run sweep stays under 25 MB (``make bench``).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memharness.eval.judge.separation import judge_flag
from memharness.eval.metrics import registry
from memharness.eval.record import scores
from memharness.eval.record.read import iter_samples, load_runs
from memharness.eval.report.columns import cost_columns, judge_columns
from memharness.eval.report.paired import label
from memharness.eval.report.tables import identify, short_model

HEADLINE = registry.names(headline=True)
# the judges' verdicts a column shows side by side
VERDICTS = ("judge", "judge_lenient", "official_judge", "judge2", "acc_l")
MAX_UNITS = 24  # unit ids listed per retrieved item (a tree summary may cover thousands)


@dataclass(frozen=True)
class Limits:
    """How much of each long text the page keeps (the run folder keeps all of it)."""

    item_chars: int = 1500  # retrieved item text
    # each stretch of the answer prompt between the retrieved items it quotes
    prompt_chars: int = 4000


class Texts:
    """An interning table: each distinct text once, referred to by its index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its head and tail around a marker saying how much went."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half:,} characters cut …]\n{text[-half:]}"


def question_date(sample: dict[str, Any]) -> str | None:
    """The question's date, where the dataset gives one (LongMemEval's question_date)."""
    if sample.get("asked_at"):
        return str(sample["asked_at"])
    cats = sample.get("categories") or {}
    for key in ("question_date", "date", "time"):
        if cats.get(key):
            return str(cats[key])
    return None


def prompt_parts(prompt: str, items: Sequence[str], texts: Texts, limits: Limits) -> list[int]:
    """The answer prompt as text references: each retrieved item it quotes is the item's own text
    (stored once for the item list), the words between them (instructions, the question) are
    stored once for every prompt that shares them; only those are cut at ``prompt_chars``."""
    found = sorted((at, text) for text in set(items) if text and (at := prompt.find(text)) >= 0)
    parts, pos = [], 0
    for at, text in found:
        if at < pos:  # overlaps an item already placed: stays inside the text around it
            continue
        if at > pos:
            parts.append(texts.ref(cut(prompt[pos:at], limits.prompt_chars)))
        parts.append(texts.ref(cut(text, limits.item_chars)))
        pos = at + len(text)
    if pos < len(prompt):
        parts.append(texts.ref(cut(prompt[pos:], limits.prompt_chars)))
    return parts


def cell(sample: dict[str, Any], texts: Texts, limits: Limits, ids: Texts) -> dict[str, Any]:
    """One run's answer to one question, in the page's short keys (see explorer.js); unit ids
    go through ``ids`` (every run of a dataset names the same units)."""
    gold = set(scores.detail(sample, "evidence_recall", "gold_items") or [])
    items, retrieved = [], sample.get("retrieved") or []
    for i, r in enumerate(retrieved):
        units = r.get("source_unit_ids") or []
        items.append(
            [
                texts.ref(cut(r.get("text") or "", limits.item_chars)),
                None if r.get("score") is None else round(r["score"], 4),
                r.get("level"),
                r.get("node_id"),
                [ids.ref(u) for u in units[:MAX_UNITS]],
                len(units),
                int(i in gold),
            ]
        )
    judges = {
        m: [
            scores.value(sample, m),
            scores.status(sample, m),
            scores.detail(sample, m, "reply"),
        ]
        for m in VERDICTS
        if m in (sample.get("scores") or {})
    }
    flags = [
        name
        for name, on in (
            ("degraded", scores.memory_flag(sample, "degraded")),
            ("partial", scores.memory_flag(sample, "partial")),
            ("injection", scores.detail(sample, "judge", "injection")),
            ("prompt cut", sample.get("prompt_tokens_cut")),
        )
        if on
    ]
    prompt = sample.get("prompt")
    out = {
        "p": sample.get("prediction"),
        "s": sample["status"],
        "e": sample.get("error"),
        "v": {k: v for k, v in scores.values(sample).items() if v is not None},
        "j": judges,
        "r": items,
        "gu": [ids.ref(u) for u in scores.detail(sample, "evidence_recall", "gold_units") or []],
        "t": sample.get("context_tokens"),
        "f": flags,
        "pr": prompt_parts(prompt, [r.get("text") or "" for r in retrieved], texts, limits)
        if prompt
        else None,
        "by": scores.memory_flag(sample, "answered_by"),
    }
    return {k: v for k, v in out.items() if v not in (None, [], {})}  # the page reads a gap as none


def question_row(sample: dict[str, Any], dataset: str) -> dict[str, Any]:
    """What the page shows of a question, whichever run answered it."""
    cats = sample.get("categories") or {}
    return {
        "qid": sample["question_id"],
        "dataset": dataset,
        "episode": sample["episode_id"],
        "text": sample["question"],
        "refs": sample["references"],
        "options": sample.get("options"),
        "gold": sample.get("gold_option"),
        "cats": [f"{k}={v}" for k, v in sorted(cats.items()) if not isinstance(v, dict | list)],
        "date": question_date(sample),
        "evidence": sample.get("evidence_sources") or [],
    }


def memory_views(folder: Path, out_dir: Path) -> dict[str, str]:
    """Each episode's saved memory page (``memory/<episode>/view.html``), relative to the page."""
    views = {}
    for view in sorted((folder / "memory").glob("*/view.html")):
        views[view.parent.name] = Path(os.path.relpath(view, out_dir)).as_posix()
    return views


def run_summary(run: dict[str, Any], key: str, qset: str) -> dict[str, Any]:
    """A leaderboard row: identity, headline metrics with CIs, counts, cost, latency, judge."""
    counts = run["counts"]
    wall = (run.get("time") or {}).get("total_s")  # the run's wall time
    n = max(1, counts["questions"])
    return {
        "key": key,
        "label": label(run),
        "memory": run["memory"],
        "dataset": run["dataset"],
        "setting": run["setting"],
        "qset": qset,
        "folder": run["folder"],
        "llm": short_model(run.get("llm")),
        "embedder": short_model(run.get("embedder")),
        "judge": short_model(run.get("judge")),
        "oracle": bool(run.get("oracle")),
        "n": counts["questions"],
        "scored": counts["scored"],
        "failed": counts["questions"] - counts["scored"],
        "injection": counts.get("judge_injection", 0),
        "metrics": {m: run["metrics"][m] for m in HEADLINE if m in run["metrics"]},
        "cost": {
            **{k: v for k, v in cost_columns(run).items() if k in COST_SHOWN},
            "s_per_question": wall / n if wall is not None else None,
        },
        "judges": judge_columns(run),
        "judge_flag": judge_flag(run),  # the tables' rule (eval/judge/separation.py)
        "stages": stage_averages(run),
    }


def stage_averages(run: dict[str, Any]) -> dict[str, list[float]]:
    """Per stage, the run's tokens and LLM seconds per question (the record keeps no per-question
    timing: samples.jsonl stays byte-identical across runs, so latencies live in the ledger)."""
    n = max(1, run["counts"]["questions"])
    return {
        stage: [
            round((led.get("prompt_tokens", 0) + led.get("completion_tokens", 0)) / n, 1),
            round(led.get("call_s", 0.0) / n, 3),
        ]
        for stage, led in (run.get("intrinsic") or {}).items()
        if isinstance(led, dict) and (led.get("calls") or led.get("embed_texts"))
    }


COST_SHOWN = ("method_usd", "tokens_per_question", "method_llm_s", "eval_usd")


def run_keys(runs: Sequence[dict[str, Any]]) -> list[str]:
    """A short, stable name per run for links: the memory, then with its dataset, then with a
    hash of its folder, whichever first tells every run apart."""
    for name in (
        lambda r: r["memory"],
        lambda r: f"{r['memory']}.{r['dataset']}",
        lambda r: (
            f"{r['memory']}.{r['dataset']}." + hashlib.sha256(r["folder"].encode()).hexdigest()[:6]
        ),
    ):
        keys = [name(r) for r in runs]
        if len(set(keys)) == len(keys):
            return keys
    return keys


def explorer_data(
    paths: Sequence[str | Path], out: Path, limits: Limits = Limits(), title: str = "memharness"
) -> dict[str, Any]:
    """Every run under ``paths``, the union of their questions and a cell per answered question."""
    from memharness.eval.report.explorer_pairs import head_to_head

    # the tables' identity: each run's distinguishing settings and its question set
    loaded = identify(load_runs(paths))  # a broken run is left out with a warning naming its file
    texts, ids = Texts(), Texts()
    runs, questions, index, cells = [], [], {}, []
    for run, key in zip(loaded, run_keys(loaded), strict=True):
        row: dict[int, dict[str, Any]] = {}
        for sample in iter_samples(run["folder"]):
            qkey = (run["dataset"], sample["question_id"])
            if qkey not in index:
                index[qkey] = len(questions)
                questions.append(question_row(sample, run["dataset"]))
            row[index[qkey]] = cell(sample, texts, limits, ids)
        summary = run_summary(run, key, f"{run['dataset']}:{run['qset']}")
        summary["views"] = memory_views(Path(run["folder"]), out.parent)
        runs.append(summary)
        cells.append(row)
    seen = Counter(q["qid"] for q in questions)
    for q in questions:  # a question id two datasets share is named with its dataset
        q["id"] = f"{q['dataset']}:{q['qid']}" if seen[q["qid"]] > 1 else q["qid"]
    metric = next(
        (m for m in HEADLINE if any(m in c.get("v", ()) for row in cells for c in row.values())),
        HEADLINE[0],
    )
    present = [m for m in HEADLINE if any(m in r["metrics"] for r in runs)]
    return {
        "title": title,
        "metric": metric,
        "headline": present,
        "runs": runs,
        "questions": questions,
        "cells": [[row.get(i) for i in range(len(questions))] for row in cells],
        "texts": texts.items,
        "units": ids.items,
        "h2h": head_to_head(runs, cells, metric, [q["cats"] for q in questions]),
    }
