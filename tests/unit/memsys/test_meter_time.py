"""Honest time accounting: busy time is the union of calls in flight; per-episode ledgers stay apart."""

from __future__ import annotations

import threading
import time

from memharness.memsys.services.meter import Ledger, Meter


def _call(meter: Meter, seconds: float, start: threading.Event) -> None:
    start.wait()
    with meter.stage("build"), meter.in_flight():
        time.sleep(seconds)
        meter.add(backend_s=seconds, calls=1)


def test_busy_time_counts_overlapping_calls_once_and_stage_wall_time_too():
    meter, start = Meter(), threading.Event()
    threads = [threading.Thread(target=_call, args=(meter, 0.3, start)) for _ in range(4)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    start.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    busy, summed = meter.busy_s(), meter.stages["build"].backend_s
    assert (
        summed == 1.2 and 0.3 <= busy <= wall + 1e-6 and busy < summed
    )  # side by side: not 1.2 s of waiting
    assert meter.peak_in_flight == 4 and meter.stages["build"].calls == 4
    assert (
        0.3 <= meter.stages["build"].wall_s <= wall + 1e-6
    )  # four threads in the stage: counted once


def test_scoped_ledgers_receive_only_their_own_threads_counts():
    meter = Meter()
    ledgers = [Ledger(), Ledger()]

    def work(ledger: Ledger, n: int) -> None:
        with meter.scope(ledger), meter.stage("answer"):
            for _ in range(n):
                meter.add(calls=1)
            meter.record_reply("m", 10, 2, False, 0.1)

    threads = [
        threading.Thread(target=work, args=(ledger, n))
        for ledger, n in zip(ledgers, (3, 5), strict=False)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [l.stages["answer"].calls for l in ledgers] == [3, 5] and meter.stages[
        "answer"
    ].calls == 8
    assert [l.intrinsic["answer"].calls for l in ledgers] == [1, 1] and meter.intrinsic[
        "answer"
    ].calls == 2
