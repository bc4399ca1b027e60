"""Backend efficiency, each figure a ratio measured in one run (``make bench``).

(a) concurrency efficiency: 256 answer+judge calls, 32 in flight, against the fault
    server adding 200 ms per call; ideal time / achieved time (target >= 0.9).
(b) warm-cache rerun of the same calls: backend calls (target 0) and wall time as a
    fraction of the cold run (target <= 0.05); also for a whole sample run.
(c) harness overhead of the sample run with the embedded models: wall time when no
    backend call is in flight and no backend is loading its weights, as a fraction of the
    run's wall time (target <= 0.05); the fraction with model loading is printed too.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memharness.eval.bench import REPO, print_figures
from memharness.memsys.services.backends.openai_compat import OpenAIBackend
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import TimedBackend
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer

LATENCY_S, CALLS, IN_FLIGHT = 0.2, 256, 32


def _workload() -> tuple[list[ChatRequest], list[ChatRequest]]:
    answers = [
        ChatRequest.user(f"Question {i}: what did speaker {i % 7} say?", max_tokens=32)
        for i in range(CALLS // 2)
    ]
    judges = [
        ChatRequest.user(f"Does answer {i} match? Reply 1 or 0.", max_tokens=1, choices=("0", "1"))
        for i in range(CALLS // 2)
    ]
    return answers, judges


def _timed_batches(llm: LLM) -> float:
    answers, judges = _workload()
    start = time.perf_counter()
    with llm.meter.stage("answer"):
        llm.complete(answers)
    with llm.meter.stage("judge"):
        llm.complete(judges)
    return time.perf_counter() - start


class _ServerProcess:
    """The fault server in its own process, as a real server would be (no shared GIL)."""

    def __init__(self, latency_ms: float) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memharness.memsys.testing.fault_server",
                "--port",
                str(port),
                "--latency-ms",
                str(latency_ms),
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not self._ready():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.proc.kill()
                raise RuntimeError("fault server did not start")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            self.stats()
            return True
        except OSError:
            return False

    def stats(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(self.url.replace("/v1", "/stats"), timeout=2) as resp:
            return json.loads(resp.read())

    def __enter__(self) -> _ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def bench_llm_calls(tmp: Path) -> dict[str, Any]:
    """(a) and (b) on the 256-call workload through the LLM facade."""
    with _ServerProcess(latency_ms=LATENCY_S * 1000) as srv:

        def make_llm() -> LLM:
            backend = OpenAIBackend(
                model="bench", base_url=srv.url, api_key_env=None, structured="guided_choice"
            )
            return LLM(
                backend,
                meter=Meter(),
                cache=CallCache(tmp / "calls.sqlite"),
                max_in_flight=IN_FLIGHT,
                progress=False,
                retry=RetryPolicy(max_retries=0),
            )

        cold_llm = make_llm()
        cold_s = _timed_batches(cold_llm)
        cold_llm.close()
        before = srv.stats()["chat_requests"]
        warm_llm = make_llm()
        warm_s = _timed_batches(warm_llm)
        warm_llm.close()
        warm_calls = srv.stats()["chat_requests"] - before
    ideal_s = CALLS * LATENCY_S / IN_FLIGHT
    return {
        "concurrency_efficiency": ideal_s / cold_s,
        "ideal_s": ideal_s,
        "cold_s": cold_s,
        "warm_backend_calls": warm_calls,
        "warm_wall_fraction": warm_s / cold_s,
        "warm_s": warm_s,
    }


class _Intervals:
    """Start/end times of every backend call, to measure time with nothing in flight."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.startup_s = 0.0  # time spent constructing backends (loading weights)
        self.lock = threading.Lock()

    def add(self, start: float, end: float) -> None:
        with self.lock:
            self.spans.append((start, end))

    def busy_s(self) -> float:
        total, end = 0.0, float("-inf")
        for s, e in sorted(self.spans):
            if e > end:
                total += e - max(s, end)
                end = e
        return total


@contextlib.contextmanager
def _record_backends(spans: _Intervals) -> Iterator[None]:
    from memharness.memsys.services import factory

    original = factory._instantiate_backend

    def instantiate_and_time(section: Any, group: str) -> TimedBackend:
        start = (
            time.perf_counter()
        )  # loading model weights is the backend's start-up, not harness work
        backend = original(section, group)
        spans.startup_s += time.perf_counter() - start
        return TimedBackend(backend, spans.add)

    factory._instantiate_backend = instantiate_and_time
    try:
        yield
    finally:
        factory._instantiate_backend = original


def _sample_run(
    tmp: Path, name: str, overrides: list[str]
) -> tuple[dict[str, Any], float, float, float]:
    """One runner.run on the bundled sample: (metrics, wall s, backend-busy s, backend start-up s)."""
    from hydra import compose, initialize_config_dir
    from memharness.eval.run.runner import run

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                f"cache.path={tmp / 'run-cache.sqlite'}",
                f"data_dir={tmp / 'data'}",
                "progress=false",
                *overrides,
            ],
        )
    spans = _Intervals()
    with _record_backends(spans):
        start = time.perf_counter()
        metrics = run(cfg, tmp / name)
        wall = time.perf_counter() - start
    return metrics, wall, spans.busy_s(), spans.startup_s


def bench_sample_runs(tmp: Path) -> dict[str, Any]:
    """(b) for a whole sample run through the openai backend, and (c) with the embedded models."""
    out: dict[str, Any] = {}
    with FaultServer(FaultConfig(latency_ms=LATENCY_S * 1000)) as srv:
        http = [
            "llm=openai",
            f"llm.backend.base_url={srv.url}",
            "llm.backend.api_key_env=null",
            "llm.backend.model=bench",
            "llm.backend.structured=guided_choice",
            "embedder=openai",
            f"embedder.backend.base_url={srv.url}",
            "embedder.backend.api_key_env=null",
        ]
        _, cold_s, _, _ = _sample_run(tmp, "http-cold", http)
        before = srv.stats()["chat_requests"]
        warm, warm_s, _, _ = _sample_run(tmp, "http-warm", http)
        out.update(
            run_warm_backend_calls=srv.stats()["chat_requests"] - before,
            run_warm_wall_fraction=warm_s / cold_s,
            run_cold_s=cold_s,
            run_warm_s=warm_s,
        )
    # The tiny embedded model: (c) measures the harness around the backend, not the model's speed.
    metrics, wall, busy, startup = _sample_run(tmp, "local", ["llm=local_tiny"])
    out.update(
        harness_overhead_fraction=(wall - busy - startup) / wall,
        harness_overhead_fraction_with_model_loading=(wall - busy) / wall,
        local_run_s=wall,
        local_backend_busy_s=busy,
        local_model_loading_s=startup,
        local_questions=metrics["counts"]["questions"],
    )
    return out


def main() -> dict[str, Any]:
    """Measure and print every figure; returns them as a dict."""
    with tempfile.TemporaryDirectory(prefix="memharness-bench-") as tmp:
        figures = {**bench_llm_calls(Path(tmp)), **bench_sample_runs(Path(tmp))}
    targets = {
        "concurrency_efficiency": ">= 0.9",
        "warm_backend_calls": "== 0",
        "warm_wall_fraction": "<= 0.05",
        "run_warm_backend_calls": "== 0",
        "run_warm_wall_fraction": "<= 0.05",
        "harness_overhead_fraction": "<= 0.05",
    }
    print_figures(figures, targets, 28)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
