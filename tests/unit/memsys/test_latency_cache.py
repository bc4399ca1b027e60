"""Latency is intrinsic like cost: a reply or vector served from the call cache reports the latency
it had when it was made, so a warm rerun shows the cold run's latencies."""

from __future__ import annotations

import math
import sqlite3
import threading
import time

from memharness.eval.cli.cache_merge import merge
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat


def test_a_cached_reply_carries_the_latency_measured_when_it_was_made(tmp_path):
    cache, request = CallCache(tmp_path / "c.sqlite"), ChatRequest.user("how long?")
    cold = LLM(ScriptedChat(default="a while", latency_s=0.05), cache=cache).complete_one(request)
    warm_meter = Meter()
    warm = LLM(ScriptedChat(), meter=warm_meter, cache=cache).complete_one(request)
    assert not cold.cached and cold.latency_s >= 0.05
    assert warm.cached and warm.latency_s == cold.latency_s
    assert warm_meter.intrinsic_json()["other"]["call_s"] == cold.latency_s


def test_a_reply_cached_before_latencies_were_recorded_has_no_latency_and_is_counted(tmp_path):
    cache, request = CallCache(tmp_path / "c.sqlite"), ChatRequest.user("old")
    cache.put_chat(request.cache_key("fake-chat"), "fake-chat", {"text": "x"})
    meter = Meter()
    reply = LLM(ScriptedChat(), meter=meter, cache=cache).complete_one(request)
    assert reply.cached and math.isnan(reply.latency_s)
    assert meter.intrinsic_json()["other"]["latency_unknown"] == 1


def test_cached_vectors_carry_their_making_time_so_warm_equals_cold(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    cold, warm = Meter(), Meter()
    Embedder(HashingEmbedder(latency_s=0.04), meter=cold, cache=cache).embed(["a b", "c", "a b"])
    Embedder(HashingEmbedder(), meter=warm, cache=cache).embed(["a b", "c", "a b"])
    made, again = cold.intrinsic_json()["other"], warm.intrinsic_json()["other"]
    # one batch of the two distinct texts: each carries half its time; the repeat counts again
    assert made["embed_s"] >= 1.5 * 0.04 and made["embed_latency_unknown"] == 0
    assert again["embed_s"] == made["embed_s"] and warm.to_json()["total"]["embed_calls"] == 0
    assert again["embed_texts"] == made["embed_texts"] == 3


def test_vectors_cached_without_a_time_are_counted_unknown(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    Embedder(HashingEmbedder(), cache=cache).embed(["x", "y"])
    with sqlite3.connect(path) as conn:  # as a cache written before the latency table
        conn.execute("DELETE FROM embed_latency")
    meter = Meter()
    Embedder(HashingEmbedder(), meter=meter, cache=cache).embed(["x", "y", "z"])
    used = meter.intrinsic_json()["other"]
    assert used["embed_latency_unknown"] == 2 and used["embed_s"] > 0  # z was made now


def test_cache_merge_keeps_the_vectors_making_times(tmp_path):
    job = CallCache(tmp_path / "job" / "calls.sqlite")
    Embedder(HashingEmbedder(latency_s=0.02), cache=job).embed(["p", "q"])
    merge(tmp_path / "shared.sqlite", [tmp_path / "job"])
    meter = Meter()
    Embedder(HashingEmbedder(), meter=meter, cache=CallCache(tmp_path / "shared.sqlite")).embed(
        ["p", "q"]
    )
    used = meter.intrinsic_json()["other"]
    assert used["embed_latency_unknown"] == 0 and used["embed_s"] >= 0.02
    assert meter.to_json()["total"]["embed_calls"] == 0


class _LoadsOnFirstUse(HashingEmbedder):
    """An embedded backend that loads its weights (0.2 s, ``load_s``) inside its first call."""

    load_s = 0.0

    def embed(self, texts):
        if not self.load_s:
            time.sleep(0.2)
            self.load_s = 0.2
        return super().embed(texts)


def test_loading_weights_on_first_use_is_not_a_calls_latency(tmp_path):
    meter = Meter()
    embedder = Embedder(_LoadsOnFirstUse(latency_s=0.01), meter=meter, cache=None)
    embedder.embed(["first"])
    embedder.embed(["second"])
    used = meter.intrinsic_json()["other"]
    assert 0.02 <= used["embed_s"] < 0.15  # two calls of ~10 ms, not the 0.2 s load
    assert meter.to_json()["other"]["backend_s"] >= 0.2  # what this run waited, load included


def test_a_call_queued_behind_the_loading_one_keeps_its_own_latency(tmp_path):
    meter, backend = Meter(), _LoadsOnFirstUse(latency_s=0.01)
    embedder = Embedder(backend, meter=meter, slots=threading.BoundedSemaphore(1))
    first = threading.Thread(target=embedder.embed, args=(["loads the model"],))
    first.start()
    time.sleep(0.05)  # the first call holds the one slot, loading
    with meter.stage("retrieve"):
        embedder.embed(["queued behind it"])
    first.join()
    assert 0.005 <= meter.intrinsic_json()["retrieve"]["embed_s"] < 0.1
