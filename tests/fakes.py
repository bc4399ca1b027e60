"""Seeded, deterministic test doubles for the chat and embedding backends.

They stand in for the real backends in unit tests of the runner's logic; the
real embedded models are exercised by the ``slow`` tests.
"""

from __future__ import annotations

import hashlib
import re
import threading

import numpy as np
from memharness.baselines.full_context import FullContext
from memharness.memsys.services.types import BackendError, ChatRequest, Completion


class ScriptedChat:
    """Answers from a script: the first (pattern, reply) whose pattern occurs in the prompt wins.

    ``fail_on``: prompts containing this text raise a non-retryable BackendError.
    Every request is logged in ``self.requests``.
    """

    max_concurrency = None

    def __init__(
        self,
        script: list[list[str]] | None = None,
        default: str = "I do not know",
        fail_on: str | None = None,
        model_id: str = "fake-chat",
    ) -> None:
        self.script = [tuple(p) for p in (script or [])]
        self.default = default
        self.fail_on = fail_on
        self.model_id = model_id
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> Completion:
        prompt = request.messages[-1][1]
        with self._lock:
            self.requests.append(request)
        if self.fail_on and self.fail_on in prompt:
            raise BackendError("scripted failure", retryable=False, status=500)
        text = next((reply for pattern, reply in self.script if pattern in prompt), self.default)
        return Completion(
            text=text, prompt_tokens=len(prompt.split()), completion_tokens=len(text.split())
        )


class HashEmbed:
    """Bag-of-words embeddings from hashed lower-cased words: shared words give positive cosine."""

    def __init__(self, dim: int = 64, model_id: str = "fake-embed") -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i, 0] += 1e-3  # no all-zero vector
        return out


def dataset_with_problems(path: str | None = None, parts: object = None):
    """A loader result with one empty unit and evidence pointing at a missing source."""
    from memharness.data_prep.base import Dataset
    from memharness.memsys.types import Episode, Evidence, Question, units_from_texts

    units = units_from_texts(["The tram line opens in March.", ""], source_id="doc")
    question = Question(
        id="q",
        text="When does the tram open?",
        answers=("March",),
        position=2,
        evidence=(Evidence(source_id="missing-doc"),),
    )
    return Dataset(name="problems", episodes=[Episode(id="ep", units=units, questions=[question])])


class FailingMemory(FullContext):
    """A full-context memory whose insert raises when a unit contains ``fail_on``."""

    def __init__(self, fail_on: str = "", **services) -> None:
        super().__init__(**services)
        self.fail_on = fail_on

    def add(self, units) -> None:
        if any(self.fail_on in u.text for u in units):
            raise RuntimeError(f"cannot insert a unit containing {self.fail_on!r}")
        super().add(units)


class ScriptedChatWithLogprobs(ScriptedChat):
    """ScriptedChat that also scores prompt tokens: -1 nat per word, -0.25 after a "Summary" prefix."""

    def logprob(self, request) -> tuple[float, int]:
        words = len(request.text.split())
        return -(0.25 if request.prefix.startswith("Summary") else 1.0) * words, words


class SlowScriptedChat(ScriptedChat):
    """ScriptedChat that sleeps ``delay_s`` per call (for progress and timing tests)."""

    def __init__(self, delay_s: float = 0.05, **kw) -> None:
        super().__init__(**kw)
        self.delay_s = delay_s

    def chat(self, request):
        import time

        time.sleep(self.delay_s)
        return super().chat(request)


class DegradingMemory(FullContext):
    """A full-context memory that records a degradation (as a failed summary would) for every
    inserted unit containing ``degrade_on``."""

    def __init__(self, degrade_on: str = "", **services) -> None:
        super().__init__(**services)
        self.degrade_on = degrade_on

    def add(self, units) -> None:
        self.degrade("summary_failed", sum(self.degrade_on in u.text for u in units))
        super().add(units)
