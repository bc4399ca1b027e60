"""``memharness rescore OLD NEW``: a run-format-2 folder rebuilt as a format-3 one.

Each sample is converted (``eval/record/convert.py``), then the scorers run again on it: the
answer's scorers (choice, claim, lexical, latency) from the recorded prediction, the harness judge
and the benchmark's own judge through the call cache only. The judge's requests are rebuilt from
OLD's config.yaml, so they have the content-addressed keys the run's calls had; a reply the cache
does not hold is never guessed: it is counted and NEW is not written. No backend is ever called
(the judges' backend refuses every call). Evidence recall, closed book and the judge audit (which
need the dataset or run-level passes) are carried over from OLD as recorded. metrics.json's
counts, means, breakdowns, official-judge summary and outcome are recomputed; its identity, data,
time, calls and env stay OLD's, and ``rescored_from`` says where it came from.

    memharness rescore results/runs/old results/runs/old-v3 [--cache PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from memharness.eval.judge import loop as judge_loop
from memharness.eval.judge import official
from memharness.eval.judge.judges import Judges
from memharness.eval.metrics import registry
from memharness.eval.metrics.scorers import ANSWER_SCORERS, ScoreContext
from memharness.eval.record import folder as run_io
from memharness.eval.record import outcome, schema
from memharness.eval.record.convert import sample_2_to_3
from memharness.eval.run.runner import summarize_run
from memharness.eval.run.scoring import score_answers
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import BackendError, Completion
from memharness.memsys.types import Question
from omegaconf import DictConfig, OmegaConf

# the scorers rescore runs again; every other score is carried over from OLD as recorded
RESCORED = {s.name for s in (*ANSWER_SCORERS, judge_loop.SCORER, official.SCORER)}


class RescoreError(Exception):
    """OLD is not a format-2 run folder, NEW exists, or a judge reply is not in the cache."""


class CacheOnly:
    """A chat backend that answers nothing: every call that reaches it is a cache miss, counted."""

    max_concurrency = 1

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.calls = 0

    def chat(self, request: Any) -> Completion:
        self.calls += 1
        raise BackendError("not in the call cache (rescore never calls a backend)")


def kind_of(metric: str) -> str:
    entry = registry.lookup(metric)
    return entry.scorer if entry is not None else "unknown"


def question_of(sample: dict[str, Any]) -> Question:
    """The question as the scorers read it, from what the sample recorded."""
    return Question(
        id=sample["question_id"],
        text=sample["question"],
        answers=tuple(sample["references"]),
        position=sample["position"] or 0,
        options=tuple(sample["options"]) if sample["options"] else None,
        gold_option=sample["gold_option"],
        categories=dict(sample["categories"]),
    )


def read_old(old: Path) -> tuple[dict[str, Any], list[dict[str, Any]], DictConfig]:
    """OLD's metrics.json, samples.jsonl and config.yaml; refused unless it is run format 2."""
    path = old / "metrics.json"
    if not path.is_file():
        raise RescoreError(f"{old} is not a run folder (no metrics.json)")
    metrics = json.loads(path.read_text(encoding="utf-8"))
    if metrics.get("format", 1) != 2:
        raise RescoreError(
            f"{path}: run format {metrics.get('format', 1)}; rescore converts run format 2 only"
        )
    lines = (old / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    samples = [json.loads(line) for line in lines if line.strip()]
    return metrics, samples, OmegaConf.load(old / "config.yaml")


def judges_of(metrics: dict[str, Any], cfg: DictConfig, cache: CallCache | None) -> Judges | None:
    """The run's primary judge, answered from the cache only; None when the run had no judge."""
    if not metrics.get("judge") or not bool(cfg.eval.judge.enabled):
        return None
    backend = CacheOnly(metrics["judge"])
    llm = LLM(backend, Meter(), cache, retry=RetryPolicy(max_retries=0), progress=False)
    return Judges(primary=llm, names={"judge": str(metrics.get("judge_config") or "same")})


def rescore(old: Path, new: Path, cache_path: str | None = None) -> dict[str, Any]:
    """Write NEW from OLD (module docstring); returns NEW's metrics.json."""
    if new.exists():
        raise RescoreError(f"{new} exists: rescore writes a new folder only")
    metrics, old_samples, cfg = read_old(old)
    proto = official.settings(cfg)
    official_metric = official.metric_name(proto) if proto else official.METRIC
    samples = [sample_2_to_3(s, kind_of, official_metric) for s in old_samples]
    for s in samples:
        s["scores"] = {k: v for k, v in s["scores"].items() if v["kind"] not in RESCORED}
    pending = [(question_of(s), [], s) for s in samples]
    path = cache_path or (cfg.cache.path if cfg.cache.enabled else None)
    cache = CallCache(path) if path else None
    judges = judges_of(metrics, cfg, cache)
    services = SimpleNamespace(meter=judges.primary.meter if judges else Meter())
    score_answers(pending, cfg)
    ctx = ScoreContext(cfg, services, judges)
    misses = 0
    if judges is not None:
        judge_loop.SCORER.score(pending, ctx)
        official.SCORER.score(pending, ctx)
        misses = judges.primary.backend.calls
    if misses:
        raise RescoreError(
            f"{misses} judge replies of {old} are not in the call cache {path}: nothing written "
            "(re-run the run with its cache, or pass --cache)"
        )
    out = {**metrics, "format": schema.FORMAT, **summarize_run(samples, cfg)}
    if metrics.get("official_judge") is not None:
        out["official_judge"] = official.summary(samples, cfg, judges)
    out["outcome"] = {
        **outcome.outcome(out, cfg, None),
        "nonfinite_nulled": (metrics.get("outcome") or {}).get("nonfinite_nulled", 0),
    }
    out["rescored_from"] = {"folder": str(old), "format": 2, "cache": str(path), "calls": misses}
    shutil.copytree(old, new, ignore=shutil.ignore_patterns("samples.jsonl", "metrics.json"))
    run_io.write_samples(new, samples)
    run_io.write_metrics(new, out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memharness rescore", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("old", type=Path, help="a run-format-2 run folder")
    parser.add_argument("new", type=Path, help="the format-3 folder to write (must not exist)")
    parser.add_argument("--cache", help="the call cache (default: OLD's config.yaml cache.path)")
    args = parser.parse_args(argv)
    try:
        rescore(args.old, args.new, args.cache)
    except RescoreError as err:
        sys.stderr.write(f"memharness rescore: {err}\n")
        return outcome.EXIT_USER_ERROR
    sys.stdout.write(f"{args.new}: run format {schema.FORMAT}, 0 backend calls\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
