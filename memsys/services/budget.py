"""A run-level spending limit shared by every LLM and embedding facade of a run (``budget.*``).

Like the deadline (``deadline.py``), the budget never cuts a call in flight: once the run's spend
reaches ``budget.usd`` dollars (``llm.prices`` / ``judge.prices``) or ``budget.calls`` LLM calls
sent to a backend, every later call is refused at once with ``BudgetExceeded``. The refused calls
are recorded on their samples (status ``budget_exceeded``) and counted (``calls.*.budget_skipped``),
the run writes every file and its folder stays marked incomplete (exit status 3).

``calls`` counts calls *started*, so it is exact even with many calls in flight. ``usd`` is known
only when a reply arrives, so a run can pass it by what the calls in flight at that moment cost
(at most ``llm.max_in_flight`` calls). ``stop(reason)`` refuses every later call too: the runner
uses it to wind down the other episodes when one of them aborts the run.
"""

from __future__ import annotations

import threading

from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import BackendError, BudgetExceeded


class Budget:
    """Stop making backend calls once ``usd`` dollars or ``calls`` LLM calls are spent (None = no limit)."""

    def __init__(self, meter: Meter, usd: float | None = None, calls: int | None = None) -> None:
        self.meter, self.usd, self.calls = meter, usd, calls
        self._lock = threading.Lock()
        self._started = 0
        self.hit: str | None = None  # why calls are refused, once they are
        self._stopped: str | None = None

    @property
    def limited(self) -> bool:
        return self.usd is not None or self.calls is not None

    def check(self, what: str = "call", llm_call: bool = True) -> None:
        """Raise ``BudgetExceeded`` once the budget is spent; count an LLM call as started otherwise."""
        if self._stopped is not None:
            raise BackendError(
                f"the run is stopping ({self._stopped}); {what} not made", retryable=False
            )
        if not self.limited:
            return
        with self._lock:
            if self.hit is None:
                self.hit = self._spent()
            if self.hit is not None:
                raise BudgetExceeded(f"{self.hit}; {what} not made")
            if llm_call:
                self._started += 1

    def _spent(self) -> str | None:
        if self.calls is not None and self._started >= self.calls:
            return f"budget budget.calls={self.calls} reached"
        if self.usd is not None:
            spent = self.meter.totals().cost_usd
            if spent >= self.usd:
                return f"budget budget.usd={self.usd:g} reached (spent ${spent:.4f})"
        return None

    def stop(self, reason: str) -> None:
        """Refuse every later call (the run is ending for ``reason``)."""
        self._stopped = reason

    def describe(self) -> str:
        return self.hit or "budget not reached"
