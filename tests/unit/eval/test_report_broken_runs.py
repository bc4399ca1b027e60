"""A run folder with a corrupt samples.jsonl line (issue 43 case 10): named by file and line, left out,
and the good run beside it still tabulated; alone, the command fails in that one line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import records
from memharness.eval.record.read import ReportError, load_runs
from memharness.eval.report import browser, comparison, judge_report


def write_runs(root: Path) -> Path:
    """Two runs of two questions each; line 2 of the rag run's samples.jsonl cut short."""
    summary = {"mean": 0.5, "n": 2, "ci_low": 0.4, "ci_high": 0.6}
    for memory in ("rag", "full_context"):
        doc = records.metrics(memory, counts={"questions": 2, "scored": 2}, metrics={"f1": summary})
        records.write(root / memory, doc, [records.sample("q0"), records.sample("q1")])
    samples = root / "rag" / "samples.jsonl"
    lines = samples.read_text().splitlines()
    samples.write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    return samples


def test_a_corrupt_line_is_named_and_the_good_run_still_loads(tmp_path, caplog):
    samples = write_runs(tmp_path)
    with caplog.at_level(logging.WARNING):
        runs = load_runs([tmp_path])
    assert [r["memory"] for r in runs] == ["full_context"]
    assert f"{samples}:2: not valid JSON" in caplog.text
    (tmp_path / "full_context" / "metrics.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ReportError, match=r"metrics.json: not UTF-8 text"):
        load_runs([tmp_path])  # no good run left: the (first) error, in one line


def test_report_and_judge_report_tabulate_the_good_run_beside_the_bad(tmp_path, caplog):
    samples = write_runs(tmp_path / "runs")
    with caplog.at_level(logging.WARNING):
        comparison.main([str(tmp_path / "runs"), "--out", str(tmp_path / "t"), "--name", "c"])
        judge_report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "j")])
    table = (tmp_path / "t" / "c.md").read_text()
    assert "full_context" in table and "rag" not in table
    assert "full_context" in (tmp_path / "j" / "judges.csv").read_text()
    assert caplog.text.count(f"{samples}:2: not valid JSON") == 2


def test_browse_shows_the_good_run_beside_the_bad(tmp_path, caplog):
    samples = write_runs(tmp_path / "runs")
    with caplog.at_level(logging.WARNING):
        page = browser.main([str(tmp_path / "runs"), "--out", str(tmp_path / "b.html")])
    html = page.read_text()
    assert "full_context" in html and '"rag"' not in html
    assert f"{samples}:2: not valid JSON" in caplog.text
