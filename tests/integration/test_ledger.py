"""Two cost ledgers: the intrinsic one (the method's cost, cached or not) and the spend."""

from __future__ import annotations

import pytest
from memharness.eval.run.runner import run
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat

PRICES = {"fake-chat": {"prompt": 1.0, "completion": 2.0}}


def test_a_cache_hit_costs_nothing_to_spend_but_the_same_intrinsically(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    request = ChatRequest.user("four words of prompt")
    cold = Meter(PRICES)
    with cold.stage("build"):
        LLM(ScriptedChat(default="two words"), meter=cold, cache=cache).complete([request, request])
    warm = Meter(PRICES)
    with warm.stage("build"):
        LLM(ScriptedChat(), meter=warm, cache=cache).complete([request])
    spend_cold, spend_warm = cold.to_json()["build"], warm.to_json()["build"]
    assert spend_cold["calls"] + spend_cold["cache_hits"] == 2 and spend_warm["calls"] == 0
    assert spend_warm["cache_hits"] == 1 and spend_warm["cost_usd"] == 0.0
    one = warm.intrinsic_json()["build"]
    assert (one["calls"], one["cache_served"], one["prompt_tokens"], one["completion_tokens"]) == (
        1,
        1,
        4,
        2,
    )
    assert one["cost_usd"] == pytest.approx((4 * 1.0 + 2 * 2.0) / 1e6)
    assert one["latency_unknown"] == 0 and one["call_s"] >= 0
    both = cold.intrinsic_json()["build"]
    assert (both["calls"], both["prompt_tokens"]) == (2, 8) and both["cost_usd"] == pytest.approx(
        2 * one["cost_usd"]
    )


def test_embedding_requests_count_every_text_asked_for(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    for _ in range(2):  # cold, then warm
        meter = Meter()
        Embedder(HashingEmbedder(), meter=meter, cache=cache).embed(["a", "b", "a"])
        assert meter.intrinsic_json()["other"]["embed_texts"] == 3
        assert meter.intrinsic_json()["total"]["embed_requests"] == 1
    assert meter.to_json()["total"]["embed_texts"] == 0  # the warm run embedded nothing


def test_warm_rerun_reports_the_same_intrinsic_cost_as_the_cold_run(make_cfg, tmp_path):
    overrides = (
        "memory=memorystream",
        "memory.scoring=generative_agents",
        "dataset.limit=5",
        'llm.backend.script=[["Rating","6"]]',
        "+llm.prices.fake-chat={prompt: 1.0, completion: 2.0}",
    )
    cold = run(make_cfg(*overrides), tmp_path / "cold")
    warm = run(make_cfg(*overrides), tmp_path / "warm")
    assert (
        warm["calls"]["total"]["calls"] == 0 and warm["calls"]["total"]["cost_usd"] == 0.0
    )  # spend: nothing
    assert cold["intrinsic"]["build"]["calls"] > 0 and cold["intrinsic"]["build"]["cost_usd"] > 0
    # the warm run loaded each memory from its snapshot: its build cost is the one stored with it
    assert (
        warm["snapshots"]["loaded"] == cold["snapshots"]["built_saved"] == cold["data"]["episodes"]
    )
    assert warm["intrinsic"]["build"]["snapshot_served"] == cold["intrinsic"]["build"]["calls"] > 0
    for stage, counts in cold["intrinsic"].items():
        w = warm["intrinsic"][stage]
        assert w["cache_served"] + w["snapshot_served"] == w["calls"]
        for key in ("calls", "prompt_tokens", "completion_tokens", "embed_requests", "embed_texts"):
            assert w[key] == counts[key], (stage, key)
        assert w["cost_usd"] == pytest.approx(counts["cost_usd"]) and w["call_s"] == pytest.approx(
            counts["call_s"]
        )
    # intrinsic = spend + what the cache served, on the cold run
    total = cold["intrinsic"]["total"]
    assert total["calls"] == cold["calls"]["total"]["calls"] + cold["calls"]["total"]["cache_hits"]
