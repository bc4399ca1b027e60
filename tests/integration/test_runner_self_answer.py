"""The runner with memories that answer their own questions (the hook GraphRAG's global search uses)."""

from __future__ import annotations

import json

from memharness.data_prep.sample import load as load_sample
from memharness.eval.record.scores import memory_flag
from memharness.eval.run.runner import run

SELF = ["memory=full_context", "memory._target_=graphrag_fakes.SelfAnsweringMemory"]


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_a_self_answering_memory_answers_inside_the_episode_and_is_scored_like_the_rest(
    make_cfg, tmp_path
):
    cfg = make_cfg(
        *SELF, "dataset.limit=4", 'llm.backend.script=[["SELF","Pepper"],["| Predicted: ","1"]]'
    )
    out = tmp_path / "run"
    metrics = run(cfg, out)
    samples = _samples(out)
    assert len(samples) == 4 and all(
        memory_flag(s, "answered_by") == "memory" and s["status"] == "scored" for s in samples
    )
    assert all(s["prompt"].startswith("SELF ") and s["prediction"] == "Pepper" for s in samples)
    assert all(s["prompt"].endswith(f"over {len(s['retrieved'])} items") for s in samples)
    calls = metrics["calls"]
    assert (
        calls["answer"]["calls"] == 4
    )  # the memory's own calls; the shared answer prompt made none
    assert (
        calls["retrieve"]["calls"] == 0 and calls["judge"]["calls"] >= 4
    )  # judging stays the shared path
    assert metrics["metrics"]["judge"]["n"] == 4 and "f1" in metrics["metrics"]


def test_a_memory_that_fails_to_answer_is_recorded_as_answer_failed(make_cfg, tmp_path):
    cfg = make_cfg(*SELF, "+memory.fail_on=ankle")
    out = tmp_path / "run"
    metrics = run(cfg, out)
    failed = [s for s in _samples(out) if s["status"] == "answer_failed"]
    assert [s["question"] for s in failed] == ["Which ankle was sprained during training?"]
    assert (
        "RuntimeError: cannot answer" in failed[0]["error"]
        and memory_flag(failed[0], "answered_by") == "memory"
    )
    assert metrics["counts"]["answer_failed"] == 1
    assert metrics["counts"]["scored"] == load_sample().num_questions - 1


def test_other_memories_still_answer_through_the_shared_prompt(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(make_cfg("memory=full_context", "dataset.limit=3"), out)
    assert all(
        memory_flag(s, "answered_by") is None and s["prompt"].startswith("Search results:")
        for s in _samples(out)
    )
    assert metrics["calls"]["answer"]["calls"] == 3
