"""The HippoRAG benchmark's figures: 2 build calls per passage, every stub reply parsed, a latency
record per PPR engine and the power iteration's agreement with prpack on a small synthetic graph."""

from __future__ import annotations

from memharness.eval.bench import hipporag
from memharness.eval.bench.hipporag import ppr_latency, random_graph, sample_build_calls


def test_build_calls_are_two_per_passage_and_the_stub_parses():
    figures = sample_build_calls()
    assert figures["passages"] > 0 and figures["calls"] == 2 * figures["passages"]
    assert figures["extraction_failure_rate"] == 0.0 and figures["phrase_nodes"] > 0


def test_latency_record_on_a_small_graph():
    graph, vectors = random_graph(200, passages=50, per_passage=4)
    record = ppr_latency(graph, vectors, "power", queries=5)
    assert 0 < record["phrase_nodes"] <= 200 and record["edges"] > 0
    assert 0 < record["ms_p50"] <= record["ms_p95"] and record["iterations_mean"] > 1


def test_main_on_a_tiny_graph_returns_every_engine_and_the_agreement(capsys):
    figures = hipporag.main(sizes=(150,), queries=3)
    run = figures["ppr"]["150"]
    assert set(run["engines"]) == {"power", "prpack", "arpack"}
    assert run["agreement"]["max_abs_diff_node"] < hipporag.AGREEMENT_TOL
    assert run["agreement"]["same_top10_share"] == 1.0
    assert {"hipporag_build_calls", "load_average"} <= set(figures)
    assert "power_ms_p50" in capsys.readouterr().out
