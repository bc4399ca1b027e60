"""`run.py dataset=mab` and `dataset=beam` on their exact-schema fixtures with the embedded tiny model
(SmolLM2-135M via llama.cpp, MiniLM): the pipeline and the official scores, not answer quality. Two
questions each to bound the model's calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from paths import FIXTURES, ROOT

pytestmark = pytest.mark.slow


def run_py(tmp_path, *overrides: str) -> tuple[dict, list[dict]]:
    out = tmp_path / "run"
    env = {**os.environ, "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "run.py",
        "memory=memorystream",
        "llm=local_tiny",
        "dataset.limit=2",
        f"hydra.run.dir={out}",
        "progress=false",
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",
        *overrides,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    return json.loads((out / "metrics.json").read_text()), samples


def test_mab_conflict_resolution_on_the_fixture_with_the_embedded_model(tmp_path):
    metrics, samples = run_py(
        tmp_path,
        "dataset=mab",
        "dataset.loader.competency=cr",
        "dataset.loader.source=factconsolidation_sh_6k",
        f"dataset.loader.path={FIXTURES / 'mab'}",
        "dataset.loader.chunk_size=256",
    )
    assert metrics["counts"]["questions"] == 2 == metrics["counts"]["scored"]
    assert metrics["metrics"]["mab_accuracy"]["n"] == 2
    for s in samples:  # the official headline is substring EM, recomputed from the answer
        gold = [g.lower() for g in s["references"]]
        expected = float(any(g in s["prediction"].lower() for g in gold))
        assert s["scores"]["mab_accuracy"]["value"] == expected
    assert metrics["data"]["metadata"]["source"] == "factconsolidation_sh_6k"


def test_beam_on_the_fixture_with_the_embedded_model_judged_nugget_by_nugget(tmp_path):
    metrics, samples = run_py(
        tmp_path,
        "dataset=beam",
        f"dataset.loader.path={FIXTURES / 'beam'}",
        "dataset.loader.conversations=[1]",
        "judge.official.constrained=true",  # the tiny judge held to the verdict's JSON
    )
    assert metrics["counts"]["questions"] == 2 == metrics["counts"]["scored"]
    official = metrics["official_judge"]
    assert official["protocol"] == "beam" and official["judge_unparsed"] == 0
    for s in samples:
        details = s["scores"]["beam_nugget"]["details"]
        verdicts = [n["score"] for n in details["nuggets"]]
        assert details["status"] == "parsed" and set(verdicts) <= {0.0, 0.5, 1.0}
        assert s["scores"]["beam_nugget"]["value"] == sum(verdicts) / len(verdicts)
    abilities = {s["categories"]["ability"] for s in samples}
    assert set(official["beam"]["per_ability"]) == abilities
    assert 0.0 <= official["beam"]["overall"] <= 1.0
    canaries = official["nugget_audit"]["canary_nuggets"]  # the audit ran on the same judge
    assert canaries["reference"] >= 1 and canaries["other_reference"] >= 1
