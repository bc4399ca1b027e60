"""The embedded llama.cpp backend itself: context fitting and its cache identity."""
from __future__ import annotations

import pytest

from memharness.memsys.backends.types import ChatRequest


@pytest.mark.slow
def test_long_prompt_is_cut_to_fit_and_the_cut_is_reported():
    from memharness.memsys.backends.local import LlamaCppBackend

    backend = LlamaCppBackend(embedded="smollm2", n_ctx=512, n_threads=2)
    assert backend.model_id.endswith(":ctx512")  # a different context is a different cache namespace
    long_prompt = "Remember this fact: the tram opens in March. " * 200 + "\nWhen does the tram open?"
    out = backend.chat(ChatRequest.user(long_prompt, max_tokens=16))
    assert out.text.strip() and out.prompt_tokens <= 512 - 16
    assert out.extra["prompt_tokens_cut"] > 1000
    short = backend.chat(ChatRequest.user("Say hello.", max_tokens=8))
    assert "prompt_tokens_cut" not in short.extra
    judged = backend.chat(ChatRequest.user("Is 2 + 2 = 4? Reply 1 for yes, 0 for no.", max_tokens=2, choices=("0", "1")))
    assert judged.text in ("0", "1")  # the grammar allows nothing else
