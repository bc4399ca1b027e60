"""Progress a person can see: a live bar on a terminal, plain periodic log lines everywhere else.

A run reports, for the phase in progress, how many episodes are done and how many backend calls
were made, served by the cache and failed. Episodes run from first insert to verdict (build,
retrieve, answer, judge; several at once with ``run.episodes_in_flight``), so the episode phase
counts the calls of all four stages; the evaluation passes over every sample (closed book, judge
audit) follow as stages of their own. On a terminal a tqdm bar over the episodes shows this
live; whether or not there is one, a background thread writes the same figures as a log line
every ``interval_s`` seconds (to ``run.log`` and the console, so a batch scheduler's log shows
progress too), and one line when each stage starts and ends. No stage stays silent longer than
the interval.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

from memharness.memsys.services.meter import Meter

log = logging.getLogger("memharness.progress")
EPISODE_STAGES = ("build", "retrieve", "answer", "judge")


class Progress:
    """Episode and call progress of one run, read from the run's meter."""

    def __init__(
        self, meter: Meter, episodes: int, interval_s: float = 10.0, bar: bool = True
    ) -> None:
        self.meter, self.episodes, self.interval_s = meter, episodes, float(interval_s)
        self.done = 0
        self.stage = "episodes"  # the episode phase: build, retrieve, answer, judge
        self._lock = threading.Lock()
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        if bar and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=episodes, desc="episodes", unit="episode", leave=False)

    def line(self) -> str:
        stages = EPISODE_STAGES if self.stage == "episodes" else (self.stage,)
        counts = [self.meter.stages[s] for s in stages]
        calls, hits, failed, embeds = (
            sum(getattr(c, k) for c in counts)
            for k in ("calls", "cache_hits", "failures", "embed_calls")
        )
        where = f"episodes {self.done}/{self.episodes}" if self.stage == "episodes" else "questions"
        return (
            f"progress {'+'.join(stages)}: {where} · {calls} LLM calls, {hits} cached, {failed} failed, "
            f"{embeds} embedding requests · {time.perf_counter() - self._started:.0f} s"
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            log.info(self.line())

    def start(self) -> Progress:
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._beat, name="progress", daemon=True)
            self._thread.start()
        return self

    def set_stage(self, stage: str) -> None:
        """Log the end of the previous stage and the start of ``stage``."""
        log.info(self.line() + " (done)")
        self.stage = stage
        log.info(f"progress {stage}: started")
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def episode_done(self) -> None:
        """One more episode answered and judged (called from the episode threads)."""
        with self._lock:
            self.done += 1
            if self._bar is not None:
                c = self.meter.stages["build"]
                self._bar.set_postfix(
                    calls=c.calls, hits=c.cache_hits, failed=c.failures, refresh=False
                )
                self._bar.update(1)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._bar is not None:
            self._bar.close()
        log.info(self.line() + " (done)")
