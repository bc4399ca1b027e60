"""CAM w/ FM end to end with a real embedded model (SmolLM2-135M via llama.cpp, MiniLM): `run.py
memory=cam_fm` on the sample exits 0 and records its entity extraction beside CAM's summaries."""

from __future__ import annotations

import json

import pytest
from processes import run_py

pytestmark = pytest.mark.slow


def test_run_py_cam_fm_extracts_entities_for_every_chunk(tmp_path):
    proc = run_py(
        tmp_path,
        "memory=cam_fm",
        "dataset=sample",
        "dataset.limit=1",
        "llm=local_tiny",
        "embedder=local",
        "memory.summaries.max_tokens=48",
        "memory.selection.max_tokens=24",
        "memory.fine_grained.max_tokens=96",
        "memory.fine_grained.max_gleanings=0",
        "memory.hierarchy=false",  # the foundational network only: extraction is under test, not summaries
        "eval.judge.calibration_max=0",
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["memory"] == "cam_fm" and metrics["counts"]["questions"] == 1
    stats = json.loads((out / "memory_stats.json").read_text())
    for episode in stats.values():
        fm, chunks = episode["fine_grained"], episode["construction"]["chunks"]
        assert fm["chunks"] == chunks > 0
        assert fm["extraction_calls"]["extract"] == chunks  # one extraction call per chunk
        failed = sum(fm["failures"]["counts"].values())
        # a tiny model often writes no usable record: counted, never silently zero
        assert fm["chunks_without_entities"] <= chunks and (
            failed > 0 or fm["chunks_without_entities"] < chunks
        )
