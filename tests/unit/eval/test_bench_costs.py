"""``memharness bench costs`` (issue 46 item 5): the scaling to a benchmark's size, the prices, the
hours, the table and its place in docs/scaling.md."""

from __future__ import annotations

import pytest
from memharness.eval.bench import REPO
from memharness.eval.bench.costs import (
    BENCHMARKS,
    END,
    START,
    Benchmark,
    dollars,
    hours,
    markdown,
    prices,
    scale,
    write_docs,
)


def _bench(history=("tokens", 1_000_000), questions=500):
    return Benchmark("B", lambda folder: [], questions, history, "a source")


def test_scale_sends_build_by_history_and_every_other_stage_by_questions():
    estimate = {
        "stages": {
            "build": {"calls": 10, "prompt_tokens": 1000, "completion_tokens": 100},
            "answer": {"calls": 2, "prompt_tokens": 400, "completion_tokens": 20},
            "judge": {
                "calls": 2,
                "prompt_tokens": 200,
                "completion_tokens": 2,
                "embed_requests": 1,
            },
        }
    }
    pilot = {"questions": 2, "units": 50, "tokens": 10_000}
    full = scale(estimate, pilot, _bench())
    # build x 100 (1M / 10k tokens), answer and judge x 250 (500 / 2 questions)
    assert full["calls"] == pytest.approx(10 * 100 + 4 * 250)
    assert full["prompt_tokens"] == pytest.approx(1000 * 100 + 600 * 250)
    assert full["completion_tokens"] == pytest.approx(100 * 100 + 22 * 250)
    assert full["embed_requests"] == pytest.approx(250)
    by_units = scale(estimate, pilot, _bench(history=("units", 500)))
    assert by_units["calls"] == pytest.approx(10 * 10 + 4 * 250)  # 500 / 50 units


def test_dollars_use_the_configured_price_per_million_tokens():
    table = prices()
    mini = table["openai:gpt-4o-mini"]
    assert dollars(1_000_000, 0, mini) == pytest.approx(mini["prompt"])
    assert dollars(2_000_000, 500_000, {"prompt": 2.5, "completion": 10.0}) == pytest.approx(10.0)


def test_hours_are_calls_times_latency_over_the_requests_in_flight():
    assert hours(115_200, latency_s=1.0, in_flight=32) == pytest.approx(1.0)
    assert hours(3_600, latency_s=2.0, in_flight=1) == pytest.approx(2.0)


def test_the_table_has_a_row_per_system_and_a_method_line_per_benchmark():
    row = {
        "benchmark": "LoCoMo",
        "system": "memtree",
        "calls": 16_964.4,
        "prompt_tokens": 8e6,
        "completion_tokens": 1.4e6,
        "usd_gpt-4o-mini": 2.07,
        "usd_gpt-4o": 34.54,
        "hours": 0.147,
        "method": "dry run on 12 questions",
    }
    text = markdown([row, {**row, "system": "full_context"}])
    lines = text.splitlines()
    assert lines[0].startswith("| benchmark | system | LLM calls")
    assert "| LoCoMo | `memtree` | 16,964 | 8,000,000 | 1,400,000 | 2.07 | 34.54 | 0.15 |" in lines
    assert text.count("- LoCoMo: dry run on 12 questions") == 1


def test_write_docs_replaces_only_between_the_markers(tmp_path):
    doc = tmp_path / "scaling.md"
    doc.write_text(f"# head\n{START}\nold table\n{END}\ntail\n", encoding="utf-8")
    write_docs("| new |\n", doc)
    assert doc.read_text() == f"# head\n{START}\n| new |\n{END}\ntail\n"
    (tmp_path / "plain.md").write_text("no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        write_docs("| new |\n", tmp_path / "plain.md")


def test_docs_scaling_holds_the_markers_and_every_benchmark_fixture_exists():
    text = (REPO / "docs" / "scaling.md").read_text(encoding="utf-8")
    assert START in text and END in text and text.index(START) < text.index(END)
    for key, bench in BENCHMARKS.items():
        if bench.experiment:
            assert (REPO / "conf" / "experiment" / f"{bench.experiment}.yaml").exists(), key
        assert bench.questions > 0 and bench.history[0] in ("tokens", "units")


@pytest.mark.slow
@pytest.mark.doubles
def test_costs_command_prints_a_row_from_a_real_dry_run(tmp_path, capsys):
    """One cell end to end: the experiment's dry run on the MSC fixture, scaled to 500 sessions."""
    from memharness.eval.bench.costs import main

    result = main(["--benchmarks=memtree_table1", "--systems=full_context", f"--keep={tmp_path}"])
    (row,) = result["rows"]
    assert row["system"] == "full_context" and row["calls"] > 500  # >= one answer a session
    assert row["usd_gpt-4o"] > row["usd_gpt-4o-mini"] > 0
    out = capsys.readouterr().out
    assert "| MemTree Table 1 (MSC) | `full_context` |" in out
    assert "scaled to 500 sessions" in out
