"""`run.py dataset=membench` on its exact-schema fixture with the embedded tiny model (SmolLM2-135M via
llama.cpp, MiniLM): the pipeline and MemBench's own scores, not answer quality. Two questions to bound
the model's calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from memharness.eval.metrics.membench import read_letter
from paths import FIXTURES, ROOT

pytestmark = pytest.mark.slow


def test_membench_observation_on_the_fixture_with_the_embedded_model(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "run.py",
        "memory=memorystream",
        "llm=local_tiny",
        "dataset=membench",
        f"dataset.loader.path={FIXTURES / 'membench'}",
        "dataset.limit=2",
        f"hydra.run.dir={out}",
        "progress=false",
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert metrics["counts"]["questions"] == 2 == metrics["counts"]["scored"]
    assert metrics["metrics"]["membench_accuracy"]["n"] == 2
    for s in samples:  # recomputed from the raw reply: the letter read as upstream reads it
        gold = "ABCD"[s["gold_option"]]
        letter = read_letter(s["prediction"])
        assert s["scores"]["membench_accuracy"]["value"] == float(letter == gold)
        assert s["scores"]["membench_unparsed"]["value"] == float(letter is None)
        assert 0.0 <= s["scores"]["evidence_recall_at_10"]["value"] <= 1.0
    assert "MemBench accuracy (membench_accuracy)" in proc.stdout + proc.stderr
    assert metrics["data"]["metadata"]["perspective"] == "third"
