"""Comparable tables: which runs a row stands for, which rows may be compared, every number in pandas.

A row is one run, identified by its memory, dataset, the resolved settings that differ from the
other runs on the same dataset (``setting``), the LLM, embedder and judge model ids, the number of
questions, the seed and the checksum of its question ids (``qset``). Rows answer the same questions
with the same judge exactly when they share (dataset, qset, judge): a comparable group (``set``,
lettered A, B, ...). "Best" is marked only within a group, so a 3-question subset is never ranked
against the full set, nor a GPT-4o judge against a 1.5B one.

Costs are the intrinsic ledger (what the method costs whether or not the cache served its calls):
a warm rerun shows the same numbers as the cold one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from memharness.eval.metrics import registry
from memharness.eval.record import read, scores
from memharness.eval.report.columns import cost_columns, judge_columns

# Resolved keys that never make two runs different experiments: paths, caching, concurrency, retries,
# reporting knobs; model settings live in the llm / embedder / judge identity columns instead.
IGNORED_SETTINGS = (
    "cache.*",
    "progress",
    "data_dir",
    "seed",
    "hydra.*",
    "run.*",
    "snapshots.*",
    "budget.*",
    "dry_run",
    "estimate.*",
    "llm.*",
    "embedder.*",
    "judge.*",
    "judge2.*",
    "dataset.limit",
    "dataset.seed",
    "dataset.loader.path",
    "dataset.loader.data_dir",
    "dataset.loader.integrity",
    "dataset.loader.revision",
    "dataset.name",
    "memory.name",
    "memory.html_max_nodes",
    "memory.diagnostics.*",
    "eval.bootstrap.*",
    "eval.position_buckets",
    "eval.judge.calibration_max",
    "eval.judge_audit.*",
    "eval.evidence.*",
    "eval.closed_book.*",
)
IDENTITY = (
    "memory",
    "setting",
    "dataset",
    "llm",
    "embedder",
    "judge",
    "judge2",
    "n",
    "seed",
    "qset",
)


def direction(metric: str) -> bool | None:
    """True if higher is better, False if lower is, None if the metric is not ranked."""
    return registry.direction(metric)


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested config; lists stay values."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


def _show(value: Any) -> str:
    """A setting's value as shown in a table: long texts (prompts) by a short hash."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return (
        "#" + hashlib.sha256(text.encode()).hexdigest()[:8]
        if len(text) > 40 or "\n" in text
        else text
    )


def question_checksum(question_ids: Iterable[str]) -> str:
    """The same checksum the runner records (``data.question_ids_sha256``)."""
    return hashlib.sha256("\n".join(sorted(map(str, question_ids))).encode()).hexdigest()


def read_samples(folder: Path) -> list[dict[str, Any]]:
    return list(read.iter_samples(folder))


def attach(run: dict[str, Any]) -> dict[str, Any]:
    """Add what tables need beyond metrics.json: the resolved config and per-question metrics."""
    folder = Path(run["folder"])
    cfg_file = folder / "config.yaml"
    run["config"] = (
        flatten(yaml.safe_load(cfg_file.read_text()) or {}) if cfg_file.is_file() else None
    )
    samples = read_samples(folder)
    run["per_question"] = {
        key: scores.values(s) for key, s in zip(question_keys(samples), samples, strict=True)
    }
    ids = [str(s.get("question_id", i)) for i, s in enumerate(samples)]
    run["qset"] = ((run.get("data") or {}).get("question_ids_sha256") or question_checksum(ids))[:8]
    return run


def question_keys(samples: Sequence[dict[str, Any]]) -> list[str]:
    """One key per sample for pairing runs: its question id, with ``#2``, ``#3``... on a repeated
    id (folders written before loaders refused repeated ids), so pairing keeps every question."""
    seen: Counter[str] = Counter()
    keys = []
    for i, s in enumerate(samples):
        qid = str(s.get("question_id", i))
        seen[qid] += 1
        keys.append(qid if seen[qid] == 1 else f"{qid}#{seen[qid]}")
    return keys


