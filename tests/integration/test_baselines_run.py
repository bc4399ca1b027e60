"""The two reference rows through the runner: the gold-evidence oracle (metrics.json says oracle,
evidence recall 1.0, its context is exactly the evidence) and the full-history summary (built once per
episode, one call per session, the same summary for every question); then run.py with the real
embedded models (slow)."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep.sample import load as load_sample
from memharness.eval.record.scores import value
from memharness.eval.run.runner import run
from processes import run_py


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_oracle_run_gives_exactly_the_evidence_and_is_marked_in_metrics(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(make_cfg("memory=oracle"), out)
    assert metrics["oracle"] is True
    assert json.loads((out / "metrics.json").read_text())["oracle"] is True
    assert metrics["metrics"]["evidence_recall"]["mean"] == 1.0
    units = {u.id: u for e in load_sample().episodes for u in e.units}
    for sample in _samples(out):
        assert sample["retrieved"], sample["question_id"]
        covered = {
            units[uid].source_id for i in sample["retrieved"] for uid in i["source_unit_ids"]
        }
        assert covered == set(sample["evidence_sources"])  # nothing but the evidence's sources
    stats = json.loads((out / "memory_stats.json").read_text())
    assert all(st["oracle"] and st["questions_without_evidence"] == 0 for st in stats.values())
    assert stats["news"]["fact_items"] > 0  # the news facts are the context there


def test_a_memory_run_is_not_marked_oracle(make_cfg, tmp_path):
    assert "oracle" not in run(make_cfg("memory=full_context", "dataset.limit=2"), tmp_path / "r")


def test_history_summary_run_summarises_each_episode_once(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(make_cfg("memory=history_summary"), out)
    dataset = load_sample()
    stats = json.loads((out / "memory_stats.json").read_text())
    for episode in dataset.episodes:
        st = stats[episode.id]
        sessions = len({u.source_id for u in episode.units})
        assert (st["builds"], st["summary_calls"]) == (1, sessions), episode.id
        assert st["summarised_units"] == len(episode.units) and st["compression_ratio"] > 0
    by_episode: dict[str, set] = {}
    for sample in _samples(out):
        (item,) = sample["retrieved"]
        assert len(item["source_unit_ids"]) == len(
            next(e for e in dataset.episodes if e.id == sample["episode_id"]).units
        )
        by_episode.setdefault(sample["episode_id"], set()).add(item["text"])
    assert all(len(texts) == 1 for texts in by_episode.values())  # one summary per episode
    sessions = sum(len({u.source_id for u in e.units}) for e in dataset.episodes)
    build = metrics["intrinsic"]["build"]
    assert build["calls"] + build.get("cache_hits", 0) == sessions


@pytest.mark.slow
@pytest.mark.parametrize("memory", ["oracle", "history_summary"])
def test_run_py_runs_the_reference_rows_with_the_embedded_model(memory, tmp_path):
    """The pipeline, not quality: SmolLM2-135M. The summary runs on the dialogues only, with short
    summaries (the 12 news articles at 512 tokens each took over 15 minutes on a busy 2-core machine)."""
    small = (
        ["dataset.loader.parts=[dialogues]", "memory.summary_max_tokens=64"]
        if memory == "history_summary"
        else []
    )
    proc = run_py(
        tmp_path,
        f"memory={memory}",
        "dataset=sample",
        "dataset.limit=3",
        "llm=local_tiny",
        "eval.judge.calibration_max=0",
        *small,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    stats = json.loads((out / "memory_stats.json").read_text())
    samples = _samples(out)
    assert len(samples) == 3 and all(s["status"] == "scored" for s in samples)
    if memory == "oracle":
        assert all(st["oracle"] and st["questions"] >= 1 for st in stats.values())
        assert all(value(s, "evidence_recall") == 1.0 for s in samples)
    else:
        assert all(st["summary_calls"] >= 1 and st["summary_tokens"] > 0 for st in stats.values())
        assert all(st["compression_ratio"] > 0 for st in stats.values())
