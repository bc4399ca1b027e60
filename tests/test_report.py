"""Reports from fixture run folders: tables in three formats, best marked by direction, a plot."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from memharness.eval.report import ReportError, build_report, find_runs, latest_per_config


def _summary(mean):
    return {"mean": mean, "n": 4, "ci_low": mean - 0.1, "ci_high": mean + 0.1}


def write_run(root: Path, memory: str, stamp: str, judge: float, ctx: float, n: int = 4, dataset="sample",
              overrides: list[str] | None = None) -> Path:
    folder = root / f"{memory}-{dataset}" / stamp
    folder.mkdir(parents=True)
    counts = {"questions": n, "scored": n, "retrieve_failed": 0, "answer_failed": 0, "judge_failed": 0,
              "judge_unparsed": 0, "mc_unparsed": 0}
    metrics = {"memory": memory, "dataset": dataset, "counts": counts, "overrides": overrides or [],
               "metrics": {"judge": _summary(judge), "f1": _summary(0.5), "context_tokens": _summary(ctx)},
               "time": {"build_s": 1.0}, "calls": {"total": {"calls": 10}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "samples.jsonl").write_text("".join(json.dumps({"i": i}) + "\n" for i in range(n)))
    return folder


def test_tables_mark_best_by_direction(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "memtree", "2026-01-01_00-00-00", judge=0.8, ctx=900)
    write_run(runs, "full_context", "2026-01-01_00-00-00", judge=0.6, ctx=400)
    out = build_report([runs], tmp_path / "tables", "cmp")
    md = out["md"].read_text()
    memtree_row = next(line for line in md.splitlines() if line.startswith("| memtree"))
    full_row = next(line for line in md.splitlines() if line.startswith("| full_context"))
    assert "**0.800 [0.700, 0.900]**" in memtree_row  # higher judge is better
    assert "**400.000" in full_row and "**900" not in memtree_row  # lower context is better
    assert md.count("**0.500 [0.400, 0.600]**") == 2  # a tie marks every tied run
    rows = list(csv.reader(out["csv"].open()))
    assert rows[0][:3] == ["memory", "dataset", "n"]
    assert {r[0]: r[rows[0].index("judge")] for r in rows[1:]} == {"memtree": "0.8000", "full_context": "0.6000"}
    assert "\\textbf{0.800" in out["tex"].read_text()
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_latest_run_per_config_wins(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "memtree", "2026-01-01_00-00-00", judge=0.1, ctx=1)
    write_run(runs, "memtree", "2026-02-01_00-00-00", judge=0.9, ctx=1)
    from memharness.eval.report import load_run

    kept = latest_per_config([load_run(f) for f in find_runs([runs])])
    assert len(kept) == 1 and kept[0]["metrics"]["judge"]["mean"] == 0.9


def test_report_errors_are_raised(tmp_path):
    with pytest.raises(ReportError, match="no run folders"):
        build_report([tmp_path], tmp_path / "t", "x")
    bad = write_run(tmp_path / "runs", "memtree", "s", judge=0.5, ctx=1, n=3)
    (bad / "samples.jsonl").write_text('{"i": 0}\n')
    with pytest.raises(ReportError, match="samples.jsonl has 1 lines"):
        build_report([bad], tmp_path / "t", "x")
    (bad / "samples.jsonl").unlink()
    with pytest.raises(ReportError, match="no samples.jsonl"):
        build_report([bad], tmp_path / "t", "x")


def test_runs_of_a_sweep_keep_one_row_per_setting(tmp_path):
    runs = tmp_path / "runs"
    for i, theta in enumerate(("0.1", "0.4", "0.4")):
        write_run(runs, "memtree", f"2026-01-0{i + 1}_00-00-00", judge=0.1 * (i + 1), ctx=1,
                  overrides=["memory=memtree", f"memory.base_threshold={theta}", "hydra.run.dir=x"])
    out = build_report([runs], tmp_path / "tables", "sweep")
    rows = [line for line in out["md"].read_text().splitlines() if line.startswith("| memtree")]
    assert len(rows) == 2  # two settings; of the two 0.4 runs the newer (judge 0.3) is kept
    assert "| memory.base_threshold=0.1 |" in rows[0] and "| memory.base_threshold=0.4 |" in rows[1]
    assert "0.300" in rows[1] and "hydra" not in out["md"].read_text()
