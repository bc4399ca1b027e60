"""Stage timing that does not depend on the cache: each question's retrieval and answer, each
episode's build.

A stage's time is split in two: ``backend_s``, the latency its backend calls (chat and embedding)
had when they were made, read from the episode's intrinsic ledger (a cached reply carries the
latency measured when it was made, ``memsys/services/meter.py``), and ``compute_s``, the wall time
of the stage not spent waiting on a backend in this run (the system's own work, measured each
run). A warm rerun therefore reports the cold run's ``backend_s`` exactly, and its ``compute_s``
measured again. Backend latencies are summed over calls, so concurrent calls count in full.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

from memharness.eval.metrics.scorers import TIMING_KEY
from memharness.eval.run import failures
from memharness.memsys.services.meter import Ledger, current_scope

log = logging.getLogger("memharness")


def _read(ledger: Ledger, stage: str) -> tuple[float, float]:
    """(latency of the backend calls the method used, seconds this run waited on a backend:
    queued for a slot, in flight or backing off)."""
    used, spend = ledger.intrinsic[stage], ledger.stages[stage]
    return used.call_s + used.embed_s, spend.wait_s


@contextlib.contextmanager
def stage_time(ledger: Ledger | None, stage: str) -> Iterator[dict[str, float]]:
    """Time the block's ``stage`` work in ``ledger`` (the episode's); the yielded dict gets
    ``backend_s`` and ``compute_s`` when the block ends (stays empty without a ledger)."""
    out: dict[str, float] = {}
    if ledger is None:
        yield out
        return
    made, waited = _read(ledger, stage)
    start = time.perf_counter()
    try:
        yield out
    finally:
        wall = time.perf_counter() - start
        made_after, waited_after = _read(ledger, stage)
        out["backend_s"] = made_after - made
        out["compute_s"] = max(0.0, wall - (waited_after - waited))


def keep(record: dict[str, Any], stage: str, measured: dict[str, float]) -> None:
    """Keep one stage's timing on a sample for the latency scorer (``eval/metrics/scorers.py``)."""
    if measured:
        record.setdefault(TIMING_KEY, {})[stage] = dict(measured)


def keep_answer_call(record: dict[str, Any], latency_s: float) -> None:
    """The answer call's latency when it was made (NaN: a cached reply stored without one)."""
    if not math.isnan(latency_s):
        keep(record, "answer", {"backend_s": float(latency_s), "compute_s": 0.0})


def memory_size(memory: Any, tokenizer: Any) -> dict[str, int]:
    """What the built memory holds: its own ``size()`` (items, tokens) when it declares one, else
    its stored units and their tokens."""
    own = getattr(memory, "size", None)
    if callable(own):
        return dict(own())
    units = list(getattr(memory, "units", None) or [])
    return {"items": len(units), "tokens": sum(tokenizer.count(u.text) for u in units)}


def guarded(
    step: Callable[[], Any], meter: Any, stage: str, episode_id: str, spent: dict[str, float]
) -> str | None:
    """Run one build step under its stage, adding its compute seconds to ``spent``; return the
    error text instead of raising."""
    error = None
    with meter.stage(stage), stage_time(current_scope(), stage) as took:
        try:
            step()
        except Exception as err:
            failures.log_step_failure(log, f"building memory failed for episode {episode_id}", err)
            error = f"{type(err).__name__}: {err}"
    spent["compute_s"] += took.get("compute_s", 0.0)
    return error


def build_cost(build_s: dict[str, float]) -> dict[str, Any]:
    """The intrinsic build cost of the episode so far, its compute seconds included (stored with
    its snapshot)."""
    scope = current_scope()
    return {**asdict(scope.intrinsic["build"]), **build_s} if scope is not None else {}
