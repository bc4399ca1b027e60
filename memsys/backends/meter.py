"""Per-stage accounting of backend calls: build, retrieve, answer, judge (and the evaluation extras).

Two ledgers per stage:
- **spend** (``StageCounts``, ``Meter.to_json``): what this run actually sent to a backend; a cache
  hit costs nothing here. It depends on what earlier runs left in the cache.
- **intrinsic** (``IntrinsicCounts``, ``Meter.intrinsic_json``): what the method costs whether or not
  the cache served it: every LLM reply it used with its prompt / completion tokens and estimated
  dollars (cached replies carry their token counts and the latency measured when they were made),
  every text it embedded. A warm rerun reports the same intrinsic cost as the cold run.
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from dataclasses import asdict, dataclass
from typing import Iterator

# closed_book and audit hold the evaluation extras (closed-book pass, judge reliability), so the
# method's own cost (build, retrieve, answer) and the judge's stay comparable with and without them.
STAGES = ("build", "retrieve", "answer", "judge", "closed_book", "audit", "other")
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


@dataclass
class IntrinsicCounts:
    """The method's own cost in one stage, independent of the cache."""

    calls: int = 0  # LLM replies used (from the backend or the cache)
    cache_served: int = 0  # of those, served by the cache
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    call_s: float = 0.0  # backend latency when each reply was produced (summed; not wall time)
    latency_unknown: int = 0  # cached replies stored before latencies were recorded
    embed_requests: int = 0  # embed() calls with at least one text
    embed_texts: int = 0  # texts embedded (repeats included: the method asked for them)


class Meter:
    """Thread-safe counters per stage plus stage wall time: the spend and the intrinsic ledger."""

    def __init__(self, prices: dict[str, dict[str, float]] | None = None) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, StageCounts] = {s: StageCounts() for s in STAGES}
        self.intrinsic: dict[str, IntrinsicCounts] = {s: IntrinsicCounts() for s in STAGES}
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

    def price(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Estimated USD of one call; 0 for a model without a price."""
        # "openai:gpt-4o-mini@1a2b3c4d" is priced as "openai:gpt-4o-mini" (the suffix is a settings hash)
        price = self.prices.get(model) or self.prices.get(model.split("@")[0])
        if not price:
            return 0.0
        return (prompt_tokens * price.get("prompt", 0.0) + completion_tokens * price.get("completion", 0.0)) / 1e6

    def add_llm_cost(self, model: str, prompt_tokens: int, completion_tokens: int, stage: str | None = None) -> None:
        cost = self.price(model, prompt_tokens, completion_tokens)
        if cost:
            self.add(stage, cost_usd=cost)

    def record_reply(self, model: str, prompt_tokens: int, completion_tokens: int, cached: bool,
                     latency_s: float | None, stage: str | None = None) -> None:
        """Intrinsic ledger: one LLM reply the method used, whether the backend or the cache gave it."""
        stage = stage or current_stage()
        cost = self.price(model, prompt_tokens, completion_tokens)
        with self._lock:
            c = self.intrinsic[stage]
            c.calls += 1
            c.cache_served += int(cached)
            c.prompt_tokens += prompt_tokens
            c.completion_tokens += completion_tokens
            c.cost_usd += cost
            if latency_s is None:
                c.latency_unknown += 1
            else:
                c.call_s += latency_s

    def record_embed(self, texts: int, stage: str | None = None) -> None:
        """Intrinsic ledger: one embed() request of ``texts`` texts, cached or not."""
        stage = stage or current_stage()
        with self._lock:
            self.intrinsic[stage].embed_requests += 1
            self.intrinsic[stage].embed_texts += texts

    def totals(self) -> StageCounts:
        total = StageCounts()
        with self._lock:
            for counts in self.stages.values():
                for k, v in asdict(counts).items():
                    setattr(total, k, getattr(total, k) + v)
        return total

    def to_json(self) -> dict[str, dict[str, float]]:
        """The spend ledger per stage plus its total."""
        with self._lock:
            out = {name: asdict(c) for name, c in self.stages.items()}
        out["total"] = asdict(self.totals())
        return out

    def intrinsic_json(self) -> dict[str, dict[str, float]]:
        """The intrinsic ledger per stage plus its total."""
        with self._lock:
            out = {name: asdict(c) for name, c in self.intrinsic.items()}
        total = IntrinsicCounts()
        for counts in out.values():
            for k, v in counts.items():
                setattr(total, k, getattr(total, k) + v)
        out["total"] = asdict(total)
        return out
