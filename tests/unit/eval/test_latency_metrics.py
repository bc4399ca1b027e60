"""Per-question stage latency, ingestion cost per episode, and the Pareto front."""

from __future__ import annotations

import threading
import time

import pytest
from memharness.eval.metrics import aggregate, ingestion, registry
from memharness.eval.metrics.scorers import TIMING_KEY, Latency, ScoreContext
from memharness.eval.report.plots import pareto_front
from memharness.eval.run import timing
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.meter import Ledger, Meter
from memharness.memsys.testing.doubles import HashingEmbedder


def _record(status: str = "scored", took: dict | None = None) -> dict:
    record = {"status": status, "scores": {}, "context_tokens": 40}
    if took is not None:
        record[TIMING_KEY] = took
    return record


def test_the_latency_scorer_turns_each_stage_timing_into_scores_and_drops_the_transient_key():
    took = {
        "retrieve": {"backend_s": 0.25, "compute_s": 0.5},
        "answer": {"backend_s": 2.0, "compute_s": 0.0},
    }
    scored, failed = _record(took=took), _record("answer_failed", {"retrieve": took["retrieve"]})
    Latency().score([(None, [], scored), (None, [], failed)], ScoreContext(cfg=None))
    values = {k: v["value"] for k, v in scored["scores"].items()}
    assert values == {
        "context_tokens": 40,
        "search_latency_s": 0.75,
        "search_backend_s": 0.25,
        "search_compute_s": 0.5,
        "answer_latency_s": 2.0,
        "total_latency_s": 2.75,
    }
    assert all(registry.lookup(k).scorer == "latency" for k in values)
    assert TIMING_KEY not in scored and TIMING_KEY not in failed and failed["scores"] == {}


def test_latency_metrics_aggregate_with_p50_and_p95():
    samples = [{"scores": {"search_latency_s": {"value": float(v)}}} for v in range(1, 101)]
    out = aggregate.summarize_all(samples, ["search_latency_s"], 200, 0.95, 0)
    summary = out["search_latency_s"]
    assert summary["p50"] == pytest.approx(50.5) and summary["p95"] == pytest.approx(95.05)
    assert summary["n"] == 100 and summary["mean"] == pytest.approx(50.5)
    judge = aggregate.summarize_all([{"scores": {"judge": {"value": 1.0}}}], ["judge"], 10, 0.95, 0)
    assert "p50" not in judge["judge"]  # accuracy keeps mean and CI only


def test_stage_time_splits_backend_latency_from_the_systems_own_compute():
    meter, ledger = Meter(), Ledger()
    with meter.scope(ledger), timing.stage_time(ledger, "retrieve") as took:
        with meter.stage("retrieve"):
            meter.record_reply("m", 3, 1, True, 1.5)  # a cached reply that took 1.5 s when made
            meter.record_embed(2, latency_s=0.25)
            time.sleep(0.05)  # the system's own work
            meter.add(backend_s=0.01)  # this run waited 10 ms on some backend
    assert took["backend_s"] == pytest.approx(1.75)
    assert 0.03 <= took["compute_s"] < 1.0


def test_ingestion_per_episode_from_the_build_ledger_compute_and_memory_size():
    stats = {
        "calls": {
            "build": {
                "intrinsic": {
                    "calls": 4,
                    "prompt_tokens": 300,
                    "completion_tokens": 20,
                    "embed_texts": 10,
                    "call_s": 2.0,
                    "embed_s": 0.5,
                    "cost_usd": 0.001,
                }
            }
        },
        "build_compute_s": 0.5,
        "insert_batches": [{"units": 6}, {"units": 4}],
        "size": {"items": 10, "tokens": 250},
    }
    values = ingestion.episode_values(stats)
    assert values == {
        "ingest_calls": 4.0,
        "ingest_tokens": 320.0,
        "ingest_embed_texts": 10.0,
        "ingest_s": 3.0,
        "ingest_s_per_unit": 0.3,
        "ingest_usd": 0.001,
        "memory_items": 10.0,
        "memory_tokens": 250.0,
    }
    no_calls = {"calls": {}, "build_compute_s": 0.2, "insert_batches": [{"units": 2}]}
    assert ingestion.episode_values(no_calls)["ingest_s"] == pytest.approx(0.2)
    assert ingestion.episode_values({"calls": {}}) == {}  # written before build time was kept
    two = ingestion.summarize_episodes({"a": stats, "b": no_calls}, 100, 0.95, 0)
    assert two["ingest_s"]["n"] == 2 and two["ingest_s"]["mean"] == pytest.approx(1.6)
    assert two["memory_items"]["n"] == 1
    assert set(two) <= set(registry.names(section="ingestion"))


def test_pareto_front_keeps_the_points_no_other_beats():
    points = [(100.0, 0.5), (50.0, 0.6), (200.0, 0.9), (300.0, 0.8), (50.0, 0.4)]
    assert pareto_front(points) == [1, 2]


def test_time_queued_for_a_backend_slot_is_waiting_not_compute():
    meter, ledger, slot = Meter(), Ledger(), threading.BoundedSemaphore(1)
    embedder = Embedder(HashingEmbedder(latency_s=0.01), meter=meter, slots=slot)
    slot.acquire()  # another episode holds the one slot of an in-process model for 0.3 s
    threading.Timer(0.3, slot.release).start()
    with meter.scope(ledger), timing.stage_time(ledger, "retrieve") as took:
        with meter.stage("retrieve"):
            embedder.embed(["a question"])
    assert took["compute_s"] < 0.1 and 0.005 <= took["backend_s"] < 0.1
    assert ledger.stages["retrieve"].wait_s >= 0.3
