"""The chain-of-thought answer prompt with the real tiny embedded model (debug=default: SmolLM2, one
question): every reply is either scored by its answer line or recorded as a counted failure."""

from __future__ import annotations

import json

import pytest
from processes import run_py


@pytest.mark.slow
def test_cot_replies_are_scored_by_their_answer_line_or_counted(tmp_path):
    # one question and a shorter reasoning budget keep it to seconds
    proc = run_py(
        tmp_path,
        "debug=default",
        "answer_prompt=cot",
        "dataset.limit=1",
        "eval.answer.max_tokens=96",
    )
    assert proc.returncode in (0, 4), proc.stderr[-3000:]  # 4: too many failed answers (counted)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    samples = [json.loads(s) for s in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 1 and metrics["llm"].startswith("llama.cpp:SmolLM2")
    for s in samples:
        assert "step by step" in s["prompt"]
        if s["status"] == "scored":
            assert "\n" not in s["prediction"] and not s["prediction"].startswith("Answer:")
        else:
            assert s["status"] == "answer_failed" and s["error"].startswith("AnswerUnparsed")
    failed = sum(s["status"] == "answer_failed" for s in samples)
    assert metrics["counts"].get("answer_failed", 0) == failed
