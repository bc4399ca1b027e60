"""Deterministic stand-ins for the chat backend, the LLM facade, the embedder and the tokenizer.

The one home of the doubles the unit tests and the stub benchmarks (eval/bench) share; no model, no
network, no randomness beyond seeds derived from the text. Select them from the command line with
``llm=scripted embedder=hashing`` (conf/llm/scripted.yaml, conf/embedder/hashing.yaml).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import numpy as np
from memharness.memsys.services.types import BackendError, ChatRequest, Completion
from memharness.memsys.settings import Range

__all__ = [
    "HashingEmbedder",
    "ScriptedChat",
    "ScriptedLLM",
    "SeededEmbedder",
    "TimedBackend",
    "TopicEmbedder",
    "WordTokenizer",
    "digest",
]

_WORD = re.compile(r"[a-z0-9]+")


def digest(text: str, hex_digits: int = 32) -> int:
    """A stable integer from the text's MD5 (Python's ``hash`` changes between processes)."""
    return int(hashlib.md5(text.encode()).hexdigest()[:hex_digits], 16)


class ScriptedChat:
    """A chat backend answering from a script: the first ``(pattern, reply)`` whose pattern occurs in
    the prompt (the last message) wins, else ``default``; ``reply(request)`` replaces the script.

    ``fail_on``: prompts containing it raise ``failure`` (default: a non-retryable HTTP 500);
    ``errors``: prompt -> errors raised on its first calls, one per call. ``latency_s``: sleep per
    call. ``usage``: fixed (prompt, completion) token counts (default: whitespace words). Counts
    ``calls`` and the ``peak`` number of calls in flight; logs requests and start times unless
    ``log=False`` (long benchmarks).
    """

    max_concurrency: int | None = None

    def __init__(
        self,
        script: Sequence[Sequence[str]] | None = None,
        default: str = "I do not know",
        fail_on: str | None = None,
        model_id: str = "fake-chat",
        *,
        reply: Callable[[ChatRequest], str] | None = None,
        failure: BackendError | None = None,
        errors: Mapping[str, Sequence[BackendError]] | None = None,
        latency_s: Annotated[float, Range(0.0)] = 0.0,
        usage: tuple[int, int] | None = None,
        log: bool = True,
    ) -> None:
        self.script = [(str(p[0]), str(p[1])) for p in (script or [])]
        self.default, self.fail_on, self.model_id = default, fail_on, model_id
        self.reply, self.latency_s, self.usage, self.log = reply, latency_s, usage, log
        self.failure = failure or BackendError("scripted failure", retryable=False, status=500)
        self.errors = {k: list(v) for k, v in (errors or {}).items()}
        self.requests: list[ChatRequest] = []
        self.times: list[float] = []
        self.calls = self.active = self.peak = 0
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> Completion:
        prompt = request.messages[-1][1]
        with self._lock:
            self.calls += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            if self.log:
                self.requests.append(request)
                self.times.append(time.monotonic())
            queued = self.errors.get(prompt)
            error = queued.pop(0) if queued else None
        try:
            if error is None and self.fail_on is not None and self.fail_on in prompt:
                error = self.failure
            completion = None
            if error is None:  # worked out before the latency passes, as a server works while its
                # client waits: the double's own CPU overlaps the other calls' latency
                text = self.reply(request) if self.reply else self._scripted(prompt)
                prompt_tokens, completion_tokens = self.usage or (
                    len(prompt.split()),
                    len(text.split()),
                )
                completion = Completion(
                    text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
                )
            if self.latency_s:
                time.sleep(self.latency_s)
            if error is not None:
                raise error
            return completion
        finally:
            with self._lock:
                self.active -= 1

    def _scripted(self, prompt: str) -> str:
        return next((reply for pattern, reply in self.script if pattern in prompt), self.default)


class ScriptedLLM:
    """Stands in for the LLM facade (``memsys.services.llm.LLM``): each request of ``complete`` is
    answered with ``reply(prompt)`` (None: a failed call), or with the next of a list of replies.
    Every batch is recorded in ``batches``."""

    def __init__(
        self, reply: Callable[[str], str | None] | Sequence[str], model_id: str = "fake-llm"
    ) -> None:
        if callable(reply):
            self.reply = reply
        else:
            queue = list(reply)
            self.reply = lambda prompt: queue.pop(0)
        self.model_id = model_id
        self.batches: list[list[ChatRequest]] = []

    def complete(
        self, requests: Sequence[ChatRequest], desc: str | None = None
    ) -> list[Completion]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            text = self.reply(r.messages[-1][1])
            out.append(
                Completion(text="", error="BackendError: scripted")
                if text is None
                else Completion(text=text)
            )
        return out

    def complete_one(self, request: ChatRequest) -> Completion:
        return self.complete([request])[0]

    @property
    def requests(self) -> list[ChatRequest]:
        return [r for b in self.batches for r in b]

    @property
    def prompts(self) -> list[str]:
        return [r.messages[-1][1] for r in self.requests]

    @property
    def calls(self) -> int:
        return len(self.requests)


class _EmbedderBase:
    """Shared bookkeeping: ``calls`` counts embed calls; the first ``fail_first`` raise ``failure``;
    a call with a text containing ``fail_on`` raises a non-retryable ``BackendError``; each call
    sleeps ``latency_s``."""

    def __init__(
        self,
        dim: int,
        model_id: str,
        fail_first: int = 0,
        failure: BackendError | None = None,
        fail_on: str | None = None,
        latency_s: float = 0.0,
    ) -> None:
        self.dim, self.model_id, self.fail_first = dim, model_id, fail_first
        self.failure = failure or BackendError("scripted embedding failure", retryable=True)
        self.fail_on = fail_on
        self.latency_s = latency_s  # sleep per call (a backend that takes time)
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        if self.calls <= self.fail_first:
            raise self.failure
        if self.fail_on and any(self.fail_on in text for text in texts):
            raise BackendError(f"scripted embedding failure on {self.fail_on!r}", status=500)
        rows = [self.vector(t) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def vector(self, text: str) -> np.ndarray:
        raise NotImplementedError


class HashingEmbedder(_EmbedderBase):
    """Unit-norm bag of hashed lower-cased words: texts sharing words have a positive cosine,
    unrelated ones are near 0. Deterministic across processes."""

    def __init__(
        self,
        dim: Annotated[int, Range(1)] = 64,
        model_id: str = "hashing-embed",
        fail_first: Annotated[int, Range(0)] = 0,
        failure: BackendError | None = None,
        fail_on: str | None = None,
        latency_s: Annotated[float, Range(0.0)] = 0.0,
    ) -> None:
        super().__init__(dim, model_id, fail_first, failure, fail_on, latency_s)

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            v[digest(word) % self.dim] += 1.0
        v[0] += 1e-3  # never the zero vector
        return v / np.linalg.norm(v)


class SeededEmbedder(_EmbedderBase):
    """A unit-norm Gaussian vector seeded by the text: equal texts are equal, all others nearly
    orthogonal (for timing and call counting where similarity does not matter)."""

    def __init__(self, dim: int = 384, model_id: str = "seeded-embed") -> None:
        super().__init__(dim, model_id)

    def vector(self, text: str) -> np.ndarray:
        v = np.random.default_rng(digest(text, 8)).standard_normal(self.dim)
        return v / max(float(np.linalg.norm(v)), 1e-9)


class TopicEmbedder(_EmbedderBase):
    """Planted clusters: a text naming topic ``c<k>`` embeds to ``spread`` x that topic's seeded
    centre plus seeded unit noise; a text naming no topic gets its hashed words plus a little noise.
    ``normalise``: return unit vectors."""

    TAG = re.compile(r"\bc(\d+)\b")

    def __init__(
        self,
        topics: int = 40,
        dim: int = 384,
        spread: float = 1.2,
        normalise: bool = False,
        model_id: str = "topic-embed",
    ) -> None:
        super().__init__(dim, model_id)
        self.centres = np.random.default_rng(0).standard_normal((topics, dim)).astype(np.float32)
        self.spread, self.normalise = spread, normalise

    def vector(self, text: str) -> np.ndarray:
        noise = np.random.default_rng(digest(text, 8)).standard_normal(self.dim).astype(np.float32)
        tag = self.TAG.search(text)
        if tag:
            v = self.centres[int(tag.group(1)) % len(self.centres)] * self.spread + noise
        else:
            v = np.zeros(self.dim, dtype=np.float32)
            for word in _WORD.findall(text.lower()):
                v[digest(word) % self.dim] += 1.0
            v += 0.01 * noise
        return v / max(float(np.linalg.norm(v)), 1e-9) if self.normalise else v


class WordTokenizer:
    """One token per whitespace-separated word (budgets easy to reason about). ``per_word``: tokens
    counted per word (0: every text counts as 0 tokens)."""

    def __init__(self, per_word: int = 1) -> None:
        self.per_word = per_word

    def encode(self, text: str) -> list[str]:
        return text.split()

    def decode(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)

    def count(self, text: str) -> int:
        return self.per_word * len(text.split())

    def truncate(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])

    def truncate_left(self, text: str, max_tokens: int) -> str:
        words = text.split()
        return " ".join(words[max(0, len(words) - max_tokens) :])


class TimedBackend:
    """Wraps a chat or embedding backend and calls ``on_call(start, end)`` (``time.perf_counter``
    seconds) after each call, failed ones included."""

    def __init__(self, inner: Any, on_call: Callable[[float, float], None]) -> None:
        self._inner, self._on_call = inner, on_call
        self.model_id = inner.model_id
        self.max_concurrency = getattr(inner, "max_concurrency", None)

    def _timed(self, method: str, arg: Any) -> Any:
        start = time.perf_counter()
        try:
            return getattr(self._inner, method)(arg)
        finally:
            self._on_call(start, time.perf_counter())

    def chat(self, request: ChatRequest) -> Completion:
        return self._timed("chat", request)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._timed("embed", texts)

    def close(self) -> None:
        getattr(self._inner, "close", lambda: None)()
