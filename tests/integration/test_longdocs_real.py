"""One Hydra multirun, in one process, over NarrativeQA, QMSum, ODSum-Story and ODSum-Meeting x
{full_context, raptor} on the fixtures (placed as the data directory's local copies) with the
embedded default models: every run exits 0 and writes the metrics its paper column reports (F1 / EM
for NarrativeQA; ROUGE-1 / ROUGE-L F-measure and ACC-L for the summary sets). A small model's
answers are not pinned; one question per run keeps the test short."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow
FIX = ROOT / "tests" / "fixtures"
COLUMNS = {
    "narrativeqa": ("f1", "exact_match"),
    "qmsum": ("rouge_1_f", "rouge_l_f", "acc_l"),
    "odsum_story": ("rouge_1_f", "rouge_l_f", "acc_l"),
    "odsum_meeting": ("rouge_1_f", "rouge_l_f", "acc_l"),
}

SHORT_JUDGE = "Query: {question} | Reference: {reference} | Predicted: {prediction}. Same answer? Reply 1 or 0 ->"


def test_multirun_of_the_four_datasets_with_full_context_and_raptor(tmp_path):
    data = tmp_path / "data"
    for name in COLUMNS:  # <data_dir>/<name> is where each loader looks for its local copy
        shutil.copytree(FIX / name, data / name)
    sweep = tmp_path / "sweep"
    env = {
        **os.environ,
        "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"),
        "MEMHARNESS_DATA": str(data),
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "run.py",
        "-m",
        f"dataset={','.join(COLUMNS)}",
        "memory=full_context,raptor",
        f"hydra.sweep.dir={sweep}",
        "progress=false",
        "dataset.limit=1",  # one question per run: the subject is the wiring, not the scores
        "dataset.budget_tokens=256",
        "eval.answer.max_tokens=16",
        # A one-line harness judge prompt: the judge metric is not this test's subject, and the
        # default's worked examples cost ~300 prompt tokens per run (the model reloads per run).
        f"eval.judge.prompt='{SHORT_JUDGE}'",
        "eval.judge.calibration_max=0",  # the judge audit's canaries: not this test's subject
        "eval.judge_audit.lenient=false",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for path in sweep.rglob("metrics.json"):
        metrics = json.loads(path.read_text())
        found[(metrics["data"]["name"], metrics["memory"])] = metrics
    assert set(found) == {(d, m) for d in COLUMNS for m in ("full_context", "raptor")}
    for (name, _), metrics in found.items():
        assert metrics["counts"]["questions"] == metrics["counts"]["scored"] == 1
        assert metrics["llm"].startswith("llama.cpp:")
        for key in COLUMNS[name]:
            assert metrics["metrics"][key]["n"] == 1, (name, key)
            assert 0.0 <= metrics["metrics"][key]["mean"] <= 1.0
        if "acc_l" in COLUMNS[name]:
            assert metrics["official_judge"]["protocol"] == "cam_acc_l"
            assert metrics["official_judge"]["judged"] == 1
        else:
            assert "acc_l" not in metrics["metrics"] and metrics.get("official_judge") is None
