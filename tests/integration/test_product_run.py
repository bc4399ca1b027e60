"""A product run in process (fakes for the models, the stdlib fake worker as the product): metrics.json
names the product, each episode's worker is closed when the episode ends, failures are counted."""

from __future__ import annotations

import json
import sys

import pytest
from memharness.eval.run.runner import run
from memharness.memsys.products.adapter import ProductMemory
from paths import TESTS

PRODUCT = (
    "memory=mem0",
    "memory.product=fake",
    f"memory.worker={TESTS / 'product_fake_worker.py'}",
    f"memory.python={sys.executable}",
)


@pytest.fixture
def closed(monkeypatch):
    """The processes of every ProductMemory closed, as (memory, exit code)."""
    seen = []
    original = ProductMemory.close

    def close(self):
        proc = self._proc
        original(self)
        seen.append(proc.poll() if proc is not None else "never started")

    monkeypatch.setattr(ProductMemory, "close", close)
    return seen


def test_product_run_records_the_product_and_closes_every_worker(make_cfg, tmp_path, closed):
    metrics = run(make_cfg(*PRODUCT), tmp_path / "r")
    assert metrics["product"]["product"] == "fake" and metrics["product"]["version"] == "0.0.1"
    stats = json.loads((tmp_path / "r" / "memory_stats.json").read_text())
    assert set(stats) == {"dlg-garden", "dlg-marathon", "news"}
    assert all(s["product_stats"]["memories"] == s["units"] for s in stats.values())
    assert closed == [0, 0, 0]  # each worker answered close and exited
    assert metrics["calls"]["build"]["calls"] + metrics["calls"]["build"]["cache_hits"] == 3
    # timed like any memory: the worker's calls through the endpoint are the build's backend
    # seconds; its search (no model call in the fake) is all the product's own compute
    ingest = {k: v["mean"] for k, v in metrics["metrics"].items() if k.startswith("ingest_")}
    assert (
        ingest["ingest_calls"] == 1 and ingest["ingest_embed_texts"] > 0 and ingest["ingest_s"] > 0
    )
    searched = metrics["metrics"]["search_latency_s"]
    assert metrics["metrics"]["search_backend_s"]["p95"] == 0 and searched["p50"] > 0
    assert searched["n"] == metrics["counts"]["scored"]


def test_failed_searches_are_counted_and_the_run_goes_on(make_cfg, tmp_path, closed):
    metrics = run(make_cfg(*PRODUCT, "+memory.options.mode=search_error"), tmp_path / "r")
    assert metrics["counts"]["retrieve_failed"] == metrics["counts"]["questions"] > 0
    samples = [json.loads(x) for x in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    assert all("index unavailable" in s["error"] for s in samples)
    assert closed == [0, 0, 0]


def test_a_failed_ingest_degrades_every_answer(make_cfg, tmp_path, closed):
    metrics = run(make_cfg(*PRODUCT, "+memory.options.mode=ingest_error"), tmp_path / "r")
    assert metrics["counts"]["degraded"] == metrics["counts"]["questions"]
    stats = json.loads((tmp_path / "r" / "memory_stats.json").read_text())
    assert stats["news"]["degradation"] == {"ingest_failed": stats["news"]["units"]}
