"""The MemGPT and ReadAgent benchmarks on a tiny size: each main() returns its figures, the scripted
stubs answer every question from the right turn or page, and against the fault server every reply
is counted as malformed or unparsed, nothing answered or expanded."""

from __future__ import annotations

import pytest
from memharness.eval.bench import memgpt, readagent


def test_memgpt_bench_main_on_a_tiny_history(capsys):
    figures = memgpt.main(turns=60, questions=2, latency_s=0.001)
    assert set(memgpt.TARGETS) <= set(figures)
    assert figures["steps_per_question"] == 2 and figures["llm_calls_per_question"] == 2
    assert figures["right_day_share"] == 1 and figures["malformed_rate"] == 0
    assert figures["fault_malformed_rate"] == 1 and figures["fault_answered"] == 0
    assert figures["fault_calls_per_question"] == figures["fault_max_steps"]
    assert 0 < figures["tokens_over_full_context"] and figures["harness_ms_per_step"] > 0
    assert "(target <= 0.05)" in capsys.readouterr().out


def test_readagent_bench_main_on_a_tiny_history(capsys):
    figures = readagent.main(turns=120, questions=2, latency_s=0.001)
    assert set(readagent.TARGETS) <= set(figures)
    assert figures["pages"] > 1 and figures["lookup_calls_per_question"] == 1
    assert figures["build_calls_per_page"] == pytest.approx(
        figures["build_calls_per_unit"] * figures["units"] / figures["pages"]
    )
    assert figures["right_page_share"] == 1 and figures["gist_compression_ratio"] < 1
    assert figures["fault_lookup_unparsed_share"] == 1 and figures["fault_pages_expanded"] == 0
    assert "fault_pagination_unparsed_share" in capsys.readouterr().out
