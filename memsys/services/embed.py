"""The one embedding interface: cached per text, batched, retried, metered, L2-normalised.

A backend call that raises a retryable ``BackendError`` is retried by ``retry`` (backoff, the
server's Retry-After a floor) and counted as ``embed_retries``; one that still fails is counted
as ``embed_failures`` and raised to the step that needed it (which records its own failure). A
401/403 aborts the run (``AuthenticationFailed``); after the run's deadline, or once its budget
is spent, no call is made. A backend that declares ``max_concurrency`` (an in-process model) gets
at most that many requests at once from all threads; an HTTP backend gets at most one per thread
that embeds (each episode embeds what it needs before it goes on).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from memharness.memsys.services.budget import Budget
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.meter import Meter, current_stage
from memharness.memsys.services.retry import Retrier, RetryPolicy


class EmbedBackend(Protocol):
    model_id: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"embed\x00{model_id}\x00{text}".encode()).hexdigest()


class Embedder:
    """Embeds texts through the cache; only texts never seen go to the backend."""

    def __init__(
        self,
        backend: EmbedBackend,
        meter: Meter | None = None,
        cache: CallCache | None = None,
        batch_size: int = 64,
        retry: RetryPolicy | None = None,
        deadline: Deadline | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.backend = backend
        self.budget = budget
        cap = getattr(backend, "max_concurrency", None)
        self._slots = threading.BoundedSemaphore(cap) if cap else contextlib.nullcontext()
        self.meter = meter or Meter()
        self.cache = cache
        self.batch_size = batch_size
        self.retry = retry or getattr(backend, "retry_policy", None) or RetryPolicy(max_retries=0)
        self.deadline = deadline
        self._retrier = Retrier(
            self.retry,
            self.meter,
            deadline,
            budget,
            "embedding call",
            llm_call=False,
            retries_counter="embed_retries",
            failures_counter="embed_failures",
        )
        self._dim: int | None = None

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of unit-norm embeddings."""
        stage = current_stage()
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        self.meter.record_embed(len(texts), stage)  # intrinsic: asked for, whether cached or not
        keys = [_key(self.model_id, t) for t in texts]
        found = self.cache.get_embeddings(list(set(keys))) if self.cache is not None else {}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.meter.add(stage, embed_cache_hits=len(keys) - sum(1 for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=False))
            new: dict[str, np.ndarray] = {}
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start : start + self.batch_size]
                vectors = self._embed_batch([text_of[k] for k in batch], stage)
                new.update(zip(batch, _normalise(vectors), strict=False))
            if self.cache is not None:
                self.cache.put_embeddings(self.model_id, new)
            found.update(new)
        out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        self._dim = out.shape[1]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def _embed_batch(self, texts: list[str], stage: str) -> np.ndarray:
        """One backend request through the shared retry loop; counted per stage."""
        vectors, _, elapsed = self._retrier.send(
            lambda: np.asarray(self.backend.embed(texts), dtype=np.float32), stage, self._slots
        )
        self.meter.add(stage, embed_calls=1, embed_texts=len(texts), backend_s=elapsed)
        return vectors


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
