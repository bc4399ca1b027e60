"""A thread pool whose ``submit`` never waits for a new thread to start.

``concurrent.futures.ThreadPoolExecutor`` starts each worker with ``threading.Thread.start``, which
blocks the submitting thread until the new thread has run (a handshake of two context switches,
far more under load): a batch of 1,520 requests to a backend with 4,096 slots spent about a second
starting threads one after the other before its last request went out. Here workers are started
with ``_thread.start_new_thread`` (no handshake) and a new worker, once running, starts the next
one owed: a few chains of starts run side by side and the submitter queues its batch at once.
Starting them all at once instead makes hundreds of threads fight for the GIL (each waking every
few milliseconds to ask for it), which costs far more CPU than it saves. Workers are reused and
live until ``shutdown``.

``switch_interval`` sets the interpreter's GIL switch interval for a run: every thread waiting for the
GIL wakes once per interval, so when hundreds of request threads get their replies together the
default 5 ms turns into a storm of wake-ups (measured: 1,520 replies to 600-word prompts took 4.6 s
wall and 7 s CPU at 5 ms, 1.6 s and 1.1 s CPU at 50 ms).
"""

from __future__ import annotations

import _thread
import contextlib
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

_STOP = object()
STARTING_AT_ONCE = 16  # threads started but not yet running, at most (chains of starts); with the
# run's 50 ms switch interval, 16 chains started 1,520 threads in 0.45 s, 1 or 4 chains in 0.47-0.63 s


class ThreadPool:
    """At most ``max_workers`` threads running submitted calls; an idle worker is reused."""

    def __init__(self, max_workers: int) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0  # threads started
        self._idle = 0  # of those, waiting for work (or about to)
        self._owed = 0  # workers wanted by queued work, not started yet
        self._starting = 0  # started, not yet running
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` on a worker; its result or exception comes back through the future."""
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a pool that was shut down")
            if self._idle > 0:
                self._idle -= 1  # that worker takes this item
            elif self._workers + self._owed < self.max_workers:
                self._owed += 1
            self._queue.put((future, fn, args))
            self._start_owed()
        return future

    def _start_owed(self) -> None:
        """Start owed workers, at most ``STARTING_AT_ONCE`` not yet running (call under the lock)."""
        while self._owed > 0 and self._starting < STARTING_AT_ONCE and not self._closed:
            self._owed -= 1
            self._starting += 1
            self._workers += 1
            _thread.start_new_thread(self._work, ())

    def _work(self) -> None:
        with self._lock:
            self._starting -= 1
            self._start_owed()  # the next link of this chain of starts
        while True:
            item = self._queue.get()
            if item is _STOP:  # passed on, so the workers wake one after the other, not all at once
                self._queue.put(_STOP)
                return
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as err:  # the caller gets it from the future
                    future.set_exception(err)
                else:
                    future.set_result(result)
            del item, future, fn, args
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        """Cancel the queued calls and stop every worker once its current call ends; no waiting."""
        with self._lock:
            self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                item[0].cancel()
        self._queue.put(_STOP)


@contextlib.contextmanager
def switch_interval(seconds: float | None) -> Iterator[None]:
    """Run the block with ``sys.setswitchinterval(seconds)`` (None: unchanged); restore it after."""
    previous = sys.getswitchinterval()
    if seconds is not None:
        sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)
