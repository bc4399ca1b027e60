"""`run.py memory=lightrag` with the real product (make product-lightrag) and the real embedded models
(llm=local_tiny, SmolLM2-135M: the plumbing is under test, not the model): LightRAG's extraction
calls and embeddings reach the harness's ledgers through the local endpoint, whatever SmolLM2 replies
is parsed or counted, and a rerun makes no backend call."""

from __future__ import annotations

import json

import pytest
from processes import needs_product, run_py

pytestmark = pytest.mark.slow
# one episode (9 rounds in 3 sessions) inserted as one LightRAG document of one chunk, one question;
# no gleaning, the reply cut at 32 tokens, naive retrieval (no keyword call): one extraction call
# (~1,700 prompt tokens), cheap enough for 2 CPU cores.
ARGS = (
    "memory=lightrag",
    "dataset=sample",
    "dataset.loader.parts=[dialogues]",
    "dataset.limit=1",
    "llm=local_tiny",
    "memory.options.document=batch",
    "memory.options.max_gleaning=0",
    "memory.options.max_tokens=32",
    "memory.options.mode=naive",
    "eval.judge.enabled=false",
)


@needs_product("lightrag")
def test_lightrag_run_is_metered_and_a_rerun_makes_no_backend_call(tmp_path):
    cold_dir, warm_dir = tmp_path / "cold", tmp_path / "warm"
    first = run_py(tmp_path, *ARGS, f"hydra.run.dir={cold_dir}", timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    cold = json.loads((cold_dir / "metrics.json").read_text())
    assert cold["product"]["product"] == "lightrag" and cold["product"]["version"] == "1.5.7"
    assert cold["counts"]["questions"] == 1
    episode = next(iter(json.loads((cold_dir / "memory_stats.json").read_text()).values()))
    assert episode["adapter"]["units_sent"] == 9 and episode["product_stats"]["documents"] == 1
    assert episode["endpoint"]["chat"] == 1  # one extraction: one document, one chunk
    # whatever SmolLM2 replied was parsed, or counted as an unusable extraction
    assert set(episode["degradation"]) <= {"extraction_unparsed", "extraction_malformed"}
    build = cold["calls"]["build"]
    assert build["calls"] == 1 and build["embed_texts"] >= 1  # + the chunk's (and any entities')
    assert cold["intrinsic"]["build"]["calls"] == 1
    warm = run_py(tmp_path, *ARGS, f"hydra.run.dir={warm_dir}", timeout=600)
    assert warm.returncode == 0, warm.stderr[-3000:]
    again = json.loads((warm_dir / "metrics.json").read_text())
    total = again["calls"]["total"]
    assert total["calls"] == 0 and total["embed_calls"] == 0
    assert again["intrinsic"]["build"]["calls"] == 1  # the same cost, served by the cache
