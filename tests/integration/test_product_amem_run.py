"""`run.py memory=amem` with the real product (make product-amem) behind the ProductMemory adapter.

No model: the scripted chat double (tests/conf/llm/fake_amem.yaml) answers A-Mem's annotation and
evolution prompts through the harness endpoint, so the run checks the plumbing (every product LLM
call and every embedding of its store metered, notes carry their unit ids, the product's stats reach
memory_stats.json, a rerun makes no backend call)."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep.sample import BUNDLED
from paths import TESTS
from processes import needs_product, run_py

pytestmark = [pytest.mark.slow, pytest.mark.doubles, needs_product("amem")]
ARGS = (
    "memory=amem",
    "dataset=sample",
    "dataset.loader.parts=[dialogues]",
    "dataset.limit=1",
    f"hydra.searchpath=[file://{TESTS / 'conf'}]",
    "llm=fake_amem",
    "embedder=hashing",
    "eval.judge.enabled=false",
)


def test_amem_run_meters_every_product_call_and_reports_its_notes(tmp_path):
    proc = run_py(tmp_path, *ARGS, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["product"]["embedder"] == "hashing"  # the run's embedder, not one of its own
    assert (metrics["product"]["product"], metrics["product"]["version"]) == ("amem", "0.2.6")
    assert metrics["product"]["clock"] == "data"
    stats = next(iter(json.loads((tmp_path / "run" / "memory_stats.json").read_text()).values()))
    notes = stats["product_stats"]["notes"]
    assert notes == stats["adapter"]["units_sent"] > 1
    # one annotation per note and one evolution decision per note after the first, all metered
    assert stats["product_stats"]["llm_calls"] == 2 * notes - 1 == stats["endpoint"]["chat"]
    assert stats["product_stats"]["evolutions"] == notes - 1
    assert stats["product_stats"]["unannotated"] == 0 and not stats.get("degradation")
    # the sample's dialogues carry no dates: counted, stamped "unknown", not a degradation
    assert stats["product_stats"]["no_timestamp"] == notes
    assert metrics["calls"]["build"]["calls"] == 2 * notes - 1
    # the store embeds through the endpoint: each note added or rewritten, each neighbour look-up,
    # the question's search; all in the build and retrieve ledgers
    embeds = stats["product_stats"]["embed_requests"]
    assert embeds == stats["endpoint"]["embeddings"] >= 2 * notes, stats
    assert stats["product_stats"]["embedded_texts"] == stats["endpoint"]["embedded_texts"]
    total = metrics["calls"]["total"]
    assert total["embed_texts"] + total["embed_cache_hits"] >= stats["endpoint"]["embedded_texts"]

    warm = run_py(tmp_path, *ARGS, f"hydra.run.dir={tmp_path / 'warm'}", timeout=900)
    assert warm.returncode == 0, warm.stderr[-3000:]
    again = json.loads((tmp_path / "warm" / "metrics.json").read_text())
    assert again["calls"]["total"]["calls"] == 0 and again["calls"]["total"]["embed_calls"] == 0
    assert again["calls"]["build"]["cache_hits"] == 2 * notes - 1
    cold = metrics["calls"]["build"]
    assert (
        again["calls"]["build"]["embed_cache_hits"]
        == cold["embed_texts"] + cold["embed_cache_hits"]
    )


def test_a_failed_query_embedding_is_a_failed_question_not_an_empty_search(tmp_path):
    # the harness embedder fails on one question's text: the product swallows the error and returns
    # no hits; the worker counts it and answers with an error, so that question is a recorded
    # failure (not an answer from an empty memory) and the other questions are scored
    question = "What is the name of the running coach?"
    args = [a for a in ARGS if not a.startswith("dataset.limit=")]  # the episode's 3 questions
    sample = json.loads(BUNDLED.read_text())
    sample["dialogues"] = [d for d in sample["dialogues"] if d["id"] == "dlg-marathon"]
    (tmp_path / "marathon.json").write_text(json.dumps(sample))
    args += [f"dataset.loader.path={tmp_path / 'marathon.json'}"]
    args += [f"+embedder.backend.fail_on='{question}'", "eval.max_failed_fraction=0.5"]
    proc = run_py(tmp_path, *args, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = next(iter(json.loads((tmp_path / "run" / "memory_stats.json").read_text()).values()))
    assert stats["product_stats"]["embed_error"] == 1, stats["product_stats"]
    assert stats["endpoint"]["failed"] == 1, stats["endpoint"]
    assert stats["adapter"]["search_errors"] == 1, stats["adapter"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    status = {row["question"]: row["status"] for row in rows}
    assert len(rows) == 3 and status.pop(question) == "retrieve_failed", status
    assert set(status.values()) == {"scored"}, status
    failed = next(row for row in rows if row["question"] == question)
    assert "query's embedding failed" in failed["error"]
