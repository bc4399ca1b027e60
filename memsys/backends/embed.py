"""The one embedding interface: cached per text, batched, metered, L2-normalised."""
from __future__ import annotations

import hashlib
import time
from typing import Protocol, Sequence

import numpy as np

from .cache import CallCache
from .meter import Meter, current_stage


class EmbedBackend(Protocol):
    model_id: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"embed\x00{model_id}\x00{text}".encode("utf-8")).hexdigest()


class Embedder:
    """Embeds texts through the cache; only texts never seen go to the backend."""

    def __init__(self, backend: EmbedBackend, meter: Meter | None = None, cache: CallCache | None = None,
                 batch_size: int = 64) -> None:
        self.backend = backend
        self.meter = meter or Meter()
        self.cache = cache
        self.batch_size = batch_size
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
            text_of = dict(zip(keys, texts))
            new: dict[str, np.ndarray] = {}
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start:start + self.batch_size]
                t0 = time.perf_counter()
                vectors = np.asarray(self.backend.embed([text_of[k] for k in batch]), dtype=np.float32)
                self.meter.add(stage, embed_calls=1, embed_texts=len(batch), backend_s=time.perf_counter() - t0)
                new.update(zip(batch, _normalise(vectors)))
            if self.cache is not None:
                self.cache.put_embeddings(self.model_id, new)
            found.update(new)
        out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        self._dim = out.shape[1]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
