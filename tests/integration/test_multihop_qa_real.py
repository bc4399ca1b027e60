"""`run.py memory=full_context dataset=<hotpotqa|twowiki|musique>` on the fixtures with the embedded
default models (llama.cpp model, MiniLM): the run exits 0 and writes EM / F1 and evidence recall for
every question (values in [0, 1]; a small model's answers are not pinned)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow
FIX = ROOT / "tests" / "fixtures"
CASES = {
    "hotpotqa": FIX / "hotpotqa" / "hotpot_dev_distractor_v1.json",
    "twowiki": FIX / "twowiki" / "dev.json",
    "musique": FIX / "musique" / "musique_ans_v1.0_dev.jsonl",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_py_on_the_fixture_with_the_embedded_default(name, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "run.py",
        "memory=full_context",
        f"dataset={name}",
        f"dataset.loader.path={CASES[name]}",
        "dataset.limit=1",  # one question per dataset: the path under test, not the scores
        f"hydra.run.dir={out}",
        "progress=false",
        "eval.judge.calibration_max=0",  # the judge audit's canaries: not this test's subject
        "eval.judge_audit.lenient=false",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    n = len(samples)
    assert n == metrics["counts"]["questions"] == metrics["counts"]["scored"] > 0
    assert metrics["llm"].startswith("llama.cpp:")
    for key in ("exact_match", "f1", "evidence_recall"):
        assert metrics["metrics"][key]["n"] == n and 0.0 <= metrics["metrics"][key]["mean"] <= 1.0
    assert metrics["metrics"]["evidence_recall"]["mean"] == pytest.approx(1.0)
    assert all((s["prediction"] or "").strip() for s in samples)  # an answer to every question
