"""The LLM facade's thread pool: bounded workers, reuse, results and errors, shutdown."""

import threading
import time

import pytest
from memharness.memsys.services.pool import ThreadPool


def test_results_come_back_in_their_futures_and_errors_are_raised_there():
    pool = ThreadPool(4)
    futures = [pool.submit(lambda x: x * x, i) for i in range(50)]
    bad = pool.submit(lambda: 1 / 0)
    assert [f.result(timeout=10) for f in futures] == [i * i for i in range(50)]
    with pytest.raises(ZeroDivisionError):
        bad.result(timeout=10)
    pool.shutdown()


def test_no_more_than_max_workers_run_at_once_and_all_of_them_are_used():
    pool, lock, running, peak = ThreadPool(8), threading.Lock(), [0], [0]

    def work() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    for f in [pool.submit(work) for _ in range(64)]:
        f.result(timeout=30)
    assert peak[0] == 8
    assert pool._workers == 8
    pool.shutdown()


def test_idle_workers_are_reused_rather_than_new_ones_started():
    pool = ThreadPool(16)
    for _ in range(20):
        pool.submit(time.sleep, 0).result(timeout=10)  # one at a time: one worker suffices
    assert pool._workers <= 2  # the first, and at most one started before it was idle again
    pool.shutdown()


def test_shutdown_cancels_queued_calls_and_refuses_new_ones():
    pool, started, gate = ThreadPool(1), threading.Event(), threading.Event()
    first = pool.submit(lambda: started.set() or gate.wait(10))
    assert started.wait(10)
    queued = [pool.submit(time.sleep, 0) for _ in range(5)]
    pool.shutdown()
    gate.set()
    assert first.result(timeout=10) is True
    assert all(f.cancelled() for f in queued)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(time.sleep, 0)


def test_switch_interval_is_set_for_the_block_and_restored_after_an_error():
    import sys

    from memharness.memsys.services.pool import switch_interval

    before = sys.getswitchinterval()
    with pytest.raises(KeyError), switch_interval(0.042):
        assert sys.getswitchinterval() == pytest.approx(0.042)
        raise KeyError("inside")
    assert sys.getswitchinterval() == before
    with switch_interval(None):  # null leaves the interpreter's own
        assert sys.getswitchinterval() == before
