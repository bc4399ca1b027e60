"""`run.py memory=mem0` with the real product (make product-mem0) and the real embedded models
(llm=local_tiny, SmolLM2-135M: the plumbing is under test, not the model; mem0's extraction prompt
is ~7,700 tokens, which the 1.5B default needs minutes for on 2 busy cores): mem0's calls reach the
harness's ledgers through the local endpoint, and a rerun makes none."""

from __future__ import annotations

import json

import pytest
from processes import needs_product, run_py

pytestmark = pytest.mark.slow
# one episode, one question; all 9 rounds in one add() (one extraction call, its reply cut at 48
# tokens: JSON-constrained decoding is slow on CPU), no judge: the test is
# about the plumbing, not a score, and must stay cheap on 2 CPU cores
ARGS = (
    "memory=mem0",
    "dataset=sample",
    "dataset.loader.parts=[dialogues]",
    "dataset.limit=1",
    "llm=local_tiny",
    "memory.options.messages_per_add=9",
    "memory.options.max_tokens=48",
    "eval.judge.enabled=false",
    # SmolLM2's 4,096-token window cuts mem0's ~9,000-token prompt: the run check refuses that unless
    # told (memory.prompt_tokens); the plumbing, not the extraction, is under test here
    "memory.prompt_tokens=null",
)


@needs_product("mem0")
def test_mem0_run_is_metered_and_a_rerun_makes_no_backend_call(tmp_path):
    first = run_py(tmp_path, *ARGS, "hydra.run.dir=" + str(tmp_path / "cold"), timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    cold = json.loads((tmp_path / "cold" / "metrics.json").read_text())
    assert cold["product"]["product"] == "mem0" and cold["product"]["version"] == "2.2.1"
    assert cold["product"]["clock"] == "data"
    assert cold["counts"]["questions"] == 1
    build = cold["calls"]["build"]
    assert build["calls"] == 1 and build["embed_texts"] >= 2  # mem0's extraction and embeddings
    assert cold["intrinsic"]["build"]["calls"] == 1
    stats = json.loads((tmp_path / "cold" / "memory_stats.json").read_text())
    episode = next(iter(stats.values()))
    assert episode["endpoint"]["chat"] == 1 and episode["adapter"]["units_sent"] == 9
    assert episode["product_stats"]["prompts_dated"] == 1  # the sample has no dates: "unknown"
    warm = run_py(tmp_path, *ARGS, "hydra.run.dir=" + str(tmp_path / "warm"), timeout=600)
    assert warm.returncode == 0, warm.stderr[-3000:]
    again = json.loads((tmp_path / "warm" / "metrics.json").read_text())
    total = again["calls"]["total"]
    assert total["calls"] == 0 and total["embed_calls"] == 0
    assert again["intrinsic"]["build"]["calls"] == 1  # the same cost, served by the cache
