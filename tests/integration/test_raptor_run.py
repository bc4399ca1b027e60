"""RAPTOR's configs compose and build, and run.py runs it end to end with the real embedded models."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
import yaml
from memharness.eval.run.runner import build_memory
from memharness.memsys.raptor.memory import Raptor
from paths import ROOT
from test_cli import run_py

CONF = ROOT / "conf"
EXPERIMENTS = {
    "raptor_memtree_quality": {"dataset": "quality", "budget": 8192, "chunk": 512},
    "raptor_memtree_multihop": {"dataset": "multihop", "budget": 8192, "chunk": 1024},
    "raptor_cam_novelqa": {"dataset": "novelqa", "budget": 2000, "chunk": 512},
    "raptor_cam_multihop": {"dataset": "multihop", "budget": 2000, "chunk": 512},
}


def _keys(node: dict, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for key, value in node.items():
        out.append((prefix, key))
        if isinstance(value, dict):
            out.extend(_keys(value, prefix + "  "))
    return out


def test_every_key_of_the_raptor_config_is_commented():
    text = (CONF / "memory" / "raptor.yaml").read_text()
    lines = text.splitlines()
    start = 0  # keys come in file order; a grouped key is found after its section's line
    for indent, key in _keys(yaml.safe_load(text)):
        i, line = next(
            (i, ln)
            for i, ln in enumerate(lines)
            if i >= start and re.match(rf"^{indent}{re.escape(key)}:", ln)
        )
        start = i + 1
        if key in ("_target_", "name"):
            continue
        assert "#" in line or lines[i - 1].lstrip().startswith("#"), (
            f"raptor.yaml: {key} has no comment"
        )


def test_the_summary_prompt_is_our_own_and_asks_for_the_papers_output(make_cfg):
    cfg = make_cfg("memory=raptor")
    prompt = cfg.memory.summaries.prompt
    assert "{context}" in prompt and "key details" in prompt
    assert "Write a summary of the following" not in prompt  # not the public code's wording
    assert cfg.memory.summaries.max_tokens == 100 and cfg.memory.chunks.max_tokens == 100


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_experiment_configs_compose_and_build_a_raptor(make_cfg, name):
    want = EXPERIMENTS[name]
    cfg = make_cfg(f"experiment={name}")
    assert cfg.memory.name == "raptor" and cfg.dataset.name == want["dataset"]
    assert (
        cfg.dataset.budget_tokens == want["budget"]
        and cfg.dataset.loader.chunk_size == want["chunk"]
    )
    assert (
        cfg.memory.top_k == 10
        and cfg.memory.traversal == "collapsed"
        and cfg.memory.stop_at_first_overflow
    )
    memory = build_memory(cfg, SimpleNamespace(llm=None, embedder=None, tokenizer=None))
    assert (
        isinstance(memory, Raptor)
        and memory.chunks.chunker == "sentences"
        and memory.seed == cfg.seed
    )
    text = (CONF / "experiment" / f"{name}.yaml").read_text()
    assert (
        text.startswith("# @package _global_")
        and "Paper settings" in text
        and "What differs" in text
    )


@pytest.mark.slow
def test_run_py_builds_saves_and_reports_raptor_on_the_sample(tmp_path):
    """The embedded SmolLM2 + MiniLM, two questions: a dialogue episode (6 chunks: leaves only) and
    the news episode (12 chunks: one summary layer)."""
    proc = run_py(
        tmp_path,
        "memory=raptor",
        "dataset=sample",
        "dataset.limit=2",
        "llm=local_tiny",
        "eval.judge.calibration_max=0",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and all(s["status"] == "scored" for s in samples)
    assert all(
        s["retrieved"] and all(i["source_unit_ids"] for i in s["retrieved"]) for s in samples
    )
    stats = json.loads((out / "memory_stats.json").read_text())
    assert "news" in stats and len(stats) == 2
    for episode, st in stats.items():
        folder = out / "memory" / episode
        assert {"hierarchy.json", "embeddings.npy", "view.html"} <= {
            p.name for p in folder.iterdir()
        }
        assert st["raptor"]["builds"] == 1 and len(st["rebuilds"]) == 1
        assert (
            "levels" in st
            and "coherence" in st
            and st["levels"]["0"]["nodes"] == st["raptor"]["last_build"]["leaves"]
        )
    news = stats["news"]
    assert news["raptor"]["last_build"]["leaves"] > 11 and news["structure"]["levels"] >= 2
    layer = news["raptor"]["last_build"]["layers"][0]
    assert layer["llm_calls"] == layer["clusters"] == news["levels"]["1"]["nodes"] >= 1
    assert news["raptor"]["summary_failures_total"] == 0
    assert news["levels"]["1"]["compression"] is not None and "1" in news["coherence"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert (
        metrics["calls"]["build"]["calls"] + metrics["calls"]["build"]["cache_hits"]
        == layer["llm_calls"]
    )
    doc = json.loads((out / "memory" / "news" / "hierarchy.json").read_text())
    assert doc["system"].endswith("raptor.Raptor") and max(n["level"] for n in doc["nodes"]) >= 1
