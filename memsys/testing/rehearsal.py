"""The rehearsal backend: deterministic, model-free chat and embeddings of realistic shape and size.

``RehearsalChat`` recognises which prompt of conf/ a request was written from
(rehearsal_families.FAMILIES) and replies in the format that prompt asks for, built from the
prompt's own words (rehearsal_replies.REPLIES): summaries a share of their input's sentences,
GraphRAG records, HippoRAG NER and triples, structural-memory triples and atomic facts, ratings,
page labels, look-ups, MemGPT calls, answers and verdicts. ``RehearsalEmbedder`` embeds a text as its
hashed bag of stemmed content words, so texts on one topic are near and other topics far. Every
system therefore builds a structure of realistic shape and size, for measuring time, memory and
calls, never scores. Latency is ``base_ms + per_token_ms x completion tokens`` with at most
``capacity`` requests served at once (the rest wait), in process and over HTTP
(``memharness test-backend``, rehearsal_server.py). Select it with ``llm=rehearsal embedder=rehearsal``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.settings import Range
from memharness.memsys.testing.doubles import digest
from memharness.memsys.testing.rehearsal_families import UNRECOGNISED, load_templates, recognise
from memharness.memsys.testing.rehearsal_replies import REPLIES, constrain
from memharness.memsys.testing.rehearsal_text import Ask, content_words

__all__ = ["Latency", "RehearsalChat", "RehearsalEmbedder", "rehearsal_reply"]


class Latency:
    """A served model's timing: each request holds one of ``capacity`` slots (later ones queue) for
    ``base_ms + per_token_ms x tokens``. Counts requests, queued ones, the peak in flight and the
    seconds slots were held."""

    def __init__(self, base_ms: float = 0.0, per_token_ms: float = 0.0, capacity: int = 32) -> None:
        if base_ms < 0 or per_token_ms < 0 or capacity < 1:
            raise ValueError("latency: base_ms and per_token_ms >= 0, capacity >= 1")
        self.base_ms, self.per_token_ms, self.capacity = base_ms, per_token_ms, capacity
        self._slots = threading.BoundedSemaphore(capacity)
        self._lock = threading.Lock()
        self.requests = self.queued = self.active = self.peak = 0
        self.busy_s = 0.0

    def serve(self, tokens: int) -> None:
        """Hold a slot for the request's time (returns at once when both latencies are 0)."""
        seconds = (self.base_ms + self.per_token_ms * tokens) / 1000
        with self._lock:
            self.requests += 1
        if not self._slots.acquire(blocking=False):
            with self._lock:
                self.queued += 1
            self._slots.acquire()
        try:
            with self._lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            if seconds:
                time.sleep(seconds)
        finally:
            with self._lock:
                self.active -= 1
                self.busy_s += seconds
            self._slots.release()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "queued": self.queued,
                "peak_in_flight": self.peak,
                "busy_s": round(self.busy_s, 3),
                "capacity": self.capacity,
            }


def rehearsal_reply(
    request: ChatRequest, summary_share: float = 0.4, conf_dir: str | None = None
) -> tuple[str, str]:
    """(family, reply) for a request: a pure function of the request."""
    templates = load_templates(conf_dir) if conf_dir else load_templates()
    template, fields = recognise(request.messages, templates)
    family = template.family if template else UNRECOGNISED
    extras: dict[str, Any] = {"key": template.key if template else ""}
    if family == "graph_glean":  # the gleaning turn reads the first extraction prompt's text
        first, first_fields = recognise(request.messages[:1] or request.messages, templates)
        extras["first_fields"] = first_fields if first else {}
        extras["first_family"] = first.family if first else ""
    ask = Ask(
        fields=fields,
        messages=request.messages,
        max_tokens=request.max_tokens,
        choices=request.choices,
        summary_share=summary_share,
        extras=extras,
    )
    return family, constrain(REPLIES[family](ask), request.choices)


class RehearsalChat:
    """The chat backend of the rehearsal (see the module docstring). ``stats()`` counts replies per
    family, unrecognised prompts among them, and the latency model's queueing."""

    max_concurrency: int | None = None

    def __init__(
        self,
        model_id: str = "rehearsal",
        base_ms: Annotated[float, Range(0.0)] = 0.0,
        per_token_ms: Annotated[float, Range(0.0)] = 0.0,
        capacity: Annotated[int, Range(1)] = 32,
        summary_share: Annotated[float, Range(0.0, 1.0)] = 0.4,
        conf_dir: str | None = None,
    ) -> None:
        self.model_id, self.summary_share, self.conf_dir = model_id, summary_share, conf_dir
        self.latency = Latency(base_ms, per_token_ms, capacity)
        self.families: Counter[str] = Counter()
        self._lock = threading.Lock()
        load_templates(conf_dir) if conf_dir else load_templates()  # a bad table fails at start

    def reply(self, request: ChatRequest) -> tuple[str, Completion]:
        """(family, completion) without the latency (the server applies its own)."""
        family, text = rehearsal_reply(request, self.summary_share, self.conf_dir)
        with self._lock:
            self.families[family] += 1
        prompt_tokens = sum(len(c.split()) for _, c in request.messages)
        completion_tokens = len(text.split())
        return family, Completion(
            text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )

    def chat(self, request: ChatRequest) -> Completion:
        _, completion = self.reply(request)
        self.latency.serve(completion.completion_tokens)
        return completion

    def stats(self) -> dict[str, Any]:
        with self._lock:
            families = dict(sorted(self.families.items()))
        return {
            "families": families,
            "unrecognised": families.get(UNRECOGNISED, 0),
            **self.latency.stats(),
        }


class RehearsalEmbedder:
    """Hashed bag of stemmed content words (stopwords out), ``dim`` dimensions, L2-normalised: texts
    on one topic share words and so dimensions; unrelated texts are near orthogonal. Each word
    spreads over ``spread`` signed dimensions, so collisions cancel rather than pile up."""

    def __init__(
        self,
        dim: Annotated[int, Range(16)] = 384,
        spread: Annotated[int, Range(1)] = 2,
        model_id: str = "rehearsal-embed",
        base_ms: Annotated[float, Range(0.0)] = 0.0,
        capacity: Annotated[int, Range(1)] = 32,
    ) -> None:
        self.dim, self.spread, self.model_id = dim, spread, model_id
        self.latency = Latency(base_ms, 0.0, capacity)
        self._columns: dict[str, list[tuple[int, float]]] = {}
        self._lock = threading.Lock()
        self.calls = 0

    def _word(self, word: str) -> list[tuple[int, float]]:
        cols = self._columns.get(word)
        if cols is None:
            h = digest(word)
            cols = [
                ((h >> (20 * i)) % self.dim, 1.0 if (h >> (20 * i + 19)) & 1 else -1.0)
                for i in range(self.spread)
            ]
            self._columns[word] = cols
        return cols

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in content_words(text):
            for col, sign in self._word(word):
                v[col] += sign
        v[digest(text) % self.dim] += 1e-3  # never the zero vector
        return v / np.linalg.norm(v)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls += 1
        self.latency.serve(0)
        rows = [self.vector(t) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def stats(self) -> dict[str, Any]:
        return {"calls": self.calls, **self.latency.stats()}
