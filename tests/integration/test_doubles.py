"""The shared test doubles (memsys/testing/doubles.py) and the offline llm=scripted embedder=hashing run."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from memharness.eval.run.runner import run
from memharness.memsys.services.types import BackendError, ChatRequest
from memharness.memsys.testing.doubles import (
    HashingEmbedder,
    ScriptedChat,
    ScriptedLLM,
    SeededEmbedder,
    TimedBackend,
    TopicEmbedder,
    WordTokenizer,
)


def test_scripted_chat_takes_the_first_matching_pattern_else_the_default():
    chat = ScriptedChat([["tram", "March"], ["tram line", "never"]], default="?")
    assert chat.chat(ChatRequest.user("When does the tram line open?")).text == "March"
    assert chat.chat(ChatRequest.user("Who won?")).text == "?"
    out = chat.chat(ChatRequest.user("the tram"))
    assert (out.prompt_tokens, out.completion_tokens) == (2, 1)  # whitespace words
    assert chat.calls == 3 and len(chat.requests) == 3 and chat.peak == 1


def test_scripted_chat_failures_queued_errors_and_reply_function():
    chat = ScriptedChat(fail_on="boom")
    with pytest.raises(BackendError) as err:
        chat.chat(ChatRequest.user("a boom here"))
    assert err.value.status == 500 and not err.value.retryable
    flaky = ScriptedChat(
        errors={"x": [BackendError("429", retryable=True)]},
        reply=lambda r: r.messages[-1][1].upper(),
        usage=(10, 1),
    )
    with pytest.raises(BackendError, match="429"):
        flaky.chat(ChatRequest.user("x"))
    out = flaky.chat(ChatRequest.user("x"))
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("X", 10, 1)
    assert flaky.calls == 2


def test_scripted_chat_tracks_peak_concurrency():
    chat = ScriptedChat(latency_s=0.05, log=False)
    threads = [
        threading.Thread(target=chat.chat, args=(ChatRequest.user(f"p{i}"),)) for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert chat.calls == 3 and chat.peak >= 2 and chat.active == 0 and chat.requests == []


def test_scripted_llm_replies_in_order_or_by_function_and_records_batches():
    queued = ScriptedLLM(["one", "two"])
    assert queued.complete_one(ChatRequest.user("a")).text == "one"
    assert queued.complete([ChatRequest.user("b")])[0].text == "two"
    assert queued.prompts == ["a", "b"] and queued.calls == 2 and len(queued.batches) == 2
    by_prompt = ScriptedLLM(lambda p: None if "bad" in p else p[::-1])
    good, bad = by_prompt.complete([ChatRequest.user("abc"), ChatRequest.user("bad")])
    assert good.text == "cba" and good.ok and not bad.ok and bad.error.startswith("BackendError")


def test_hashing_embedder_is_deterministic_unit_norm_and_lexical():
    a, b = HashingEmbedder(dim=32), HashingEmbedder(dim=32)
    texts = ["The tram opens in March", "the TRAM opens", "Bakeries sell rye bread", ""]
    va, vb = a.embed(texts), b.embed(texts)
    assert va.shape == (4, 32) and va.dtype == np.float32
    assert np.array_equal(va, vb)  # md5, not Python's salted hash
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0)  # the empty text too
    assert va[0] @ va[1] > va[0] @ va[2]  # shared words give a higher cosine
    assert a.calls == 1


def test_embedders_fail_first_then_embed():
    flaky = HashingEmbedder(dim=4, fail_first=2, failure=BackendError("HTTP 500", status=500))
    for _ in range(2):
        with pytest.raises(BackendError, match="HTTP 500"):
            flaky.embed(["x"])
    assert flaky.embed(["x", "y"]).shape == (2, 4) and flaky.calls == 3


def test_seeded_and_topic_embedders_are_deterministic():
    seeded = SeededEmbedder(dim=16).embed(["a", "a", "b"])
    assert np.array_equal(seeded[0], seeded[1]) and not np.array_equal(seeded[0], seeded[2])
    assert np.allclose(np.linalg.norm(seeded, axis=1), 1.0)
    topics = TopicEmbedder(topics=4, dim=64, spread=3.5, normalise=True)
    v = topics.embed(["unit 1 about c2", "unit 9 about c2", "unit 3 about c3"])
    assert np.array_equal(
        v,
        TopicEmbedder(topics=4, dim=64, spread=3.5, normalise=True).embed(
            ["unit 1 about c2", "unit 9 about c2", "unit 3 about c3"]
        ),
    )
    assert v[0] @ v[1] > 0.8 > v[0] @ v[2]  # same topic close, another topic not


def test_word_tokenizer_counts_words():
    tok = WordTokenizer()
    assert tok.count("one two  three") == 3 and WordTokenizer(per_word=0).count("a b") == 0
    assert tok.decode(tok.encode("a b c")) == "a b c"
    assert tok.truncate("a b c d", 2) == "a b" and tok.truncate_left("a b c d", 2) == "c d"


def test_timed_backend_reports_each_call():
    spans: list[tuple[float, float]] = []
    timed = TimedBackend(ScriptedChat(default="ok"), lambda s, e: spans.append((s, e)))
    assert timed.chat(ChatRequest.user("q")).text == "ok" and timed.model_id == "fake-chat"
    assert TimedBackend(HashingEmbedder(dim=8), lambda s, e: spans.append((s, e))).embed(
        ["a"]
    ).shape == (1, 8)
    assert len(spans) == 2 and all(start <= end for start, end in spans)


def test_scripted_and_hashing_configs_run_two_questions_offline(make_cfg, tmp_path):
    cfg = make_cfg("llm=scripted", "embedder=hashing", "dataset.limit=2", fake=False)
    assert cfg.llm.backend._target_.endswith("doubles.ScriptedChat")
    assert cfg.embedder.backend._target_.endswith("doubles.HashingEmbedder")
    out = tmp_path / "run"
    run(cfg, out)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == 2 and metrics["counts"]["scored"] == 2
    assert metrics["counts"]["judge_unparsed"] == 0  # the script answers the judge prompts with 1
    assert metrics["llm"] == "scripted" and metrics["judge"] == "scripted"
