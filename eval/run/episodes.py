"""Episodes in flight together: each is built, queried, answered and judged in its own thread.

Episodes are independent memory scopes, so ``run.episodes_in_flight`` of them run at once
(1 = one after another, for debugging). Every backend call of every episode goes through the
run's one LLM and embedder facades, so they share ``llm.max_in_flight``; an episode thread only
ever waits on the facade's pool, never the other way round, so nothing deadlocks. Within an
episode the order is the memory's own (MemTree inserts one unit at a time, CAM and RAPTOR batch).

Results never depend on scheduling: each episode's samples and stats are returned to the caller
in episode order (``samples.jsonl`` is ordered by episode, never by completion), every call is a
pure function of its request, and the meter keeps a ledger per episode (``Meter.scope``), so an
episode's counts (its insert batches' LLM requests, its snapshot's build cost) are its own. The
evaluation passes over all samples (closed book, judge audit) run after every episode is done.

If an episode raises (the run is aborted: a rejected key, an unwritable cache or run folder, a
bug), the budget is told to stop, so the other episodes fail their next call at once and end;
the first error is raised once they have.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from memharness.memsys.services.meter import Ledger
from omegaconf import DictConfig

log = logging.getLogger("memharness")
T = TypeVar("T")
R = TypeVar("R")


AUTO_FLOOR = (
    8  # episodes in flight at least, when derived: a one-slot backend stays busy while others embed
)


def episodes_in_flight(cfg: DictConfig) -> int:
    """``run.episodes_in_flight``; null (the default) derives it from the request budget:
    ``max(llm.max_in_flight, 8)``. A MemTree episode mostly waits on one request at a time, so
    fewer episodes than request slots leave slots idle; an explicit integer wins."""
    run = cfg.get("run") or {}
    if "episodes_in_flight" not in run:  # a config without the key (older run folders): sequential
        return 1
    value = run.get("episodes_in_flight")
    if value is not None:
        return int(value)
    return max(int((cfg.get("llm") or {}).get("max_in_flight", 1)), AUTO_FLOOR)


def in_order(
    items: Sequence[T], work: Callable[[T], R], workers: int, stop: Callable[[str], None]
) -> list[R]:
    """``[work(x) for x in items]`` with up to ``workers`` items in flight; results in item order.

    ``stop(reason)`` is called when an item raises (or on Ctrl-C) so the others wind down."""
    if workers <= 1 or len(items) <= 1:
        return [work(x) for x in items]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="episode")
    futures: list[Future] = [pool.submit(contextvars.copy_context().run, work, x) for x in items]
    try:
        results = [f.result() for f in futures]
    except KeyboardInterrupt:
        stop("interrupted")
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException as err:
        stop(f"an episode failed: {type(err).__name__}")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


def run_episodes(
    episodes: Sequence[Any],
    cfg: DictConfig,
    services: Any,
    one: Callable[[Any], tuple[list, dict]],
    on_done: Callable[[], None],
) -> tuple[list, dict[str, dict]]:
    """Run ``one(episode)`` (build, retrieve, answer, judge) for every episode, each under its own
    ledger; return every pending sample in episode order and the stats of each episode (with its
    calls per stage)."""
    meter = services.meter

    def work(episode: Any) -> tuple[list, dict]:
        ledger = Ledger()
        with meter.scope(ledger):
            pending, stats = one(episode)
        stats["calls"] = ledger.to_json()
        on_done()
        return pending, stats

    stop = services.budget.stop if services.budget is not None else (lambda reason: None)
    results = in_order(list(episodes), work, episodes_in_flight(cfg), stop)
    pending: list = []
    stats: dict[str, dict] = {}
    for episode, (episode_pending, episode_stats) in zip(episodes, results, strict=False):
        pending.extend(episode_pending)
        stats[episode.id] = episode_stats
    return pending, stats
