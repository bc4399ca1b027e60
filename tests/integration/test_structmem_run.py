"""Structural memory through run.py: the real embedded models on the sample, and a sweep over
structures x retrievals writing one run folder per cell and one table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_cli import ROOT, run_py

STRUCTURES = ("chunks", "triples", "atomic_facts", "summaries", "mixed")
RETRIEVALS = ("single", "rerank", "iterative")


@pytest.mark.slow
def test_mixed_iterative_on_the_sample_with_the_real_embedded_models(tmp_path):
    """SmolLM2-135M + MiniLM, two questions on one dialogue episode (3 LLM calls per chunk to build
    it, then the thoughts, answers and judge calls): a minute or two on an idle 2-core CPU with the
    output caps lowered; llama.cpp's threads follow the process's cores (make test gives each
    pytest worker one), as spinning threads crawl when the cores are shared (35 s vs 70 s per
    extraction call measured at load 20), hence also the long timeout."""
    proc = run_py(
        tmp_path,
        "memory=structmem",
        "memory.structure=mixed",
        "memory.retrieval=iterative",
        "dataset=sample",
        "dataset.loader.parts=[dialogues]",  # two questions on one dialogue episode: one build
        "dataset.limit=2",
        "llm=local_tiny",
        "memory.extraction.max_tokens.triples=48",
        "memory.extraction.max_tokens.atomic_facts=48",
        "memory.extraction.max_tokens.summaries=48",
        "memory.iterative.thought_max_tokens=32",
        "memory.iterative.thought_budget_tokens=2048",  # the sample's units fit; 4,096 would not fit n_ctx 4,096
        "memory.turns=2",
        "memory.top_t=5",
        "memory.top_k=10",
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",  # the audit's lenient pass: not this test's subject
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    metrics = json.loads((out / "metrics.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert metrics["llm"].startswith("llama.cpp:SmolLM2") and len(samples) == 2
    stats = json.loads((out / "memory_stats.json").read_text())
    for episode in stats.values():
        ex = episode["extraction"]
        # three extraction requests per chunk, every one answered by the real model (failures counted)
        assert ex["requests"] == {k: ex["chunks"] for k in ("triples", "atomic_facts", "summaries")}
        assert sum(ex["failed"].values()) == 0
        assert (
            episode["units_by_kind"]["chunks"] == ex["chunks"]
            and episode["units_by_kind"]["summaries"] >= 1
        )
        assert (
            episode["retrieval_counts"]["thought_requests"]
            == episode["retrieval_counts"]["questions"]
        )  # N - 1
    assert metrics["calls"]["build"]["calls"] == sum(
        3 * e["extraction"]["chunks"] for e in stats.values()
    )
    for s in samples:
        assert (
            s["status"] == "scored"
            and s["retrieved"]
            and all(i["source_unit_ids"] for i in s["retrieved"])
        )


@pytest.mark.slow
def test_a_sweep_over_structures_and_retrievals_writes_one_folder_per_cell_and_one_table(tmp_path):
    proc = run_py(
        tmp_path,
        "memory=structmem",
        f"memory.structure={','.join(STRUCTURES)}",
        f"memory.retrieval={','.join(RETRIEVALS)}",
        "dataset=sample",
        "dataset.limit=1",
        "llm=fake_structmem",
        "embedder=fake",
        "eval.judge.enabled=false",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
        multirun=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted(p.parent for p in (tmp_path / "runs").rglob("metrics.json"))
    assert len(runs) == len(STRUCTURES) * len(RETRIEVALS)
    cells = set()
    for folder in runs:
        metrics = json.loads((folder / "metrics.json").read_text())
        overrides = dict(o.split("=", 1) for o in metrics["overrides"] if o.startswith("memory."))
        cells.add((overrides["memory.structure"], overrides["memory.retrieval"]))
    assert cells == {(s, r) for s in STRUCTURES for r in RETRIEVALS}
    tables = subprocess.run(
        [
            sys.executable,
            "-m",
            "memharness.eval.report.comparison",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "tables"),
            "--name",
            "grid",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert tables.returncode == 0, tables.stderr
    scores = (tmp_path / "tables" / "grid.md").read_text().split("## Scores")[1].split("\n## ")[0]
    rows = [line for line in scores.splitlines() if line.startswith("| structmem |")]
    assert len(rows) == len(STRUCTURES) * len(RETRIEVALS)
    assert {(s, r) for s in STRUCTURES for r in RETRIEVALS} == {
        (s, r)
        for s in STRUCTURES
        for r in RETRIEVALS
        for row in rows
        if f"memory.structure={s} " in row and f"memory.retrieval={r}" in row
    }
