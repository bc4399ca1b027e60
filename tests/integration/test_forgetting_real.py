"""The forgetting protocol end to end with the real embedded models (SmolLM2-135M via llama.cpp,
MiniLM): experiment=forgetting's MemTree cell on the sample, own forget, judged readings included.
Plumbing, not quality."""

from __future__ import annotations

import json

import pytest
from processes import run_py

pytestmark = pytest.mark.slow


def test_memtree_forgets_through_the_stream_with_the_embedded_models(tmp_path):
    proc = run_py(
        tmp_path,
        "experiment=forgetting",
        "memory=memtree",
        "dataset.forget.method=own",
        "llm=local_tiny",
        "embedder=local",
        "memory.aggregate_max_tokens=32",
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",
        multirun=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = [p.parent for p in (tmp_path / "runs").rglob("metrics.json")]
    metrics = json.loads((folder / "metrics.json").read_text())["metrics"]
    assert metrics["forget_leak"] == {**metrics["forget_leak"], "n": 2, "mean": 0.0}
    assert metrics["stale_retrieval"]["n"] == 2
    stats = json.loads((folder / "memory_stats.json").read_text())
    forgets = [f for s in stats.values() for f in s.get("forgets", [])]
    assert len(forgets) == 2 and {f["method"] for f in forgets} == {"prune_and_rewrite"}
    assert all(f["prompt_tokens"] >= 0 and f["seconds"] > 0 for f in forgets)
    # the judged readings, with their own prompts, through the real model: a verdict (or a recorded
    # unparsed reply) for each of the 2 deletions, with the reply kept for reading
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    judged = [s["scores"] for s in samples if "forget_leak" in s["scores"]]
    assert len(judged) == 2
    for scores in judged:
        for metric in ("forget_answer_leak_judge", "forget_abstain_judge"):
            assert scores[metric]["kind"] == "forget_judge"
            assert scores[metric]["details"]["status"] in ("parsed", "judge_unparsed")
            assert (
                scores[metric]["value"] in (0.0, 1.0, None) and "reply" in scores[metric]["details"]
            )
