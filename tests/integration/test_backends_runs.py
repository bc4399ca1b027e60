"""Whole `run.py` evaluations through the openai backend: real llama.cpp server, faults, kill and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _servers import REPO, fault_server, llama_server, stats
from memharness.eval.metrics.registry import untimed
from memharness.eval.record.scores import memory_flag

pytestmark = pytest.mark.slow
SECRET = "sk-memharness-test-0123456789abcdef"


def run_cmd(
    url: str, out: Path, cache: Path, *overrides: str, memory: str = "full_context"
) -> list[str]:
    return [
        sys.executable,
        "run.py",
        "llm=openai",
        f"llm.backend.base_url={url}",
        f"memory={memory}",
        "dataset=sample",
        f"hydra.run.dir={out}",
        f"cache.path={cache}",
        "progress=false",
        *overrides,
    ]


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MEMHARNESS_TEST_KEY": SECRET}


def run(cmd: list[str], log: Path) -> dict:
    with open(log, "wb") as f:
        proc = subprocess.run(
            cmd, cwd=REPO, env=env(), stdout=f, stderr=subprocess.STDOUT, timeout=600
        )
    assert proc.returncode == 0, log.read_text()[-3000:]
    return json.loads((Path(cmd[6].split("=", 1)[1]) / "metrics.json").read_text())


def fault_overrides(*extra: str) -> tuple[str, ...]:
    # failures are the point here: the exit status must not depend on how many (eval.max_failed_fraction)
    return (
        "llm.backend.model=fault-model",
        "llm.backend.api_key_env=MEMHARNESS_TEST_KEY",
        "llm.backend.structured=guided_choice",
        "llm.backend.timeout_s=1",
        "eval.max_failed_fraction=1",
        *extra,
    )


def test_run_against_fault_server_loses_nothing_and_counts_match(tmp_path):
    """MemTree (LLM aggregations while building) and the embedder both behind a faulty server:
    every sample is kept, and failures, embedding retries and degraded-memory flags add up to
    what the server itself counted."""
    faults = dict(
        rate_429=0.1,
        rate_500=0.1,
        rate_hang=0.05,
        rate_malformed=0.05,
        hang_s=3,
        seed=1,
        embed_rate_500=0.3,
        embed_transient=1,
    )
    with fault_server(tmp_path, **faults) as url:
        metrics = run(
            run_cmd(
                url,
                tmp_path / "run",
                tmp_path / "c.sqlite",
                *fault_overrides(
                    "llm.retry.max_retries=0",
                    "eval.judge.calibration_max=0",
                    "eval.judge_audit.lenient=false",
                    "memory.base_threshold=0.0",
                    "embedder=openai",
                    f"embedder.backend.base_url={url}",
                    "embedder.backend.model=fault-embed",
                    "embedder.backend.api_key_env=MEMHARNESS_TEST_KEY",
                    "embedder.backend.base_delay_s=0.01",
                ),
                memory="memtree",
            ),
            tmp_path / "run.log",
        )
        injected = stats(url)
    counts = metrics["counts"]
    samples = [
        json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    ]
    memory_stats = json.loads((tmp_path / "run" / "memory_stats.json").read_text())
    assert len(samples) == counts["questions"] == metrics["data"]["questions"] > 0
    assert all(s["status"] in ("scored", "answer_failed", "retrieve_failed") for s in samples)
    assert (
        counts["scored"] + counts["answer_failed"] + counts["retrieve_failed"]
        == counts["questions"]
    )
    # max_retries=0: each injected chat fault fails exactly one call: an aggregation, an answer or a verdict
    aggregation_failed = sum(
        ep["degradation"].get("aggregation_failed", 0) for ep in memory_stats.values()
    )
    assert injected["injected_total"] > 0 and aggregation_failed > 0
    assert (
        aggregation_failed + counts["answer_failed"] + counts["judge_failed"]
        == injected["injected_total"]
    )
    calls = metrics["calls"]["total"]
    assert calls["failures"] == injected["injected_total"] and calls["retries"] == 0
    assert calls["calls"] == injected["chat_ok"]
    # embedding faults recover after one attempt: each one retried once, none failed, all counted
    assert injected["injected_embed"] > 0 and calls["embed_retries"] == injected["injected_embed"]
    assert calls["embed_failures"] == 0 and calls["embed_calls"] == injected["embed_ok"]
    # degraded-memory flags: every question is asked after its episode's inserts
    degraded_episodes = {ep for ep, st in memory_stats.items() if st["degradation"]}
    assert {s["episode_id"] for s in samples if memory_flag(s, "degraded")} == degraded_episodes
    assert counts["degraded"] == sum(s["episode_id"] in degraded_episodes for s in samples) > 0
    # the key went to the server but nowhere into the run folder
    assert injected["auth_seen"] > 0
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="ignore"), path
    assert SECRET not in (tmp_path / "run.log").read_text()


def _wait_for(url: str, n: int, proc: subprocess.Popen, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while stats(url)["chat_requests"] < n:
        assert proc.poll() is None and time.monotonic() < deadline, (
            "run ended before it could be killed"
        )
        time.sleep(0.05)


def _cached_chats(cache: Path) -> int:
    import sqlite3

    with sqlite3.connect(cache) as conn:
        return conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0]


def test_sigkill_then_rerun_resumes_without_repeating_work(tmp_path):
    opts = fault_overrides("llm.max_in_flight=2", "llm.retry.max_retries=0")
    with fault_server(tmp_path, latency_ms=300, rate_500=0.15, seed=4) as url:
        reference = run(
            run_cmd(url, tmp_path / "ref", tmp_path / "ref.sqlite", *opts), tmp_path / "ref.log"
        )
        total = stats(url)["chat_requests"]
    with fault_server(tmp_path, latency_ms=300, rate_500=0.15, seed=4) as url:
        cmd = run_cmd(url, tmp_path / "resumed", tmp_path / "c.sqlite", *opts)
        with open(tmp_path / "killed.log", "wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=REPO,
                env=env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            _wait_for(url, 6, proc)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        time.sleep(0.5)  # let requests in flight at the kill reach the server's counters
        before = stats(url)["chat_requests"]
        cached = _cached_chats(tmp_path / "c.sqlite")
        assert 0 < cached and before < total
        resumed = run(cmd, tmp_path / "resumed.log")
        rerun_requests = stats(url)["chat_requests"] - before
    # only what the killed run had not finished (or had failed: failures are not cached) is asked again
    assert rerun_requests == total - cached
    assert resumed["counts"] == reference["counts"]
    assert untimed(resumed["metrics"]) == untimed(reference["metrics"])
    assert resumed["calls"]["total"]["cache_hits"] == cached


def test_openai_backend_against_real_llama_cpp_server(tmp_path):
    from memharness.memsys.services.backends.openai_compat import OpenAIBackend
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.services.retry import RetryPolicy
    from memharness.memsys.services.types import ChatRequest

    with llama_server(tmp_path) as url:
        backend = OpenAIBackend(
            model="smollm2", base_url=url, api_key_env=None, structured="grammar"
        )
        llm = LLM(backend, max_in_flight=2, progress=False, retry=RetryPolicy(max_retries=1))
        judge, free = llm.complete(
            [
                ChatRequest.user(
                    "Is Paris in France? Reply 1 for yes, 0 for no.",
                    max_tokens=2,
                    choices=("0", "1"),
                ),
                ChatRequest.user("Name a colour.", max_tokens=8),
            ]
        )
        assert judge.ok and judge.text in ("0", "1")
        assert (
            free.ok
            and free.text.strip()
            and free.prompt_tokens > 5
            and 0 < free.completion_tokens <= 8
        )
        backend.close()
        metrics = run(
            run_cmd(
                url,
                tmp_path / "run",
                tmp_path / "c.sqlite",
                "llm.backend.model=smollm2",
                "llm.backend.api_key_env=null",
                "llm.backend.structured=grammar",
                "llm.max_in_flight=1",
                "dataset.limit=2",
                "dataset.budget_tokens=200",
                "llm.backend.timeout_s=300",
            ),
            tmp_path / "run.log",
        )
    counts = metrics["counts"]
    assert counts["questions"] == 2 and counts["scored"] == 2 and counts["judge_failed"] == 0
    assert (
        metrics["calls"]["answer"]["calls"] == 2
        and metrics["calls"]["answer"]["completion_tokens"] > 0
    )
    assert metrics["llm"].startswith("openai:smollm2@")
