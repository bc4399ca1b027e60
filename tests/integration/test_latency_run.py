"""Latency per question and stage, ingestion cost per episode: a warm rerun shows the cold run's
backend latencies, and the report tabulates them and draws the Pareto figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memharness.eval.metrics import registry
from memharness.eval.report.comparison import build_report
from memharness.eval.run.runner import run

OVERRIDES = (
    "memory=memorystream",
    "memory.scoring=generative_agents",
    "dataset.limit=4",
    'llm.backend.script=[["Rating","6"],["| Predicted: ","1"]]',
    "+llm.backend.latency_s=0.02",
    "+embedder.backend.latency_s=0.01",
)


def _latencies(folder: Path) -> dict[str, dict[str, float]]:
    out = {}
    for line in (folder / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        out[s["question_id"]] = {
            k: v["value"] for k, v in s["scores"].items() if v["kind"] == "latency"
        }
    return out


def test_warm_rerun_reports_the_cold_runs_latencies_and_ingestion(make_cfg, tmp_path):
    cold = run(make_cfg(*OVERRIDES), tmp_path / "cold")
    warm = run(make_cfg(*OVERRIDES), tmp_path / "warm")
    assert warm["calls"]["total"]["calls"] == 0 and warm["calls"]["total"]["embed_calls"] == 0
    hot, again = _latencies(tmp_path / "cold"), _latencies(tmp_path / "warm")
    assert hot.keys() == again.keys() and len(hot) == cold["counts"]["scored"] > 0
    for qid, values in hot.items():
        assert values["answer_latency_s"] >= 0.02  # the answer call's own latency
        assert values["search_backend_s"] > 0  # the query's embedding
        for key in ("search_backend_s", "answer_latency_s", "context_tokens"):
            assert again[qid][key] == values[key], (qid, key)
    for name in registry.names(section="latency"):
        assert {"p50", "p95", "mean", "n"} <= set(cold["metrics"][name])
    ingest = {k: cold["metrics"][k]["mean"] for k in registry.names(section="ingestion")}
    assert ingest["ingest_calls"] > 0 and ingest["ingest_s"] >= 0.02 * ingest["ingest_calls"]
    assert ingest["memory_items"] > 0 and ingest["memory_tokens"] > 0
    for key in ("ingest_calls", "ingest_tokens", "memory_items", "memory_tokens"):
        assert warm["metrics"][key] == cold["metrics"][key]
    # the warm run loaded the memories: the build's latency and compute are the saved ones (its
    # own no-op ensure_built checks per question are measured again: microseconds)
    warm_s, cold_s = warm["metrics"]["ingest_s"]["mean"], cold["metrics"]["ingest_s"]["mean"]
    assert warm_s == pytest.approx(cold_s, abs=0.005)

    written = build_report([tmp_path / "cold"], tmp_path / "tables", "t")
    assert {"pareto_png", "pareto_pdf"} <= set(written) and written["pareto_png"].stat().st_size
    md = written["md"].read_text()
    assert "## Latency and context per question (intrinsic)" in md
    assert "search_latency_s.p50" in md and "answer_latency_s.p95" in md
    assert "## Ingestion cost per episode (intrinsic)" in md and "ingest_s_per_unit" in md


def test_a_hierarchy_counts_its_nodes_as_the_memory_size(make_cfg, tmp_path):
    run(make_cfg("memory=memtree", "dataset.limit=2"), tmp_path / "r")
    stats = json.loads((tmp_path / "r" / "memory_stats.json").read_text())
    for episode in stats.values():
        # leaves plus the summaries above them: more items than inserted units
        assert episode["size"]["items"] > episode["units"] and episode["size"]["tokens"] > 0
