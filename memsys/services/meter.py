"""Per-stage accounting of backend calls: build, retrieve, answer, judge (and the evaluation extras).

Two ledgers per stage:
- **spend** (``StageCounts``, ``Meter.to_json``): what this run actually sent to a backend; a cache
  hit costs nothing here. It depends on what earlier runs left in the cache.
- **intrinsic** (``IntrinsicCounts``, ``Meter.intrinsic_json``): what the method costs whether or not
  the cache served it: every LLM reply it used with its prompt / completion tokens and estimated
  dollars (cached replies carry their token counts and the latency measured when they were made),
  every text it embedded. A warm rerun reports the same intrinsic cost as the cold run. A memory
  loaded from a snapshot adds the build cost stored with it (``add_intrinsic``; ``snapshot_served``).
- both count prompt cuts: ``prompt_cuts`` (replies whose prompt a backend cut to fit its context,
  ``Completion.extra["prompt_tokens_cut"]``, e.g. llama.cpp's) and ``prompt_tokens_cut`` (the tokens
  removed), per stage, so a cut in any call of any stage shows in metrics.json.

Concurrency: the stage is a context variable, so each episode thread sets its own; ``scope`` adds a
per-episode ledger (both ledgers again, for one episode) that every count made inside it also
reaches, pool threads included (the LLM facade copies the caller's context). ``in_flight`` wraps
each backend call: the meter knows how long at least one call was in flight (``busy_s``), so the
time with none in flight and the achieved concurrency are measured, not inferred. A stage's
``wall_s`` is the time at least one thread was inside that stage (overlaps counted once).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

# closed_book and audit hold the evaluation extras (closed-book pass, judge reliability), so the
# method's own cost (build, retrieve, answer) and the judge's stay comparable with and without them.
STAGES = ("build", "retrieve", "answer", "judge", "closed_book", "audit", "other")
_current_stage: contextvars.ContextVar[str] = contextvars.ContextVar(
    "memharness_stage", default="other"
)


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
    embed_failures: int = (
        0  # embedding requests that failed for good (the step that needed them failed)
    )
    embed_invalid: int = 0  # embedding replies refused: NaN/inf, wrong dimension or count (retried)
    deadline_skipped: int = (
        0  # calls refused because the run's deadline had passed (also in failures)
    )
    budget_skipped: int = 0  # calls refused because the run's budget was spent (also in failures)
    prompt_cuts: int = 0  # backend calls whose prompt the backend cut to fit its context
    prompt_tokens_cut: int = 0  # prompt tokens those cuts removed
    backend_s: float = 0.0  # time spent waiting on the backend (sum over calls)
    # time callers spent inside backend requests: queued for a slot, in flight, backing off
    # between retries (sum over requests); a stage's compute is its wall time less this
    wait_s: float = 0.0
    wall_s: float = 0.0  # wall time with at least one thread inside the stage (``Meter.stage``)
    cost_usd: float = 0.0


@dataclass
class IntrinsicCounts:
    """The method's own cost in one stage, independent of the cache."""

    calls: int = 0  # LLM replies used (from the backend or the cache)
    cache_served: int = 0  # of those, served by the cache
    snapshot_served: int = 0  # of those, not made at all: the memory was loaded from a snapshot
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    call_s: float = 0.0  # backend latency when each reply was produced (summed; not wall time)
    latency_unknown: int = 0  # cached replies stored before latencies were recorded
    embed_requests: int = 0  # embed() calls with at least one text
    embed_texts: int = 0  # texts embedded (repeats included: the method asked for them)
    # embedding latency when each vector was made (a batch's time shared equally by its texts;
    # cached vectors carry theirs), so a warm rerun reports the cold run's embedding time
    embed_s: float = 0.0
    embed_latency_unknown: int = 0  # cached vectors stored before their latency was recorded
    prompt_cuts: int = 0  # replies used whose prompt the backend cut to fit its context
    prompt_tokens_cut: int = 0  # prompt tokens those cuts removed


@dataclass
class Ledger:
    """Both ledgers for a part of a run (one episode): what ``Meter.scope`` collects."""

    stages: dict[str, StageCounts] = field(
        default_factory=lambda: {s: StageCounts() for s in STAGES}
    )
    intrinsic: dict[str, IntrinsicCounts] = field(
        default_factory=lambda: {s: IntrinsicCounts() for s in STAGES}
    )

    def requests(self, stage: str) -> int:
        """LLM requests of ``stage`` (answered by the backend or the cache)."""
        return self.stages[stage].calls + self.stages[stage].cache_hits

    def to_json(self, stages: tuple[str, ...] = STAGES) -> dict[str, Any]:
        """The stages that saw any request: spend and intrinsic counts."""
        out = {}
        for s in stages:
            spend, used = asdict(self.stages[s]), asdict(self.intrinsic[s])
            if any(spend.values()) or any(used.values()):
                out[s] = {"spend": spend, "intrinsic": used}
        return out


_current_scope: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar(
    "memharness_scope", default=None
)


def current_scope() -> Ledger | None:
    """The per-episode ledger of the calling context (``Meter.scope``), if any."""
    return _current_scope.get()


