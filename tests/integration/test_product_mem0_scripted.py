"""The real mem0 (make product-mem0) with the scripted LLM: its failures are counted and the run goes on.

No model: the scripted chat double answers mem0's extraction calls through the harness endpoint,
with a reply mem0 cannot parse, or with a failed call; either way every question is still answered,
flagged as answered from a degraded memory, and the failure kind is counted per episode."""

from __future__ import annotations

import json

import pytest
from memharness.eval.record.scores import memory_flag, value
from memharness.memsys.products.adapter import REPO
from processes import needs_product, run_py

pytestmark = needs_product("mem0")
ARGS = (
    "memory=mem0",
    "dataset=sample",
    "dataset.loader.parts=[dialogues]",
    "dataset.limit=1",
    "llm=scripted",
    "embedder=hashing",
    "eval.judge.enabled=false",
)


@pytest.mark.parametrize(
    "override,kind,adds",
    [  # 9 rounds, 2 per add(): 5 adds, each failed; twice as many from both perspectives
        ("llm.backend.default=this is not JSON", "extraction_unparsed", 10),
        ('llm.backend.fail_on="## New Messages"', "add_failed", 5),
    ],
)
def test_product_failures_are_counted_and_the_run_goes_on(override, kind, adds, tmp_path):
    perspectives = f"memory.options.perspectives={adds // 5}"
    proc = run_py(tmp_path, *ARGS, override, perspectives, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["product"]["version"] == "2.2.1"
    assert metrics["counts"]["questions"] == metrics["counts"]["degraded"] == 1
    stats = next(iter(json.loads((tmp_path / "run" / "memory_stats.json").read_text()).values()))
    assert stats["degradation"] == {kind: adds}
    answered = stats["endpoint"].get("chat", 0), stats["endpoint"].get("chat_failed", 0)
    assert answered == ((adds, 0) if kind == "extraction_unparsed" else (0, adds))
    assert stats["product_stats"]["memories"] == 0
    sample = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert sample["status"] == "scored" and memory_flag(sample, "degraded") == {kind: adds}
    if kind == "add_failed":
        assert metrics["calls"]["build"]["failures"] == 5  # one try each: the client does not retry


def test_memories_carry_their_source_units(tmp_path, perspectives=1):
    conf = REPO / "tests" / "conf"
    args = [a for a in ARGS if a != "llm=scripted"]
    proc = run_py(
        tmp_path,
        *args,
        f"hydra.searchpath=[file://{conf}]",
        "llm=fake_mem0",
        f"memory.options.perspectives={perspectives}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    stats = next(iter(json.loads((run / "memory_stats.json").read_text()).values()))
    assert stats["degradation"] == {} and stats["product_stats"]["memories"] == perspectives
    assert stats["adapter"]["added"] == perspectives  # one memory per perspective (user id)
    assert stats["endpoint"]["chat"] == 5 * perspectives  # 5 add() calls per perspective
    sample = json.loads((run / "samples.jsonl").read_text().splitlines()[0])
    assert len(sample["retrieved"]) == perspectives
    for item in sample["retrieved"]:
        assert item["text"] == "Speaker 1 runs a marathon in Lisbon next October"
        assert len(item["source_unit_ids"]) == 2 and item["level"] == 1  # its add()'s 2 rounds
    assert value(sample, "evidence_recall") == 1.0  # the gold round is one of them
