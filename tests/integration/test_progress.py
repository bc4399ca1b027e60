"""Progress lines reach the log (run.log under Hydra) for every stage, the build stage included."""

from __future__ import annotations

import logging
import re

from memharness.eval.run.runner import run


def test_progress_lines_are_logged_for_the_episodes_and_the_audit(make_cfg, tmp_path):
    log_file = tmp_path / "progress.log"
    handler = logging.FileHandler(log_file)
    logger = logging.getLogger("memharness")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        cfg = make_cfg(
            "memory=memtree",
            "dataset.limit=3",
            "progress_interval_s=0.2",
            "+llm.backend.latency_s=0.05",
        )
        run(cfg, tmp_path / "run")
    finally:
        logger.removeHandler(handler)
        handler.close()
    lines = log_file.read_text().splitlines()
    # episodes run from first insert to verdict: their phase counts build, retrieve, answer and judge calls
    build = [l for l in lines if l.startswith("progress build+retrieve+answer+judge:")]
    assert len(build) >= 3  # periodic lines while memories are built, not only at the end
    counts = [int(re.search(r"(\d+) LLM calls", l).group(1)) for l in build]
    assert counts == sorted(counts) and counts[-1] > 0  # calls done grow as the build goes on
    final = next(l for l in build if l.endswith("(done)"))
    assert re.search(r"episodes (\d+)/\1 ", final)  # every episode built
    assert any(l.startswith("progress audit: started") for l in lines)
    assert any(l.startswith("progress audit:") and "cached" in l and "failed" in l for l in lines)


def test_a_hydra_run_writes_progress_into_run_log(tmp_path):
    from test_cli import ROOT, run_py

    proc = run_py(
        tmp_path,
        "memory=memtree",
        "dataset.limit=2",
        "llm=fake",
        "embedder=fake",
        "progress_interval_s=1",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (tmp_path / "run" / "run.log").read_text()
    assert "progress build+retrieve+answer+judge: episodes" in text and "progress audit" in text
