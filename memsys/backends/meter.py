"""Per-stage accounting of backend calls: build, retrieve, answer, judge."""
from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from dataclasses import asdict, dataclass
from typing import Iterator

STAGES = ("build", "retrieve", "answer", "judge", "other")
_current_stage: contextvars.ContextVar[str] = contextvars.ContextVar("memharness_stage", default="other")


def current_stage() -> str:
    return _current_stage.get()


@dataclass
class StageCounts:
    calls: int = 0  # requests answered by the backend (not the cache)
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embed_calls: int = 0
    embed_cache_hits: int = 0
    embed_texts: int = 0
    embed_retries: int = 0  # embedding requests retried after a transient error
    embed_failures: int = 0  # embedding requests that failed for good (the step that needed them failed)
    deadline_skipped: int = 0  # calls refused because the run's deadline had passed (also in failures)
    backend_s: float = 0.0  # time spent waiting on the backend (sum over calls)
    wall_s: float = 0.0  # wall time of the stage as measured by ``Meter.stage``
    cost_usd: float = 0.0


class Meter:
    """Thread-safe counters per stage plus stage wall time."""

    def __init__(self, prices: dict[str, dict[str, float]] | None = None) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, StageCounts] = {s: StageCounts() for s in STAGES}
        self.prices = prices or {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Attribute backend calls made inside the block to ``name`` and time it."""
        if name not in self.stages:
            raise ValueError(f"unknown stage {name!r}; expected one of {STAGES}")
        token = _current_stage.set(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            _current_stage.reset(token)
            with self._lock:
                self.stages[name].wall_s += elapsed

    def add(self, stage: str | None = None, **deltas: float) -> None:
        stage = stage or current_stage()
        with self._lock:
            counts = self.stages[stage]
            for k, v in deltas.items():
                setattr(counts, k, getattr(counts, k) + v)

    def add_llm_cost(self, model: str, prompt_tokens: int, completion_tokens: int, stage: str | None = None) -> None:
        # "openai:gpt-4o-mini@1a2b3c4d" is priced as "openai:gpt-4o-mini" (the suffix is a settings hash)
        price = self.prices.get(model) or self.prices.get(model.split("@")[0])
        if price:
            cost = (prompt_tokens * price.get("prompt", 0.0) + completion_tokens * price.get("completion", 0.0)) / 1e6
            self.add(stage, cost_usd=cost)

    def totals(self) -> StageCounts:
        total = StageCounts()
        with self._lock:
            for counts in self.stages.values():
                for k, v in asdict(counts).items():
                    setattr(total, k, getattr(total, k) + v)
        return total

    def to_json(self) -> dict[str, dict[str, float]]:
        with self._lock:
            out = {name: asdict(c) for name, c in self.stages.items()}
        out["total"] = asdict(self.totals())
        return out
