"""Every prompt the llama.cpp backend cuts to fit its context is counted, per stage, in both ledgers.

The backend's own fitting code runs on a word-level stand-in for the llama.cpp model (no weights are
loaded), so the test is fast and exact."""

from __future__ import annotations

import threading

from memharness.memsys.services.backends.local import LlamaCppBackend
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ChatRequest


class WordLlama:
    """The part of ``llama_cpp.Llama`` the backend uses: one token per word."""

    def tokenize(self, text: bytes, add_bos: bool = False) -> list[bytes]:
        return text.split()

    def detokenize(self, tokens: list[bytes]) -> bytes:
        return b" ".join(tokens)

    def create_chat_completion(self, messages, **_: object) -> dict:
        words = sum(len(m["content"].split()) for m in messages)
        return {
            "choices": [{"message": {"content": "ok"}}],
            "usage": {"prompt_tokens": words, "completion_tokens": 1},
        }


def word_backend(n_ctx: int) -> LlamaCppBackend:
    """A LlamaCppBackend with its model replaced by ``WordLlama`` (set as if already loaded)."""
    backend = LlamaCppBackend.__new__(LlamaCppBackend)
    backend.n_ctx, backend.model_id = n_ctx, f"llama.cpp:words:ctx{n_ctx}"
    backend._loaded, backend._lock, backend._grammars = WordLlama(), threading.Lock(), {}
    return backend


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def test_the_backend_cuts_the_middle_and_reports_how_many_tokens():
    backend = word_backend(n_ctx=200)  # room for 200 - 16 - 64 = 120 prompt words
    out = backend.chat(ChatRequest.user(words(300, "w"), max_tokens=16))
    assert out.extra == {"prompt_tokens_cut": 180}
    assert out.prompt_tokens == 120 + 1  # head and tail kept, plus the "[...]" marker
    assert "prompt_tokens_cut" not in backend.chat(ChatRequest.user("short", max_tokens=16)).extra


def test_every_cut_is_counted_per_stage_in_spend_and_intrinsic(tmp_path):
    meter = Meter()
    llm = LLM(word_backend(n_ctx=200), meter=meter, cache=CallCache(tmp_path / "cache"))
    with meter.stage("build"):
        llm.complete(
            [ChatRequest.user(words(300, f"b{i}"), max_tokens=16) for i in range(2)], desc="build"
        )
    with meter.stage("retrieve"):
        llm.complete(
            [
                ChatRequest.user(words(150, "r"), max_tokens=16),  # 30 words over the 120
                ChatRequest.user("fits", max_tokens=16),
            ]
        )
    with meter.stage("answer"):
        llm.complete_one(ChatRequest.user("fits too", max_tokens=16))
    spend, used = meter.to_json(), meter.intrinsic_json()
    for ledger in (spend, used):
        assert (ledger["build"]["prompt_cuts"], ledger["build"]["prompt_tokens_cut"]) == (2, 360)
        assert (ledger["retrieve"]["prompt_cuts"], ledger["retrieve"]["prompt_tokens_cut"]) == (
            1,
            30,
        )
        assert ledger["answer"]["prompt_cuts"] == 0
        assert (ledger["total"]["prompt_cuts"], ledger["total"]["prompt_tokens_cut"]) == (3, 390)
    # a warm rerun sends nothing, but the method still read a cut prompt: intrinsic keeps counting it
    with meter.stage("judge"):
        llm.complete_one(ChatRequest.user(words(150, "r"), max_tokens=16))
    spend, used = meter.to_json(), meter.intrinsic_json()
    assert spend["judge"]["cache_hits"] == 1 and spend["judge"]["prompt_cuts"] == 0
    assert (used["judge"]["prompt_cuts"], used["judge"]["prompt_tokens_cut"]) == (1, 30)
    llm.close()
