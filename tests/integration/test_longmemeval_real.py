"""`run.py memory=memorystream dataset=longmemeval` on the fixtures with the embedded default models
(Qwen2.5-Coder-1.5B via llama.cpp, MiniLM), for the s and oracle splits. Each run keeps a stratified
subset (dataset.limit: two of s's seven questions, three of oracle's four, the abstention one among
them) to bound the model's calls; every type of s runs in the scripted run (test_longmemeval_run.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from memharness.eval.record.scores import status
from paths import ROOT

pytestmark = pytest.mark.slow
FIX = ROOT / "tests" / "fixtures" / "longmemeval"
TYPES = {
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
}


@pytest.mark.parametrize(
    "split,file,questions,abstentions",
    [("s", "longmemeval_s_cleaned.json", 2, 0), ("oracle", "longmemeval_oracle.json", 3, 1)],
)
def test_run_py_on_the_fixture_with_the_embedded_default(
    split, file, questions, abstentions, tmp_path
):
    out = tmp_path / "run"
    env = {**os.environ, "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "run.py",
        "memory=memorystream",
        "dataset=longmemeval",
        f"dataset.loader.path={FIX / file}",
        f"dataset.loader.split={split}",
        f"dataset.limit={questions}",
        f"hydra.run.dir={out}",
        "progress=false",
        "eval.judge.calibration_max=0",  # the audit's canaries and lenient pass: not this test's subject
        "eval.judge_audit.lenient=false",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert metrics["counts"]["questions"] == questions == metrics["counts"]["scored"]
    assert metrics["llm"].startswith("llama.cpp:qwen2.5-coder-1.5b")
    # the harness judge and the official protocol, each with a value per question
    assert metrics["metrics"]["judge"]["n"] + metrics["counts"]["judge_unparsed"] == questions
    official = metrics["official_judge"]
    assert official["protocol"] == "longmemeval" and official["judged"] == questions
    assert 0.0 <= official["overall"] <= 1.0 and 0.0 <= official["task_averaged"] <= 1.0
    assert set(official["per_category"]) <= TYPES and official["abstention"]["n"] == abstentions
    assert set(metrics["breakdowns"]["abstention"]) == {"abstention", "answerable"} - (
        set() if abstentions else {"abstention"}
    )
    assert set(metrics["breakdowns"]["type"]) == set(official["per_category"])
    # evidence recall over the answerable questions, the file's sha256
    # (the file's no_user_answer_turn counts every question of the file, not this run's subset)
    left_out = sum(  # answerable, but no user turn holds the answer: no gold evidence
        not s["evidence_sources"] and s["categories"]["abstention"] == "answerable" for s in samples
    )
    assert metrics["data"]["metadata"]["no_user_answer_turn"] >= left_out
    assert metrics["metrics"]["evidence_recall"]["n"] == questions - abstentions - left_out
    assert metrics["data"]["files"] == {str(FIX / file): metrics["data"]["files"][str(FIX / file)]}
    assert len(metrics["data"]["files"][str(FIX / file)]) == 64
    assert metrics["data"]["metadata"]["split"] == split
    # the data's date is the answer prompt's current date
    for s in samples:
        assert "Current date: 20" in s["prompt"] and status(s, "official_judge") == "parsed"