def settings(runs: Sequence[dict[str, Any]]) -> list[str]:
    """Each run's resolved settings that differ among the runs it may be compared with.

    Global keys are compared among runs on the same dataset, ``memory.*`` keys among runs of the same
    memory on the same dataset (a memory's own defaults differ from another memory's by nature)."""
    out = []
    for run in runs:
        if run.get("config") is None:
            out.append(read.override_setting(run))
            continue
        peers = [r for r in runs if r["dataset"] == run["dataset"] and r.get("config") is not None]
        parts = []
        for key, value in sorted(run["config"].items()):
            if any(fnmatch(key, pat) for pat in IGNORED_SETTINGS):
                continue
            scope = [
                r for r in peers if not key.startswith("memory.") or r["memory"] == run["memory"]
            ]
            if any(r["config"].get(key) != value for r in scope):
                parts.append(f"{key}={_show(value)}")
        out.append(" ".join(parts))
    return out


def judge_id(run: dict[str, Any]) -> str:
    """The judge's model id; '-' when no judge ran."""
    return run.get("judge") or "-"


def identify(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each run's identity fields (``IDENTITY``) in place and return the runs."""
    for run in runs:
        if "per_question" not in run:
            attach(run)
    for run, setting in zip(runs, settings(runs), strict=False):
        run.update(
            setting=setting,
            judge_model=judge_id(run),
            n=run["counts"]["questions"],
            seed=run.get("seed"),
            judge2_model=run.get("judge2") or "-",
        )
    return runs


def identity(run: dict[str, Any]) -> tuple:
    return (
        run["memory"],
        run["setting"],
        run["dataset"],
        run.get("llm"),
        run.get("embedder"),
        run["judge_model"],
        run["judge2_model"],
        run["n"],
        run["seed"],
        run["qset"],
    )


def latest(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest run (by when its metrics.json was written) of each identity."""
    best: dict[tuple, dict[str, Any]] = {}
    for run in sorted(
        identify(runs),
        key=lambda r: ((Path(r["folder"]) / "metrics.json").stat().st_mtime_ns, r["folder"]),
    ):
        best[identity(run)] = run
    return list(best.values())


# ids recorded before the embedder was named by its model: the bundled MiniLM's folder name
LEGACY_IDS = {"st:model": "all-MiniLM-L6-v2"}


def short_model(model_id: str | None) -> str:
    """'llama.cpp:SmolLM2-135M-Instruct-Q4_1.gguf:ctx4096' -> 'SmolLM2-135M-Instruct-Q4_1';
    'st:all-MiniLM-L6-v2' (and the older 'st:model') -> 'all-MiniLM-L6-v2'."""
    if not model_id or model_id == "-":
        return "-"
    if model_id in LEGACY_IDS:
        return LEGACY_IDS[model_id]
    core = model_id.split("@")[0]
    parts = core.split(":")
    name = parts[1] if len(parts) > 1 else parts[0]
    name = name.removesuffix(".gguf")
    return core if len(name) < 8 else name  # 'st:mini' says more than 'mini'


def assign_groups(runs: list[dict[str, Any]]) -> dict[tuple, str]:
    """Letter per comparable group (dataset, qset, judge), in sorted order; sets ``run['group']``."""
    keys = sorted({(r["dataset"], r["qset"], r["judge_model"]) for r in runs})
    letters = {k: _letter(i) for i, k in enumerate(keys)}
    for r in runs:
        r["group"] = letters[(r["dataset"], r["qset"], r["judge_model"])]
    return letters


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"G{i}"


def wide_frame(runs: list[dict[str, Any]], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per run: identity, group, counts, every metric's mean / CI / n, cost, judge numbers."""
    rows = []
    for r in runs:
        c = r["counts"]
        row: dict[str, Any] = {
            "memory": r["memory"],
            "setting": r["setting"],
            "dataset": r["dataset"],
            "llm": r.get("llm", "-"),
            "embedder": r.get("embedder", "-"),
            "judge": r["judge_model"],
            "judge2": r["judge2_model"],
            "n": r["n"],
            "seed": r["seed"],
            "qset": r["qset"],
            "set": r["group"],
            "oracle": bool(r.get("oracle")),  # reads the gold evidence: labelled, never ranked
            "failed": sum(
                c.get(k, 0)
                for k in (
                    "answer_failed",
                    "retrieve_failed",
                    "build_failed",
                    "deadline_exceeded",
                    "budget_exceeded",
                )
            ),
            "judge_unparsed": c.get("judge_unparsed", 0),
            "judge_failed": c.get("judge_failed", 0),
        }
        for m in metrics:
            s = r["metrics"].get(m) or {}
            for part in ("mean", "ci_low", "ci_high", "n"):
                row[f"{m}.{part}"] = s.get(part)
            for part in ("p50", "p95"):  # latency metrics (registry aggregate "percentiles")
                if part in s:
                    row[f"{m}.{part}"] = s[part]
        row.update(cost_columns(r))
        row.update(judge_columns(r))
        row["folder"] = r["folder"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.sort_values(["dataset", "set", "memory", "setting"], kind="stable").reset_index(
        drop=True
    )


def long_frame(wide: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per run x metric (mean, ci_low, ci_high, n), cost and judge numbers included (no CI)."""
    ident = [
        "memory",
        "setting",
        "dataset",
        "llm",
        "embedder",
        "judge",
        "judge2",
        "seed",
        "qset",
        "set",
        "oracle",
        "folder",
    ]
    rows = []
    extra = [c for c in wide.columns if c not in ident and "." not in c and c not in ("n",)]
    for _, w in wide.iterrows():
        base = {k: w[k] for k in ident}
        for m in metrics:
            if pd.notna(w.get(f"{m}.mean")):
                rows.append(
                    {
                        **base,
                        "kind": "score",
                        "metric": m,
                        "mean": w[f"{m}.mean"],
                        "ci_low": w[f"{m}.ci_low"],
                        "ci_high": w[f"{m}.ci_high"],
                        "n": int(w[f"{m}.n"]),
                    }
                )
        for col in extra:
            if pd.notna(w.get(col)):
                kind = (
                    "judge"
                    if col.startswith("judge")
                    else ("count" if col in ("failed",) else "cost")
                )
                rows.append(
                    {
                        **base,
                        "kind": kind,
                        "metric": col,
                        "mean": w[col],
                        "ci_low": None,
                        "ci_high": None,
                        "n": int(w["n"]),
                    }
                )
    return pd.DataFrame(rows)


def best_cells(wide: pd.DataFrame, metrics: Sequence[str]) -> set[tuple[int, str]]:
    """(row, metric) pairs holding the best mean within their comparable group, by the metric's direction.
    Oracle rows (``metrics.json`` ``oracle``: they read the gold evidence) are never ranked."""
    marked: set[tuple[int, str]] = set()
    if "oracle" in wide:
        wide = wide[~wide["oracle"].astype(bool)]
    for metric in metrics:
        better = direction(metric)
        col = f"{metric}.mean"
        if better is None or col not in wide:
            continue
        for _, group in wide.groupby("set"):
            values = group[col].dropna()
            if len(values) < 2:
                continue
            best = values.max() if better else values.min()
            marked.update((i, metric) for i, v in values.items() if v == best)
    return marked


def present_metrics(runs: Sequence[dict[str, Any]], preferred: Sequence[str]) -> list[str]:
    """The preferred metrics that some run has, then any other metric runs report, in a stable order."""
    have = {m for r in runs for m in r["metrics"]}
    first = [m for m in preferred if m in have]
    return first + sorted(have - set(first), key=_natural)


def _natural(name: str) -> list:
    """Sort key that puts evidence_recall_at_3 before evidence_recall_at_10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
