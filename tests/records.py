"""Run-folder records for report tests: complete, valid run-format documents with only the
fields a test cares about set, written through the same writers the runner uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memharness.eval.record import folder as run_io
from memharness.eval.record import schema


def sample(question_id: str, **fields: Any) -> dict[str, Any]:
    """A ``schema.Sample`` with neutral defaults; ``fields`` override them."""
    doc: dict[str, Any] = {
        "episode_id": "e0",
        "question_id": question_id,
        "question": f"question {question_id}?",
        "references": ["an answer"],
        "options": None,
        "gold_option": None,
        "categories": {},
        "position": None,
        "evidence_position": None,
        "evidence_sources": [],
        "status": "scored",
        "metrics": {},
    }
    doc.update(fields)
    return doc


def metrics(memory: str, dataset: str = "sample", **fields: Any) -> dict[str, Any]:
    """A ``schema.Metrics`` document with neutral defaults; ``fields`` override them."""
    doc: dict[str, Any] = {
        "format": schema.FORMAT,
        "memory": memory,
        "dataset": dataset,
        "seed": 0,
        "overrides": [],
        "llm": "llm-a",
        "embedder": "emb-a",
        "judge": None,
        "counts": {"questions": 0, "scored": 0},
        "metrics": {},
        "breakdowns": {},
        "data": {},
        "time": {},
        "calls": {"total": {"calls": 0}},
        "intrinsic": {},
        "env": {},
        "outcome": {"exit_code": 0},
    }
    doc.update(fields)
    return doc


def write(folder: Path, metrics_doc: dict[str, Any], samples: list[dict[str, Any]]) -> Path:
    """Write ``samples.jsonl`` and ``metrics.json`` into ``folder`` as the runner does."""
    folder.mkdir(parents=True, exist_ok=True)
    run_io.write_samples(folder, samples)
    run_io.write_metrics(folder, metrics_doc)
    return folder
