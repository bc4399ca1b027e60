"""Replay-only backends: every reply must come from the call cache; the backend itself never answers.

``llm=replay`` / ``embedder=replay`` stand in for a recorded model by its id (``model_id``, the id the
recording backend reported, e.g. ``llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf:ctx4096``), so the cache
keys (a hash of the model id and the request) are those of the recording. A request the cache does
not hold reaches the backend and fails with a ``BackendError`` naming it: the LLM facade records and
counts it as a failure (``calls`` stays 0), the embedder raises it to the step that needed the vector.
Used by the golden regression (``make golden``, ``eval/papers/golden/``), which loads no model weights.
"""

from __future__ import annotations

import numpy as np
from memharness.memsys.services.types import (
    BackendError,
    ChatRequest,
    Completion,
    ConfigError,
    LogprobRequest,
)


class ReplayMiss(BackendError):
    """A request that is not in the recorded call cache."""


class ReplayChatBackend:
    """Answers nothing: a chat or log-prob request that reaches it was not recorded."""

    max_concurrency = 1

    def __init__(self, model_id: str) -> None:
        if not model_id:
            raise ConfigError(
                "llm.backend.model_id: the recorded model's id is required for replay"
            )
        self.model_id = model_id

    def chat(self, request: ChatRequest) -> Completion:
        prompt = request.messages[-1][1] if request.messages else ""
        raise ReplayMiss(
            f"replay: no recorded reply for model {self.model_id} and prompt {prompt[:80]!r}; "
            "re-record the cache (docs/papers.md, 'Golden regression')",
            retryable=False,
        )

    def logprob(self, request: LogprobRequest) -> tuple[float, int]:
        raise ReplayMiss(
            f"replay: no recorded log-probability for model {self.model_id} and text "
            f"{request.text[:80]!r}",
            retryable=False,
        )


class ReplayEmbedBackend:
    """Embeds nothing: a text that reaches it was not recorded."""

    def __init__(self, model_id: str) -> None:
        if not model_id:
            raise ConfigError(
                "embedder.backend.model_id: the recorded embedder's id is required for replay"
            )
        self.model_id = model_id

    def embed(self, texts: list[str]) -> np.ndarray:
        raise ReplayMiss(
            f"replay: {len(texts)} text(s) without a recorded embedding for {self.model_id}, "
            f"e.g. {texts[0][:80]!r}",
            retryable=False,
        )
