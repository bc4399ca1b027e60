"""The one chat-completion interface used everywhere in the harness.

``LLM`` wraps a backend (local llama.cpp, OpenAI-compatible HTTP, vLLM) with the
persistent call cache, a bounded number of requests in flight, retries with
exponential backoff and jitter, and per-stage accounting. A call that still
fails after its retry budget comes back as a ``Completion`` with ``error`` set;
callers record it as a failure for their sample and go on.

Concurrency: ``max_in_flight`` bounds the backend calls in flight *over every thread* that uses
the facade (a semaphore around the backend call), so episodes built concurrently share one limit;
batches go to a thread pool, single requests run in the caller's thread, and neither ever waits
on the other (no deadlock). An identical cacheable request already in flight is not sent again:
the second caller waits for the first reply and gets it as a cache hit, as it would have after
the first call had finished.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Protocol

from memharness.memsys.services.budget import Budget
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.meter import Meter, current_stage
from memharness.memsys.services.pool import ThreadPool
from memharness.memsys.services.retry import Retrier, RetryPolicy
from memharness.memsys.services.secrets import redact_text
from memharness.memsys.services.types import (
    AUTH_STATUS,
    AuthenticationFailed,
    BackendError,
    ChatRequest,
    Completion,
    Logprob,
    LogprobRequest,
    loading_apart,
)
from tqdm.auto import tqdm


def prompt_tokens_cut(completion: Completion) -> int:
    """Prompt tokens the backend cut to fit its context (``extra["prompt_tokens_cut"]``; 0: none)."""
    return int(completion.extra.get("prompt_tokens_cut") or 0)


class ChatBackend(Protocol):
    """What a backend implements: one request in, one completion out, or raise."""

    model_id: str
    max_concurrency: int | None  # a hard cap of the backend itself (None = no cap)

    def chat(self, request: ChatRequest) -> Completion: ...


class LLM:
    """Cached, concurrent, retrying, metered access to a chat backend."""

    def __init__(
        self,
        backend: ChatBackend,
        meter: Meter | None = None,
        cache: CallCache | None = None,
        max_in_flight: int = 8,
        retry: RetryPolicy | None = None,
        progress: bool = True,
        progress_min_batch: int = 8,
        deadline: Deadline | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.backend = backend
        self.deadline = deadline
        self.budget = budget
        self.meter = meter or Meter()
        self.cache = cache
        cap = backend.max_concurrency
        self.max_in_flight = max(1, min(max_in_flight, cap) if cap else max_in_flight)
        self.retry = retry or RetryPolicy()
        self.progress = progress
        self.progress_min_batch = progress_min_batch
        self._retrier = Retrier(self.retry, self.meter, deadline, budget, "chat call")
        self._pool = ThreadPool(self.max_in_flight)
        self._slots = threading.BoundedSemaphore(
            self.max_in_flight
        )  # backend calls in flight, all threads
        self._pending: dict[
            str, Future
        ] = {}  # cache key -> the reply of an identical request in flight
        self._pending_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def slots(self) -> threading.BoundedSemaphore:
        """The backend calls in flight over every thread (``max_in_flight``), shareable with an
        embedder that calls the same server."""
        return self._slots

    def complete(
        self, requests: Sequence[ChatRequest], desc: str | None = None
    ) -> list[Completion]:
        """Answer a batch of requests, at most ``max_in_flight`` at a time, in order."""
        stage = current_stage()
        if len(requests) == 1:
            return [self._one(requests[0], stage)]
        # the cache's replies in one query, served here: a warm batch needs no thread at all
        keys = [
            r.cache_key(self.model_id) if self.cache is not None and r.cacheable else None
            for r in requests
        ]
        hits = self.cache.get_chats([k for k in keys if k]) if self.cache is not None else {}
        bar = None
        if self.progress and len(requests) >= self.progress_min_batch:
            bar = tqdm(
                total=len(requests), desc=desc or stage, leave=False, disable=None
            )  # None: off when not a TTY
        # each request runs in a copy of the caller's context: the meter's per-episode scope follows it
        futures = [
            None
            if key in hits
            else self._pool.submit(contextvars.copy_context().run, self._one, r, stage)
            for r, key in zip(requests, keys, strict=True)
        ]
        results = []
        for fut, key in zip(futures, keys, strict=True):
            results.append(self._hit(hits[key], stage) if fut is None else fut.result())
            if bar is not None:
                bar.update(1)
                t = self.meter.stages[stage]
                bar.set_postfix(calls=t.calls, hits=t.cache_hits, failed=t.failures, refresh=False)
        if bar is not None:
            bar.close()
        return results

    def complete_one(self, request: ChatRequest) -> Completion:
        return self._one(request, current_stage())

    def _one(self, request: ChatRequest, stage: str) -> Completion:
        key = (
            request.cache_key(self.model_id)
            if self.cache is not None and request.cacheable
            else None
        )
        if key is None:
            return self._call_and_keep(request, stage, None)
        hit = self.cache.get_chat(key)
        if hit is not None:
            return self._hit(hit, stage)
        with self._pending_lock:
            first = self._pending.get(key)
            if first is None:
                mine: Future = Future()
                self._pending[key] = mine
        if first is not None:  # the same request is in flight: its reply, once, as a cache hit
            waiting = time.perf_counter()
            reply = first.result()
            self.meter.add(stage, wait_s=time.perf_counter() - waiting)
            if reply.ok:
                return self._served(
                    Completion(
                        text=reply.text,
                        prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens,
                        cached=True,
                        extra=dict(reply.extra),
                    ),
                    reply.latency_s,
                    stage,
                )
            return self._call_and_keep(request, stage, key)  # failures are not shared: try again
        try:
            completion = self._call_and_keep(request, stage, key)
            mine.set_result(completion)
            return completion
        except BaseException as err:
            mine.set_result(Completion(text="", error=f"{type(err).__name__}: {err}"))
            raise
        finally:
            with self._pending_lock:
                self._pending.pop(key, None)

    def _hit(self, hit: dict, stage: str) -> Completion:
        """A reply from the cache."""
        return self._served(
            Completion(
                text=hit["text"],
                prompt_tokens=hit.get("prompt_tokens", 0),
                completion_tokens=hit.get("completion_tokens", 0),
                cached=True,
                extra=dict(hit.get("extra") or {}),
            ),
            hit.get("latency_s"),
            stage,
        )

    def _served(self, completion: Completion, latency_s: float | None, stage: str) -> Completion:
        """A reply the method used without a backend call (the cache, or an identical call in flight);
        its ``latency_s`` is the one measured when it was made (NaN: stored before latencies were)."""
        completion.latency_s = float("nan") if latency_s is None else float(latency_s)
        self.meter.add(stage, cache_hits=1)
        self.meter.record_reply(
            self.model_id,
            completion.prompt_tokens,
            completion.completion_tokens,
            True,
            latency_s,
            stage,
            prompt_tokens_cut(completion),
        )
        return completion

    def _call_and_keep(self, request: ChatRequest, stage: str, key: str | None) -> Completion:
        completion = self._call_with_retries(request, stage)
        if completion.ok:  # the intrinsic ledger: what the method used, cached or not
            self.meter.record_reply(
                self.model_id,
                completion.prompt_tokens,
                completion.completion_tokens,
                False,
                completion.latency_s,
                stage,
                prompt_tokens_cut(completion),
            )
        if completion.ok and key is not None:
            self.cache.put_chat(
                key,
                self.model_id,
                {
                    "text": completion.text,
                    "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens,
                    "latency_s": completion.latency_s,
                    "extra": completion.extra,
                },
            )
        return completion

    def _call_with_retries(self, request: ChatRequest, stage: str) -> Completion:
        """Send through the shared retry loop; a call that still fails comes back with ``error``."""
        loads: list[float] = []
        try:
            completion, attempts, elapsed = self._retrier.send(
                lambda: loading_apart(self.backend, lambda: self.backend.chat(request), loads),
                stage,
                self._slots,
            )
        except BackendError as err:
            return Completion(
                text="", error=f"{type(err).__name__}: {err}", attempts=getattr(err, "attempts", 1)
            )
        completion.attempts = attempts
        # the reply's latency leaves out loading weights on first use (metrics.json model_load_s)
        completion.latency_s = max(0.0, elapsed - loads[-1])
        # a key the server echoed never enters memory, the cache or a later prompt
        completion.text = redact_text(completion.text)
        self.meter.add(
            stage,
            calls=1,
            backend_s=elapsed,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )
        cut = prompt_tokens_cut(completion)
        if cut:  # the backend cut the prompt to fit its context: counted in every stage
            self.meter.add(stage, prompt_cuts=1, prompt_tokens_cut=cut)
        self.meter.add_llm_cost(
            self.model_id, completion.prompt_tokens, completion.completion_tokens, stage
        )
        return completion

    @property
    def supports_logprobs(self) -> bool:
        """True when the backend can score prompt tokens (``backend.logprob``)."""
        return callable(getattr(self.backend, "logprob", None))

    def logprobs(self, requests: Sequence[LogprobRequest]) -> list[Logprob]:
        """Score each request's text after its prefix, through the cache; failures come back with ``error``."""
        if not self.supports_logprobs:
            raise BackendError(f"backend {self.model_id} does not expose prompt log-probabilities")
        stage = current_stage()
        futures = [
            self._pool.submit(contextvars.copy_context().run, self._logprob_one, r, stage)
            for r in requests
        ]
        return [f.result() for f in futures]

    def _logprob_one(self, request: LogprobRequest, stage: str) -> Logprob:
        key = request.cache_key(self.model_id) if self.cache is not None else None
        if key is not None:
            hit = self.cache.get_chat(key)
            if hit is not None:
                self.meter.add(stage, cache_hits=1)
                self.meter.record_reply(
                    self.model_id, hit["tokens"], 0, True, hit.get("latency_s"), stage
                )
                return Logprob(logprob=hit["logprob"], tokens=hit["tokens"], cached=True)
        start = time.perf_counter()
        try:
            if self.deadline is not None:
                self.deadline.check("log-probability call")
            if self.budget is not None:
                self.budget.check("log-probability call")
            with self._slots, self.meter.in_flight():
                total, tokens = self.backend.logprob(request)
        except BackendError as err:
            waited = time.perf_counter() - start
            self.meter.add(stage, failures=1, backend_s=waited, wait_s=waited)
            if err.status in AUTH_STATUS:
                raise AuthenticationFailed(f"authentication failed: {err}") from None
            return Logprob(error=f"{type(err).__name__}: {err}")
        elapsed = time.perf_counter() - start
        self.meter.add(stage, calls=1, backend_s=elapsed, wait_s=elapsed, prompt_tokens=tokens)
        self.meter.record_reply(self.model_id, tokens, 0, False, elapsed, stage)
        if key is not None:
            self.cache.put_chat(
                key, self.model_id, {"logprob": total, "tokens": tokens, "latency_s": elapsed}
            )
        return Logprob(logprob=total, tokens=tokens)

    def close(self) -> None:
        self._pool.shutdown()
