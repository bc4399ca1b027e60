"""The one embedding interface: cached per text, batched, retried, metered, L2-normalised.

A backend call that raises a retryable ``BackendError`` is retried by ``retry`` (backoff, the
server's Retry-After a floor) and counted as ``embed_retries``; one that still fails is counted
as ``embed_failures`` and raised to the step that needed it (which records its own failure). A
401/403 aborts the run (``AuthenticationFailed``); after the run's deadline, or once its budget
is spent, no call is made. A backend that declares ``max_concurrency`` (an in-process model) gets
at most that many requests at once from all threads; an HTTP backend gets at most one per thread
that embeds (each episode embeds what it needs before it goes on).

A reply that is not a valid answer (a NaN or infinite value, another dimension than the embedder's,
more or fewer vectors than texts) is refused: counted as ``embed_invalid``, retried like a transient
error and never cached. The dimension is the backend's ``dimensions`` when it declares one, else
that of the first valid vectors this embedder sees (from the cache or a reply). A cached vector that
fails the same checks (written by an older version) is counted the same way and embedded again.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from memharness.memsys.services.budget import Budget
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.meter import Meter, current_stage
from memharness.memsys.services.retry import Retrier, RetryPolicy
from memharness.memsys.services.types import BackendError, loading_apart


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
        slots: Any = None,
    ) -> None:
        self.backend = backend
        self.budget = budget
        cap = getattr(backend, "max_concurrency", None)
        # ``slots``: a request budget shared with the chat facade (one server behind both)
        self._slots = (
            slots
            if slots is not None
            else threading.BoundedSemaphore(cap)
            if cap
            else contextlib.nullcontext()
        )
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
        declared = getattr(backend, "dimensions", None)
        self._dim: int | None = declared if isinstance(declared, int) and declared > 0 else None
        self._dim_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of unit-norm embeddings."""
        stage = current_stage()
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        keys = [_key(self.model_id, t) for t in texts]
        found = self.cache.get_embeddings(list(set(keys))) if self.cache is not None else {}
        found = self._valid_cached(found, stage)
        made = self.cache.get_embed_latencies(list(found)) if self.cache is not None else {}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.meter.add(stage, embed_cache_hits=len(keys) - sum(1 for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=False))
            new: dict[str, np.ndarray] = {}
            times: dict[str, float] = {}
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start : start + self.batch_size]
                vectors, elapsed = self._embed_batch([text_of[k] for k in batch], stage)
                new.update(zip(batch, _normalise(vectors), strict=False))
                times.update((k, elapsed / len(batch)) for k in batch)
            if self.cache is not None:
                self.cache.put_embeddings(self.model_id, new, times)
            found.update(new)
            made.update(times)
        # intrinsic: asked for, whether cached or not, with the time each vector took when made
        known = [made[k] for k in keys if k in made]
        self.meter.record_embed(len(texts), stage, sum(known), len(keys) - len(known))
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def _embed_batch(self, texts: list[str], stage: str) -> tuple[np.ndarray, float]:
        """One backend request through the shared retry loop, counted per stage: (vectors, its
        latency without the weights' loading on first use, metrics.json model_load_s)."""
        loads: list[float] = []
        vectors, _, elapsed = self._retrier.send(
            lambda: self._checked(
                loading_apart(self.backend, lambda: self.backend.embed(texts), loads),
                len(texts),
                stage,
            ),
            stage,
            self._slots,
        )
        self.meter.add(stage, embed_calls=1, embed_texts=len(texts), backend_s=elapsed)
        return vectors, max(0.0, elapsed - loads[-1])

    def _checked(self, reply: object, n: int, stage: str) -> np.ndarray:
        """The reply as an (n, dim) float32 array, or a retryable ``BackendError`` saying what is
        wrong with it (counted as ``embed_invalid``)."""
        try:
            vectors = np.asarray(reply, dtype=np.float32)
        except (TypeError, ValueError):  # ragged rows, non-numbers
            vectors = None
        problem = vector_problem(vectors, n, self._pin(vectors))
        if problem is None:
            return vectors
        self.meter.add(stage, embed_invalid=1)
        raise BackendError(
            f"invalid embedding reply from {self.model_id}: {problem}", retryable=True
        )

    def _pin(self, vectors: np.ndarray | None) -> int | None:
        """The embedder's dimension; the first well-shaped finite vectors fix it if nothing has."""
        with self._dim_lock:
            if (
                self._dim is None
                and vectors is not None
                and vectors.ndim == 2
                and vectors.shape[1] > 0
                and np.isfinite(vectors).all()
            ):
                self._dim = int(vectors.shape[1])
            return self._dim

    def _valid_cached(self, found: dict[str, np.ndarray], stage: str) -> dict[str, np.ndarray]:
        """Cached vectors that pass the reply checks; the others are counted and embedded again."""
        if not found:
            return found
        dim = self._dim
        for vector in found.values():
            if dim is not None:
                break
            dim = self._pin(vector.reshape(1, -1))
        good = {k: v for k, v in found.items() if vector_problem(v.reshape(1, -1), 1, dim) is None}
        if len(good) < len(found):
            self.meter.add(stage, embed_invalid=len(found) - len(good))
        return good


def vector_problem(vectors: np.ndarray | None, n: int, dim: int | None) -> str | None:
    """What makes ``vectors`` no answer for ``n`` texts of dimension ``dim`` (None: nothing)."""
    if vectors is None or vectors.ndim != 2:
        shape = "rows of different lengths" if vectors is None else f"shape {vectors.shape}"
        return f"expected {n} vectors, got {shape}"
    if vectors.shape[0] != n:
        return f"expected {n} vectors, got {vectors.shape[0]}"
    if vectors.shape[1] == 0 or (dim is not None and vectors.shape[1] != dim):
        return f"vectors of dimension {vectors.shape[1]}, expected {dim}"
    bad = int((~np.isfinite(vectors)).any(axis=1).sum())
    if bad:
        return f"{bad} of {n} vectors hold NaN or infinite values"
    return None


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
