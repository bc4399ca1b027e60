"""The one retry loop of the harness, shared by chat (``LLM``) and embedding (``Embedder``) calls.

A call that raises a retryable ``BackendError`` is sent again after exponential backoff with full
jitter (a server's Retry-After a floor); a 401/403 aborts the run (``AuthenticationFailed``); a
passed deadline or a spent budget fails the call at once, without a request. Every attempt's time
in flight, every retry and the final failure are counted on the meter under the caller's stage and
counter names, so the meter sees every attempt.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from memharness.memsys.services.budget import Budget
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import (
    AUTH_STATUS,
    AuthenticationFailed,
    BackendError,
    BudgetExceeded,
    DeadlineExceeded,
)
from memharness.memsys.settings import Range

T = TypeVar("T")


@dataclass
class RetryPolicy:
    """``llm.retry``: retries after the first attempt, with exponential backoff and full jitter."""

    max_retries: Annotated[int, Range(0)] = 5
    base_delay_s: Annotated[float, Range(0)] = 0.5
    max_delay_s: Annotated[float, Range(0)] = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; a server's Retry-After is a floor."""
        backoff = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        wait = rng.uniform(0, backoff)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay_s))
        return wait


@dataclass
class Retrier:
    """What one facade needs to send with retries: its policy, guards and a seeded jitter source."""

    policy: RetryPolicy
    meter: Meter
    deadline: Deadline | None = None
    budget: Budget | None = None
    what: str = "chat call"  # names the call in deadline / budget messages
    llm_call: bool = True  # counts against the budget's LLM-call limit
    retries_counter: str = "retries"
    failures_counter: str = "failures"
    _rng: random.Random = field(default_factory=lambda: random.Random(0))
    _rng_lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, call: Callable[[], T], stage: str, slot: Any) -> tuple[T, int, float]:
        """Run ``call`` inside ``slot`` (a concurrency limit) until it succeeds; returns the result,
        the number of attempts and the seconds in flight of the last one. A call that still fails
        raises its last ``BackendError`` with ``attempts`` set, after counting the failure."""
        attempt, entered = 0, time.perf_counter()
        try:
            return self._attempts(call, stage, slot, attempt)
        finally:  # queued for a slot, in flight, backing off: the caller waited on a backend
            self.meter.add(stage, wait_s=time.perf_counter() - entered)

    def _attempts(
        self, call: Callable[[], T], stage: str, slot: Any, attempt: int
    ) -> tuple[T, int, float]:
        """``send``'s loop: each attempt in a slot, a retryable failure retried after its wait."""
        while True:
            start = time.perf_counter()
            try:
                self._check_guards()
                with slot, self.meter.in_flight():
                    start = time.perf_counter()  # time in flight, not waiting for a slot
                    result = call()
                return result, attempt + 1, time.perf_counter() - start
            except BackendError as err:
                self.meter.add(stage, backend_s=time.perf_counter() - start)
                if err.status in AUTH_STATUS:
                    self.meter.add(stage, **{self.failures_counter: 1})
                    raise AuthenticationFailed(f"authentication failed: {err}") from None
                if not err.retryable or attempt >= self.policy.max_retries:
                    self.meter.add(
                        stage,
                        **{self.failures_counter: 1},
                        deadline_skipped=int(isinstance(err, DeadlineExceeded)),
                        budget_skipped=int(isinstance(err, BudgetExceeded)),
                    )
                    err.attempts = attempt + 1
                    raise
                self.meter.add(stage, **{self.retries_counter: 1})
                time.sleep(self._wait(attempt, err.retry_after))
                attempt += 1

    def _check_guards(self) -> None:
        if self.deadline is not None:
            self.deadline.check(self.what)
        if self.budget is not None:
            self.budget.check(self.what, llm_call=self.llm_call)

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        with self._rng_lock:
            wait = self.policy.delay(attempt, self._rng, retry_after)
        left = self.deadline.remaining() if self.deadline is not None else None
        return wait if left is None else min(wait, max(0.0, left))
