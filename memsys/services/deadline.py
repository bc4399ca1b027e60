"""A run-level deadline shared by the LLM and embedding facades and the HTTP backends.

Once it has passed, no new backend call is made: the facades fail each call at once with a
``DeadlineExceeded`` error (recorded on its sample and counted like any failed call), HTTP
requests in flight are cut at the deadline, and backoff sleeps never outlast it. So a run
against a server that never answers ends close to ``eval.deadline_s`` with every sample
recorded, and the run folder stays marked incomplete.
"""

from __future__ import annotations

import time

from memharness.memsys.services.types import DeadlineExceeded


class Deadline:
    """``seconds`` from now (None = no deadline)."""

    def __init__(self, seconds: float | None = None, setting: str = "eval.deadline_s") -> None:
        self.seconds = seconds
        self.setting = setting
        self.at = time.monotonic() + seconds if seconds is not None else None
        self.hit = False  # set once a call was refused

    def remaining(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def check(self, what: str = "call") -> None:
        """Raise ``DeadlineExceeded`` if the deadline has passed."""
        if self.expired:
            self.hit = True
            raise DeadlineExceeded(
                f"run deadline {self.setting}={self.seconds:g} s reached; {what} not made"
            )

    def cap(self, timeout_s: float) -> float:
        """A per-request timeout that ends no later than the deadline."""
        left = self.remaining()
        return timeout_s if left is None else max(0.05, min(timeout_s, left))

    def describe(self) -> str:
        return f"deadline {self.setting}={self.seconds:g} s reached"
