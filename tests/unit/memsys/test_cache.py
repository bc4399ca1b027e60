"""The persistent call cache: what the key covers, what is cached, concurrent writers, warm reruns."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp

import pytest
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import ScriptedChat

BASE = ChatRequest.user(
    "q", system="s", max_tokens=8, temperature=0.0, seed=1, stop=("x",), choices=("a", "b")
)
CHANGED = {
    "messages": (("user", "q2"),),
    "max_tokens": 9,
    "temperature": 0.5,
    "seed": 2,
    "stop": ("y",),
    "choices": ("a", "c"),
    "json_output": True,
    "json_schema": '{"type": "object"}',
}


def CountingBackend() -> ScriptedChat:
    """Echoes the prompt; counts ``calls``."""
    return ScriptedChat(reply=lambda r: f"echo {r.messages[-1][1]}", model_id="fake:echo")


def test_every_generation_parameter_is_in_the_key():
    fields = {f.name for f in dataclasses.fields(ChatRequest)}
    assert fields == set(CHANGED), "a new ChatRequest field needs a case here"
    base = BASE.cache_key("m")
    for name, value in CHANGED.items():
        assert dataclasses.replace(BASE, **{name: value}).cache_key("m") != base, name
    assert BASE.cache_key("other-model") != base
    assert BASE.cache_key("m") == base  # content-addressed: same content, same key


def test_a_request_without_a_schema_keeps_the_key_it_had_before_the_field_existed():
    import hashlib
    import json

    payload = {"kind": "chat", "model": "m", **dataclasses.asdict(BASE)}
    del payload["json_schema"]
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    assert BASE.cache_key("m") == hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_sampled_calls_are_cached_only_with_a_seed(tmp_path):
    backend = CountingBackend()
    llm = LLM(backend, cache=CallCache(tmp_path / "c.sqlite"), progress=False)
    unseeded = ChatRequest.user("p", temperature=0.8)
    seeded = ChatRequest.user("p", temperature=0.8, seed=3)
    for _ in range(2):
        llm.complete_one(unseeded)
        llm.complete_one(seeded)
    assert backend.calls == 3  # unseeded twice, seeded once
    assert not unseeded.cacheable and seeded.cacheable and ChatRequest.user("p").cacheable


def test_warm_rerun_makes_zero_backend_calls(tmp_path):
    requests = [ChatRequest.user(f"q{i}") for i in range(25)]
    cold_backend, warm_backend = CountingBackend(), CountingBackend()
    cold = LLM(cold_backend, cache=CallCache(tmp_path / "c.sqlite"), meter=Meter(), progress=False)
    first = cold.complete(requests)
    warm = LLM(warm_backend, cache=CallCache(tmp_path / "c.sqlite"), meter=Meter(), progress=False)
    second = warm.complete(requests)
    assert cold_backend.calls == 25 and warm_backend.calls == 0
    assert [c.text for c in first] == [c.text for c in second] and all(c.cached for c in second)
    hits = warm.meter.stages["other"]
    assert hits.cache_hits == 25 and hits.calls == 0 and hits.prompt_tokens == 0


def _writer(path: str, worker: int, n: int) -> None:
    cache = CallCache(path)
    for i in range(n):
        cache.put_chat(f"k{worker}-{i}", "m", {"text": f"{worker}:{i}"})
        cache.put_chat("shared", "m", {"text": "same"})


def test_several_processes_write_at_once(tmp_path):
    path = str(tmp_path / "c.sqlite")
    CallCache(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = CallCache(path)
    assert len(cache) == 4 * 150 + 1
    assert cache.get_chat("k3-149") == {"text": "3:149"} and cache.get_chat("shared") == {
        "text": "same"
    }
    assert cache._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_embeddings_round_trip(tmp_path):
    import numpy as np

    cache = CallCache(tmp_path / "c.sqlite")
    cache.put_embeddings("m", {"a": np.arange(4, dtype=np.float32)})
    got = cache.get_embeddings(["a", "missing"])
    assert list(got) == ["a"] and got["a"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("threads", [8])
def test_threads_share_one_cache(tmp_path, threads):
    backend = CountingBackend()
    llm = LLM(
        backend, cache=CallCache(tmp_path / "c.sqlite"), max_in_flight=threads, progress=False
    )
    llm.complete([ChatRequest.user(f"q{i % 10}") for i in range(10)])
    llm.complete([ChatRequest.user(f"q{i % 10}") for i in range(40)])
    assert backend.calls == 10


def test_a_batch_is_looked_up_in_one_query_and_served_without_a_backend_call(tmp_path):
    requests = [ChatRequest.user(f"q{i}") for i in range(20)]
    cold = LLM(
        ScriptedChat(reply=lambda r: r.messages[-1][1] + "!"), cache=CallCache(tmp_path / "c")
    )
    first = cold.complete(requests)
    cold.close()
    backend = ScriptedChat(reply=lambda r: "never")
    cache = CallCache(tmp_path / "c")
    assert set(cache.get_chats([f"nope{i}" for i in range(3)])) == set()
    warm = LLM(backend, cache=cache)
    again = warm.complete([*requests, ChatRequest.user("new")])
    warm.close()
    assert [c.text for c in again[:-1]] == [c.text for c in first] == [f"q{i}!" for i in range(20)]
    assert all(c.cached for c in again[:-1]) and not again[-1].cached and again[-1].text == "never"
    assert warm.meter.stages["other"].cache_hits == 20 and warm.meter.stages["other"].calls == 1
    assert warm.meter.intrinsic["other"].calls == 21
