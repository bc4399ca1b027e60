"""`run.py memory=<full_context|raptor> dataset=<name>` on each multi-hop QA fixture, under both
protocols, with the scripted LLM and the hashing embedder.

The script answers some questions right (by a phrase of the question) and leaves the rest to the
default reply, so EM / F1 are known fractions whatever the memory retrieves; full context holds every
passage, so its evidence recall is 1 for every question with supporting facts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from paths import ROOT

FIX = ROOT / "tests" / "fixtures"
# name -> (fixture, [[question phrase, scripted reply]], expected EM, expected F1, categories)
CASES = {
    "hotpotqa": (
        FIX / "hotpotqa" / "hotpot_dev_distractor_v1.json",
        [["Which publisher printed", "Marlow Press"], ["Lake Brenn and Lake Ostra", "yes"]],
        2 / 3,
        2 / 3,
        {"type": {"bridge", "comparison"}, "level": {"easy", "medium", "hard"}},
    ),
    "musique": (  # an alias is scored as a reference: the reply names it
        FIX / "musique" / "musique_ans_v1.0_dev.jsonl",
        [["lead singer of the performer", "Sela Marie Wren"], ["spouse of Sela Wren", "Nordmark"]],
        2 / 3,
        2 / 3,
        {"hops": {"2hop", "3hop", "4hop"}, "shape": {"2hop", "3hop1", "4hop3"}},
    ),
    "twowiki": (  # id_aliases.json beside dev.json: "M. Doran" is a reference of two questions
        FIX / "twowiki" / "dev.json",
        [["mother of the director", "M. Doran"], ["came out first", "Glass Orchard"]],
        2 / 4,
        2 / 4,
        {"type": {"comparison", "inference", "compositional", "bridge_comparison"}},
    ),
}


def _script(pairs: list[list[str]]) -> str:
    rows = [["| Predicted: ", "1"], *pairs]  # judge prompts first, as conf/llm/scripted.yaml
    return "[" + ",".join(f'["{p}","{r}"]' for p, r in rows) + "]"


RUNS = [
    (name, memory, protocol)
    for name in sorted(CASES)
    for memory, protocol in (
        ("full_context", "per_question"),
        ("full_context", "shared_corpus"),
        ("raptor", "per_question"),
    )
]


@pytest.mark.slow
@pytest.mark.doubles
@pytest.mark.parametrize("name,memory,protocol", RUNS)
def test_run_scores_em_f1_and_evidence_recall(name, memory, protocol, tmp_path):
    path, pairs, em, f1, categories = CASES[name]
    env = {
        **os.environ,
        "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"),
        "MEMHARNESS_DATA": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "run.py",
        f"hydra.run.dir={tmp_path / 'run'}",
        "progress=false",
        f"memory={memory}",
        f"dataset={name}",
        f"dataset.loader.protocol={protocol}",
        f"dataset.loader.path={path}",
        "llm=scripted",
        "embedder=hashing",
        f"llm.backend.script={_script(pairs)}",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert metrics["data"]["name"] == name and metrics["counts"]["questions"] == len(samples)
    assert metrics["metrics"]["exact_match"]["mean"] == pytest.approx(em)
    assert metrics["metrics"]["f1"]["mean"] == pytest.approx(f1)
    assert metrics["metrics"]["evidence_recall"]["n"] == len(samples)
    recall = metrics["metrics"]["evidence_recall"]["mean"]
    if memory == "full_context":  # every passage is in the context
        assert recall == pytest.approx(1.0)
    else:
        assert 0.0 <= recall <= 1.0
    episodes = {s["episode_id"] for s in samples}
    assert len(episodes) == (1 if protocol == "shared_corpus" else len(samples))
    for key, values in categories.items():
        assert {s["categories"][key] for s in samples} == values
