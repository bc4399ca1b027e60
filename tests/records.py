"""Run-folder records for report tests: complete, valid run-format documents with only the
fields a test cares about set, written through the same writers the runner uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memharness.eval.metrics import registry
from memharness.eval.record import folder as run_io
from memharness.eval.record import schema


def scores(values: dict[str, float | int | None], **details: Any) -> dict[str, Any]:
    """``Sample.scores`` holding ``values`` by metric key, each of the kind (scorer) the registry
    names for it; ``details`` (metric -> dict) add a scorer's own fields."""
    return {
        name: {
            "value": value,
            "kind": registry.lookup(name).scorer,
            "details": details.get(name, {}),
        }
        for name, value in values.items()
    }


def sample(
    question_id: str, values: dict[str, float | int | None] | None = None, **fields: Any
) -> dict[str, Any]:
    """A ``schema.Sample`` with neutral defaults, scored ``values`` (metric -> value); ``fields``
    override the rest."""
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
        "scores": scores(values or {}),
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


def as_format_2(folder: Path, dest: Path) -> Path:
    """A copy of format-3 run folder ``folder`` as run format 2 wrote it (flat scorer fields and a
    ``metrics`` mapping per sample): what ``memharness rescore`` reads."""
    import json
    import shutil

    from memharness.eval.record.convert import DETAILS

    shutil.copytree(folder, dest)
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["format"] = 2
    (dest / "metrics.json").write_text(json.dumps(metrics))
    lines = []
    for line in (folder / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        scores, memory = s.pop("scores"), s.pop("memory", {})
        s["metrics"] = {k: v["value"] for k, v in scores.items() if v["value"] is not None}
        for field, (metric, key) in DETAILS.items():
            owner = metric or next(
                (m for m, v in scores.items() if v["kind"] == "official_judge"), ""
            )
            value = (scores.get(owner) or {}).get("details", {}).get(key)
            if value is not None:
                s[field] = value
        closed = s["metrics"].pop("closed_book_accuracy", None)
        if "closed_book_accuracy" in scores:
            s["closed_book"] = {**scores["closed_book_accuracy"]["details"], "correct": closed}
        s.update(memory)
        lines.append(json.dumps(s))
    (dest / "samples.jsonl").write_text("\n".join(lines) + "\n")
    return dest


def untimed_samples(path: Path) -> list[dict[str, Any]]:
    """A samples.jsonl's records with their clock-read scores (latencies) left out: what two runs
    of one config must agree on byte for byte otherwise."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record["scores"] = registry.untimed(record["scores"])
        out.append(record)
    return out