class Meter:
    """Thread-safe counters per stage plus stage wall time: the spend and the intrinsic ledger."""

    def __init__(self, prices: dict[str, dict[str, float]] | None = None) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, StageCounts] = {s: StageCounts() for s in STAGES}
        self.intrinsic: dict[str, IntrinsicCounts] = {s: IntrinsicCounts() for s in STAGES}
        self.prices = prices or {}
        self._inside: dict[str, int] = {s: 0 for s in STAGES}  # threads inside each stage
        self._entered: dict[str, float] = {s: 0.0 for s in STAGES}
        self._calls_in_flight, self._busy_since, self._busy_s, self.peak_in_flight = 0, 0.0, 0.0, 0

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Attribute backend calls made inside the block to ``name`` and time it (in this thread)."""
        if name not in self.stages:
            raise ValueError(f"unknown stage {name!r}; expected one of {STAGES}")
        token = _current_stage.set(name)
        with self._lock:
            self._inside[name] += 1
            if self._inside[name] == 1:
                self._entered[name] = time.perf_counter()
        try:
            yield
        finally:
            _current_stage.reset(token)
            with self._lock:
                self._inside[name] -= 1
                if self._inside[name] == 0:
                    self.stages[name].wall_s += time.perf_counter() - self._entered[name]

    @contextlib.contextmanager
    def scope(self, ledger: Ledger) -> Iterator[Ledger]:
        """Count everything made inside the block (in this thread and the pool threads it uses) in
        ``ledger`` too, besides the run's ledgers."""
        token = _current_scope.set(ledger)
        try:
            yield ledger
        finally:
            _current_scope.reset(token)

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Wrap one backend call: the time with at least one call in flight is measured."""
        with self._lock:
            if self._calls_in_flight == 0:
                self._busy_since = time.perf_counter()
            self._calls_in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._calls_in_flight)
        try:
            yield
        finally:
            with self._lock:
                self._calls_in_flight -= 1
                if self._calls_in_flight == 0:
                    self._busy_s += time.perf_counter() - self._busy_since

    def busy_s(self) -> float:
        """Seconds during which at least one backend call was in flight."""
        with self._lock:
            extra = time.perf_counter() - self._busy_since if self._calls_in_flight else 0.0
            return self._busy_s + extra

    def add(self, stage: str | None = None, **deltas: float) -> None:
        stage = stage or current_stage()
        scope = _current_scope.get()
        with self._lock:
            for counts in (self.stages[stage], scope.stages[stage] if scope is not None else None):
                if counts is None:
                    continue
                for k, v in deltas.items():
                    setattr(counts, k, getattr(counts, k) + v)

    def price(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Estimated USD of one call; 0 for a model without a price."""
        # "openai:gpt-4o-mini@1a2b3c4d" is priced as "openai:gpt-4o-mini" (the suffix is a settings hash)
        price = self.prices.get(model) or self.prices.get(model.split("@")[0])
        if not price:
            return 0.0
        return (
            prompt_tokens * price.get("prompt", 0.0)
            + completion_tokens * price.get("completion", 0.0)
        ) / 1e6

    def add_llm_cost(
        self, model: str, prompt_tokens: int, completion_tokens: int, stage: str | None = None
    ) -> None:
        cost = self.price(model, prompt_tokens, completion_tokens)
        if cost:
            self.add(stage, cost_usd=cost)

    def record_reply(
        self,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cached: bool,
        latency_s: float | None,
        stage: str | None = None,
        prompt_tokens_cut: int = 0,
    ) -> None:
        """Intrinsic ledger: one LLM reply the method used, whether the backend or the cache gave it;
        ``prompt_tokens_cut`` > 0 when the backend cut its prompt to fit (counted as a cut)."""
        stage = stage or current_stage()
        cost = self.price(model, prompt_tokens, completion_tokens)
        with self._lock:
            for c in self._intrinsic_targets(stage):
                c.calls += 1
                c.cache_served += int(cached)
                c.prompt_tokens += prompt_tokens
                c.completion_tokens += completion_tokens
                c.cost_usd += cost
                c.prompt_cuts += int(prompt_tokens_cut > 0)
                c.prompt_tokens_cut += prompt_tokens_cut
                if latency_s is None:
                    c.latency_unknown += 1
                else:
                    c.call_s += latency_s

    def _intrinsic_targets(self, stage: str) -> list[IntrinsicCounts]:
        scope = _current_scope.get()
        return [self.intrinsic[stage]] + ([scope.intrinsic[stage]] if scope is not None else [])

    def add_intrinsic(self, stage: str, counts: dict[str, Any]) -> None:
        """Intrinsic ledger: the cost of work loaded instead of done (a memory snapshot's build,
        stored with it); its LLM replies count as ``snapshot_served``."""
        with self._lock:
            for c in self._intrinsic_targets(stage):
                for k, v in counts.items():
                    if k in ("cache_served", "snapshot_served") or not hasattr(c, k):
                        continue
                    setattr(c, k, getattr(c, k) + v)
                c.snapshot_served += int(counts.get("calls", 0))

    def record_embed(
        self, texts: int, stage: str | None = None, latency_s: float = 0.0, unknown: int = 0
    ) -> None:
        """Intrinsic ledger: one embed() request of ``texts`` texts, cached or not; ``latency_s``
        the time its vectors took when made, ``unknown`` how many vectors have no recorded time."""
        stage = stage or current_stage()
        with self._lock:
            for c in self._intrinsic_targets(stage):
                c.embed_requests += 1
                c.embed_texts += texts
                c.embed_s += latency_s
                c.embed_latency_unknown += unknown

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
