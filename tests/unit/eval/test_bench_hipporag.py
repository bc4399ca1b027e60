"""The HippoRAG benchmark's figures: 2 build calls per passage, every stub reply parsed, and a
latency record from a small synthetic graph."""

from __future__ import annotations

from memharness.eval.bench.hipporag import ppr_latency, sample_build_calls


def test_build_calls_are_two_per_passage_and_the_stub_parses():
    figures = sample_build_calls()
    assert figures["passages"] > 0 and figures["calls"] == 2 * figures["passages"]
    assert figures["extraction_failure_rate"] == 0.0 and figures["phrase_nodes"] > 0


def test_latency_record_on_a_small_graph():
    record = ppr_latency(phrases=200, passages=50, per_passage=4)
    assert 0 < record["phrase_nodes"] <= 200 and record["edges"] > 0
    assert 0 < record["ms_p50"] <= record["ms_p95"]
