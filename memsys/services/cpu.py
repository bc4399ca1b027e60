"""The run's process pool for CPU-bound steps (clustering, community detection, PageRank).

Episodes run as threads, so a numpy/numba step that holds the interpreter (RAPTOR's UMAP +
mixtures: ~80 s of CPU per LongMemEval-S haystack) runs on one core however many the machine has.
``cpu_pool(workers)`` opens one pool for the whole run (``run.cpu_workers``; the runner opens it
and closes it on every exit path); a memory sends a step there with ``run_cpu(fn, *args)``, where
``fn`` is a module-level function and ``args`` are plain arrays and settings (picklable: never the
memory object). With one worker, or with no pool open (tests, notebooks), ``fn`` runs in the
calling thread: the same function on the same inputs, so the results are the same either way.
``run_cpu_many(fn, calls)`` sends independent steps at once (RAPTOR's local clusterings of one
layer, the mixture fits of a BIC sweep) and returns their results in the order of ``calls``; a
step running in a worker has no pool open there, so whatever it spreads runs in that worker.

Workers are started with ``spawn`` (no fork of a process with running threads) and only when the
first step is submitted, so a run whose memory has no such step starts no process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def machine_cores() -> int:
    """The cores this process may run on (its affinity where the OS says, else the CPU count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class CpuPool:
    """Up to ``workers`` processes running submitted steps; 1 worker = in the calling thread."""

    def __init__(self, workers: int | None = None) -> None:
        workers = machine_cores() if workers is None else int(workers)
        if workers < 1:
            raise ValueError(f"run.cpu_workers must be >= 1 or null, got {workers}")
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.steps = 0  # steps run, in a worker or in the calling thread

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker process (in this thread when the pool has one worker)."""
        return self.run_many(fn, [args])[0]

    def run_many(self, fn: Callable[..., T], calls: Sequence[Sequence[Any]]) -> list[T]:
        """``[fn(*args) for args in calls]``, the calls spread over the workers; results in order."""
        with self._lock:
            self.steps += len(calls)
        if self.workers == 1:
            return in_thread(fn, calls)
        with self._lock:
            if self._closed:
                raise RuntimeError("the CPU pool is closed")
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn")
                )
            executor = self._executor
        futures = [executor.submit(fn, *args) for args in calls]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the workers (steps not started are cancelled); later ``run`` calls raise."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


_active: CpuPool | None = None


@contextlib.contextmanager
def cpu_pool(workers: int | None = None) -> Iterator[CpuPool]:
    """Open the run's pool (``workers``: None = the machine's cores); closed when the block exits."""
    global _active
    pool = CpuPool(workers)
    previous, _active = _active, pool
    try:
        yield pool
    finally:
        _active = previous
        pool.close()


def run_cpu(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the open pool; in this thread when none is open."""
    pool = _active
    return fn(*args) if pool is None else pool.run(fn, *args)


def run_cpu_many(fn: Callable[..., T], calls: Sequence[Sequence[Any]]) -> list[T]:
    """``fn(*args)`` for every ``args`` of ``calls``, at once in the open pool (in this thread when
    none is open); results in the order of ``calls``."""
    pool = _active
    return in_thread(fn, calls) if pool is None else pool.run_many(fn, calls)


def cpu_workers() -> int:
    """The open pool's workers (1 when none is open): how many parts a step may split into."""
    pool = _active
    return 1 if pool is None else pool.workers


def in_thread(fn: Callable[..., T], calls: Sequence[Sequence[Any]]) -> list[T]:
    """``[fn(*args) for args in calls]`` in this thread (``run_cpu_many``'s signature)."""
    return [fn(*args) for args in calls]
